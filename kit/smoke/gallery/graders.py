"""The checks each gallery competition's grader (MLE-bench's grade.py) makes on a submission before it scores
it, written anew: a submission that fails one is what the grader calls invalid (or crashes on, which it also
counts as invalid). The submission and the sample submission are read as the grader reads CSVs (pandas'
defaults); the sample stands for the answers, whose ids and row count it shares.

Beside the graders' own checks, four that leave a submission valid but worthless: a constant column under
google-quest's Spearman (the score is NaN), rows out of the sample's order under stanford-covid-vaccine (its
grader aligns its `keep` mask by row label), grades that are not whole numbers under aptos2019's kappa, and label
columns out of the answers' order under jigsaw-toxic-comment-classification-challenge (its grader scores the
columns by position). The checks several graders share (and the CSV reader) are in
kit.smoke.gallery.grader_checks, importable from here as well; this module holds each competition's own and the
registry by slug, CHECKS."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke.gallery.grader_checks import (
    Check,
    Invalid,
    accuracy,
    auroc,
    bounded_values,
    class_probabilities,
    column_aucs,
    has_columns,
    in_unit_range,  # noqa: F401 (re-exported: the shared checks are importable from here)
    label_sets,
    numeric,
    probability,
    read,
    require,
    same_id_set,
    same_length,
    sorted_ids_equal,
    top_k,
    whole_grades,
    whole_labels,
)

WINNERS = ["winner_model_a", "winner_model_b", "winner_tie"]


def lmsys(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    has_columns(sub, "id", *WINNERS)
    same_length(sub, sample)
    require(bool(((sub[WINNERS] >= 0) & (sub[WINNERS] <= 1)).all().all()), "a winner column holds values outside [0, 1]")
    require(bool(sub[WINNERS].sum(axis=1).round(6).eq(1).all()), "a row's three probabilities do not sum to 1")
    sorted_ids_equal(sub, sample, "id")


def google_quest(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    targets = [c for c in sample.columns if c != "qa_id"]
    has_columns(sub, "qa_id", *targets)
    require(len(sub.columns) == len(targets) + 1, f"{len(sub.columns) - 1} target columns, not {len(targets)}")
    same_length(sub, sample)
    constant = [c for c in targets if sub[c].nunique() < 2]
    if constant:
        raise Invalid(f"column {constant[0]} is constant: its Spearman correlation, and so the score, is NaN")


def jigsaw(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    has_columns(sub, "id")
    require("prediction" in sub.columns or "toxicity" in sub.columns, "no column prediction")
    sorted_ids_equal(sub, sample, "id")
    numeric(sub, "prediction" if "prediction" in sub.columns else "toxicity")


def alaska2(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    same_length(sub, sample)
    has_columns(sub, "Id", "Label")
    sorted_ids_equal(sub, sample, "Id")
    try:
        labels = sub["Label"].astype(float)
    except ValueError:
        raise Invalid("Label holds values that are not numbers") from None
    require(not labels.isna().any(), "Label is empty in some rows")


STANFORD = ["id_seqpos", "reactivity", "deg_Mg_pH10", "deg_Mg_50C", "deg_pH10", "deg_50C"]


def stanford_covid(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    same_length(sub, sample)
    has_columns(sub, *STANFORD)
    a, b = (np.sort(frame["id_seqpos"].astype(str).to_numpy()) for frame in (sub, sample))
    require(bool((a == b).all()), "its id_seqpos values are not the answers'")
    require(sub["id_seqpos"].astype(str).tolist() == sample["id_seqpos"].astype(str).tolist(),
            "rows out of the sample's order: the grader's keep mask would fall on the wrong rows")
    for column in STANFORD[1:]:
        require(bool(np.isfinite(numeric(sub, column)).all()), f"{column} is empty or infinite in some rows")


TOXIC = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


def jigsaw_toxic(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """The id and the six labels, the length, the id set (its keep mask indexes the submission by id), and no other
    column (it scores the submission's every column against the six). Beside the grader: the labels in the
    answers' order, else each is scored against another label's truth."""
    has_columns(sub, "id", *TOXIC)
    require(len(sub.columns) == len(TOXIC) + 1, f"{len(sub.columns) - 1} columns beside id, not the 6 labels")
    same_length(sub, sample)
    same_id_set(sub, sample, "id")
    require([c for c in sub.columns if c != "id"] == TOXIC, f"labels in another order than {', '.join(TOXIC)}")
    for column in TOXIC:
        require(bool(np.isfinite(numeric(sub, column)).all()), f"{column} is empty or infinite in some rows")


AUTHORS = ["EAP", "HPL", "MWS"]


def spooky(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Exactly id and the three authors, id first (it sums each row's columns after the first), each row's
    probabilities in [0, 1] summing to 1 within 1e-6, and the sorted ids."""
    require(sub.shape == (len(sample), len(AUTHORS) + 1), f"shape {sub.shape}, not ({len(sample)}, 4)")
    has_columns(sub, "id", *AUTHORS)
    require(sub.columns[0] == "id", f"first column {sub.columns[0]!r}: the grader sums the columns after the first")
    values = sub[AUTHORS]
    require(bool(((values >= 0) & (values <= 1)).all().all()), "an author column holds values outside [0, 1]")
    require(bool(np.isclose(values.sum(axis=1), 1, atol=1e-6).all()), "a row's three probabilities do not sum to 1")
    sorted_ids_equal(sub, sample, "id")


def patents(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """The length, id and score, the sorted ids, and numbers (pearsonr fails on text). A constant score passes, as the
    sample's zeros do, and scores NaN: the smoke's out-of-fold check is what refuses a constant prediction."""
    same_length(sub, sample)
    has_columns(sub, "id", "score")
    sorted_ids_equal(sub, sample, "id")
    numeric(sub, "score")


def tweet_sentiment(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its two columns, the length, the sorted textIDs; an empty span is read as NaN and scored as empty text, and a
    cell that is no text (a number) is scored by its string, so neither is refused."""
    has_columns(sub, "textID", "selected_text")
    same_length(sub, sample)
    sorted_ids_equal(sub, sample, "textID")


def normalization(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its length, id and after, and the same ids in sorted order (it sorts both by id and refuses any that differ);
    every after is read as a string (astype(str)), so none is refused, though an empty one reads as "nan"."""
    same_length(sub, sample)
    has_columns(sub, "id", "after")
    sorted_ids_equal(sub, sample, "id")
    require(not sub["after"].isna().any(), "an empty after: the grader reads it as NaN, then as the text 'nan'")


RANZCR = ["ETT - Abnormal", "ETT - Borderline", "ETT - Normal", "NGT - Abnormal", "NGT - Borderline",
          "NGT - Incompletely Imaged", "NGT - Normal", "CVC - Abnormal", "CVC - Borderline"]


def ranzcr(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its nine scored labels, the length, then each label as an AUROC column (numbers in [0, 1], sorted ids)."""
    has_columns(sub, *RANZCR)
    same_length(sub, sample)
    for column in RANZCR:
        auroc("StudyInstanceUID", column)(sub, sample)


def freesound(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """freesound-audio-tagging-2019's prepare_for_metric: the length, `fname` first, then exactly the 80 classes of
    vocabulary.py in order (the sample's), the fnames equal once sorted, every class column numeric."""
    same_length(sub, sample)
    require(len(sub.columns) > 0 and sub.columns[0] == "fname", "Submission must have an 'fname' column")
    require(list(sub.columns[1:]) == list(sample.columns[1:]), "Submission classes do not match expected classes")
    sorted_ids_equal(sub, sample, "fname")
    for column in sub.columns[1:]:
        numeric(sub, column)


CHECKS: dict[str, Check] = {
    "aerial-cactus-identification": auroc("id", "has_cactus"),
    "dogs-vs-cats-redux-kernels-edition": probability("id", "label"),
    "detecting-insults-in-social-commentary": auroc("Comment", "Insult"),
    "random-acts-of-pizza": auroc("request_id", "requester_received_pizza"),
    "imet-2020-fgvc7": label_sets("id", "attribute_ids"),
    "plant-pathology-2021-fgvc8": label_sets("image", "labels"),
    "iwildcam-2019-fgvc6": whole_labels("Id", "Category"),
    "iwildcam-2020-fgvc7": accuracy("Id", "Category"),
    "inaturalist-2019-fgvc6": whole_labels("id", "predicted", first_token=True),
    "herbarium-2020-fgvc7": whole_labels("Id", "Predicted"),
    "herbarium-2021-fgvc8": whole_labels("Id", "Predicted"),
    "herbarium-2022-fgvc9": whole_labels("Id", "Predicted"),
    "whale-categorization-playground": top_k("Image", "Id", exact_columns=True),
    "hotel-id-2021-fgvc8": top_k("image", "hotel_id"),
    "lmsys-chatbot-arena": lmsys,
    "google-quest-challenge": google_quest,
    "jigsaw-unintended-bias-in-toxicity-classification": jigsaw,
    "alaska2-image-steganalysis": alaska2,
    "statoil-iceberg-classifier-challenge": probability("id", "is_iceberg"),
    "seti-breakthrough-listen": auroc("id", "target"),
    "stanford-covid-vaccine": stanford_covid,
    "invasive-species-monitoring": auroc("name", "invasive"),
    "movie-review-sentiment-analysis-kernels-only": accuracy("PhraseId", "Sentiment"),
    "aptos2019-blindness-detection": whole_grades("id_code", "diagnosis"),
    "histopathologic-cancer-detection": auroc("id", "label"),
    "leaf-classification": class_probabilities("id"),
    "plant-pathology-2020-fgvc7": column_aucs("image_id"),
    "cassava-leaf-disease-classification": accuracy("image_id", "label"),
    "petfinder-pawpularity-score": bounded_values("Id", "Pawpularity", 1, 100),
    "jigsaw-toxic-comment-classification-challenge": jigsaw_toxic,
    "spooky-author-identification": spooky,
    "us-patent-phrase-to-phrase-matching": patents,
    "ranzcr-clip-catheter-line-classification": ranzcr,
    "siim-isic-melanoma-classification": auroc("image_name", "target"),
    "tweet-sentiment-extraction": tweet_sentiment,
    "the-icml-2013-whale-challenge-right-whale-redux": auroc("clip", "probability"),
    "tensorflow-speech-recognition-challenge": accuracy("fname", "label"),
    "mlsp-2013-birds": auroc("Id", "Probability"),
    "freesound-audio-tagging-2019": freesound,
    "text-normalization-challenge-english-language": normalization,
    "text-normalization-challenge-russian-language": normalization,
}


def check(slug: str, submission: Path, sample: Path) -> None:
    """An Invalid naming the competition and what its grader refuses, if `submission` fails its checks."""
    sub, answers = read(submission), read(sample)
    try:
        CHECKS[slug](sub, answers)
    except Invalid as e:
        raise Invalid(f"{submission}: {slug}'s grader would refuse it: {e}") from None


def champs(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """champs' prepare_for_grading: the constant's and the id column, the id set (it merges on id). Beside the
    grader: numbers (its MAE of text crashes) and finite ones (NaN makes a type's log-MAE NaN)."""
    has_columns(sub, "scalar_coupling_constant", "id")
    same_id_set(sub, sample, "id")
    require(bool(np.isfinite(numeric(sub, "scalar_coupling_constant")).all()), "scalar_coupling_constant holds NaN or inf")


def osic(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """osic's prepare_for_metric: Patient_Week, FVC and Confidence, every Patient_Week one of the answers', FVC and
    Confidence numeric (NaN confidences it reads as 0, floored to 70). Beside the grader: every answer's row
    present (the grader scores only the rows it finds, and a missing one drops out of its mean)."""
    has_columns(sub, "Patient_Week", "FVC", "Confidence")
    unknown = set(sub["Patient_Week"]) - set(sample["Patient_Week"])
    require(not unknown, f"Patient_Week {sorted(unknown)[:1]} is not in the answers")
    for column in ("FVC", "Confidence"):
        require(pd.api.types.is_numeric_dtype(sub[column]), f"{column} is not numeric")
    same_id_set(sub, sample, "Patient_Week")


CHECKS["champs-scalar-coupling"] = champs
CHECKS["osic-pulmonary-fibrosis-progression"] = osic
def chaii(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """The length, PredictionString and id, the sorted ids; each cell is lower-cased and split as text, so a column
    pandas reads as numbers (every answer a year) fails the grader's `.lower()`. An empty cell is read as NaN and
    scored as empty text."""
    same_length(sub, sample)
    has_columns(sub, "PredictionString", "id")
    sorted_ids_equal(sub, sample, "id")
    cells = sub["PredictionString"]
    require(not pd.api.types.is_numeric_dtype(cells) or bool(cells.isna().all()),
            "its PredictionString column reads as numbers, which the grader cannot lower-case")


CHECKS["chaii-hindi-and-tamil-question-answering"] = chaii
def mlebench_rle(code, height: int, width: int) -> None:
    """mlebench.competitions.utils.rle_decode's asserts: text, starts sorted, starts and lengths positive, no run
    overlapping another, none past the image's last pixel (its slice would stop there; a later reshape fails)."""
    require(isinstance(code, str), f"run-length code {code!r} is not text (a blank cell reads as NaN)")
    if not code.strip():
        return
    try:
        values = [int(v) for v in code.split()]
    except ValueError:
        raise Invalid(f"run-length code '{code[:40]}' is not whole numbers") from None
    starts, lengths = values[0::2], values[1::2]
    require(len(starts) == len(lengths), f"run-length code '{code[:40]}' has an odd count of numbers")
    require(starts == sorted(starts), f"run-length code '{code[:40]}' has starts out of order")
    require(all(v > 0 for v in values), f"run-length code '{code[:40]}' has a start or length below 1")
    ends = [s - 1 + n for s, n in zip(starts, lengths)]
    require(all(e <= s - 1 for e, s in zip(ends, starts[1:])), f"run-length code '{code[:40]}' has overlapping runs")
    require(not ends or ends[-1] <= height * width, f"run-length code '{code[:40]}' runs past a {height} x {width} image")


def contrails(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: record_id and encoded_pixels, the length, the sorted ids, then "-" read as no mask and each
    code decoded at its record's height and width (the answers', here the sample's)."""
    has_columns(sub, "record_id", "encoded_pixels")
    same_length(sub, sample)
    sub, sample = sub.sort_values("record_id"), sample.sort_values("record_id")
    sorted_ids_equal(sub, sample, "record_id")
    for code, h, w in zip(sub["encoded_pixels"].replace("-", ""), sample["height"], sample["width"]):
        mlebench_rle(code, int(h), int(w))


CHECKS["google-research-identify-contrails-reduce-global-warming"] = contrails


def uw_madison(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: id, class and predicted; a blank code read as no mask; then every row's code decoded at its
    image's size (the answers hold it; each code here within 36 x 40, the gallery's slices), rows lined up with
    the answers' by position (it never sorts them: the sample's order)."""
    has_columns(sub, "id", "class", "predicted")
    same_length(sub, sample)
    require(bool((sub["id"].astype(str).to_numpy() == sample["id"].astype(str).to_numpy()).all()
                 and (sub["class"].astype(str).to_numpy() == sample["class"].astype(str).to_numpy()).all()),
            "its rows are not the answers' (id, class) in their order: the grader pairs them by position")
    for code in sub["predicted"].astype(object).fillna(""):
        mlebench_rle(code, 36, 40)


CHECKS["uw-madison-gi-tract-image-segmentation"] = uw_madison


def volcano(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """volcano's prepare_for_grading: time_to_eruption and segment_id, the segment_id set (it merges on segment_id, so
    a repeated id would count twice). Beside the grader: unique ids, and finite numbers (its MAE of text or NaN
    crashes)."""
    has_columns(sub, "time_to_eruption", "segment_id")
    same_id_set(sub, sample, "segment_id")
    require(not sub["segment_id"].duplicated().any(), "a segment_id repeats (the grader's merge counts it twice)")
    require(bool(np.isfinite(numeric(sub, "time_to_eruption")).all()), "time_to_eruption holds NaN or inf")


CHECKS["predict-volcanic-eruptions-ingv-oe"] = volcano


def tf2qa(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """grade.py's prepare_for_metric: twice as many rows as pages, example_id and PredictionString, the same ids
    each once; every cell (blank read as NaN, then "") "start:end" with integers, YES, NO or blank."""
    same_length(sub, sample)
    has_columns(sub, "example_id", "PredictionString")
    require(set(sub["example_id"].astype(str)) == set(sample["example_id"].astype(str)),
            "its example_ids are not the sample's")
    require(sub["example_id"].nunique() == len(sub), "its example_ids are not unique")
    for cell in sub["PredictionString"]:
        pred = "" if pd.isna(cell) else str(cell).strip()
        ok = pred in ("YES", "NO", "") or (len(pred.split(":")) == 2 and all(p.strip().lstrip("-").isdigit()
                                                                             for p in pred.split(":")))
        require(ok, f"PredictionString {cell!r} is not start:end, YES, NO or blank")


CHECKS["tensorflow2-question-answering"] = tf2qa
def hms(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """hms' prepare_for_metric: eeg_id and the six vote columns, as many rows as the answers, each row's probabilities
    summing to 1 (rounded to 5 places), the eeg_id set; the rows are sorted by eeg_id and paired by position (a
    recording's rows alike). Beside the grader: finite probabilities in [0, 1] (its log of a NaN is a NaN score)."""
    votes = ["seizure_vote", "lpd_vote", "gpd_vote", "lrda_vote", "grda_vote", "other_vote"]
    has_columns(sub, "eeg_id", *votes)
    same_length(sub, sample)
    require(bool(sub[votes].sum(axis=1).apply(lambda x: round(x, 5) == 1).all()), "a row's probabilities do not add to 1")
    same_id_set(sub, sample, "eeg_id")
    values = np.stack([numeric(sub, c).to_numpy(np.float64) for c in votes], axis=1)
    require(bool(np.isfinite(values).all() and (values >= 0).all() and (values <= 1).all()),
            "a probability is NaN or outside [0, 1]")


CHECKS["hms-harmful-brain-activity-classification"] = hms
def vinbigdata(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: image_id and PredictionString, the image_id set (every test image); each string split on single
    spaces into floats (a blank cell reads as NaN, which has no split; a double space is an empty float), six a box,
    the class an integer id (int(pred[0])). Beside the grader: every image once (a repeated row scores its boxes
    twice), and finite numbers."""
    has_columns(sub, "image_id", "PredictionString")
    same_id_set(sub, sample, "image_id")
    require(not sub["image_id"].duplicated().any(), "an image_id is repeated")
    for image_id, text in zip(sub["image_id"], sub["PredictionString"]):
        require(isinstance(text, str), f"{image_id}: PredictionString {text!r} is not text (a blank cell reads as NaN)")
        try:
            values = np.array(list(map(float, text.split(" "))))
        except ValueError:
            raise Invalid(f"{image_id}: PredictionString {text[:40]!r} is not numbers split by single spaces") from None
        require(len(values) % 6 == 0, f"{image_id}: {len(values)} numbers, not six a box")
        require(bool(np.isfinite(values).all()), f"{image_id}: PredictionString holds NaN or inf")
        classes = values[0::6]
        require(bool((classes == np.round(classes)).all()), f"{image_id}: a class id that is not whole")


CHECKS["vinbigdata-chest-xray-abnormalities-detection"] = vinbigdata
def hubmap(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: id and predicted, the length, the id set; a blank code read as no mask; each code decoded at its
    slide's size (the answers' height_pixels and width_pixels; each within 400 x 512 here, the gallery's slides)."""
    has_columns(sub, "id", "predicted")
    same_length(sub, sample)
    same_id_set(sub, sample, "id")
    for code in sub["predicted"].astype(object).fillna(""):
        mlebench_rle(code, 400, 512)


CHECKS["hubmap-kidney-segmentation"] = hubmap


def vesuvius(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: the length, then row by row in order the Id the answers', exactly Id and Predicted, and a code
    that is text (a blank cell reads as NaN, which it refuses: an empty mask cannot be written blank) and decodes on
    the fragment's transpose (within 144 x 136 here, the gallery's test fragment)."""
    same_length(sub, sample)
    require(list(sub.columns) == ["Id", "Predicted"] or set(sub.columns) == {"Id", "Predicted"},
            f"its columns are {', '.join(map(str, sub.columns))}, not Id and Predicted")
    require(bool((sub["Id"].astype(str).to_numpy() == sample["Id"].astype(str).to_numpy()).all()),
            "its Ids are not the answers' in their order (the grader pairs rows by position)")
    for code in sub["Predicted"]:
        require(isinstance(code, str), f"Predicted {code!r} is not text (a blank cell reads as NaN)")
        mlebench_rle(code, 136, 144)


CHECKS["vesuvius-challenge-ink-detection"] = vesuvius


# siim-covid19-detection's and kuzushiji-recognition's checks (kit.smoke.gallery.box_checks) join CHECKS (and their
# makers, in kit.smoke.gallery.detections, MAKERS) with their shipped configs: test_gallery holds the three lists equal.
from kit.smoke.gallery.box_checks import kuzushiji, siim_covid  # noqa: E402, F401

CHECKS["siim-covid19-detection"] = siim_covid
CHECKS["kuzushiji-recognition"] = kuzushiji

# billion-word-imputation's (kit.smoke.gallery.sentences, beside its maker)
from kit.smoke.gallery.sentences import check as billion_word  # noqa: E402

CHECKS["billion-word-imputation"] = billion_word
