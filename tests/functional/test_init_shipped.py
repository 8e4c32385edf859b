"""kit init on every shipped config's smoke data (its competition's public layout, written by the config's smoke
maker) with a description.md beside it that names the metric as a Kaggle evaluation page does (no --metric):
the draft builds as `make kernel` builds a config, and agrees with the shipped config on what decides the run:
the template, the metric, the layout, the files, the id, target and group columns, how a row names its image,
the text, array and sequence columns. Where they agree, the shipped config's own smoke run (make
kaggle-smoke, the e2e tests) already shows the submission the draft's run writes, so none is trained here.

A new shipped config is covered as it lands; one that kit init cannot reproduce goes in DIFFERENT with why."""
from pathlib import Path

import pytest

from kit import config, smoke
from kit.build import bundle, init
from kit.data import archives, layouts, tables
from kit.spec import Spec

DIFFERENT: dict[str, str] = {  # shipped config -> why kit init's draft differs from it
    "mlsp-2013-birds": "its labels are ragged lines in essential_data/ (rec_labels_test_hidden.txt, label_lists), its "
                       "clips named by a table (clip_table) and its sample melted (Id = rec_id*100 + species): kit init "
                       "finds no template for that layout",
    "freesound-audio-tagging-2019": "its labels are comma lists in one column (label_separator) and its noisy set a "
                                    "second table (extra_train): kit init drafts neither, so its draft's data step "
                                    "refuses 'Applause,Chirp_and_tweet' as a class",
    "champs-scalar-coupling": "its rows join structures.csv (join_table, join_keys, join_on) and its metric scores each "
                              "coupling type apart (group_log_mae, which kit init reads as mae): kit init drafts "
                              "neither a join nor score_groups",
    "osic-pulmonary-fibrosis-progression": "its test rows are made from the sample's Patient_Week ids against each "
                                           "patient's first visit (id_parts, baseline_key): kit init drafts neither",
    "google-research-identify-contrails-reduce-global-warming": "kit init finds no images in folders of band arrays "
    "and drafts a tabular config, which its data step refuses: it does not draft [data] bands, band_frame, nor a mask "
    "file inside each record's folder",
    "uw-madison-gi-tract-image-segmentation": "kit init does not find slices under <case>/<case>_<day>/scans/ by "
    "their ids and drafts a tabular config, which its data step refuses (empty codes): it does not draft [data] "
    "slices, class_column or the case it groups folds by",
    "predict-volcanic-eruptions-ingv-oe": "its rows' features are read from a series file each (train_series, "
                                          "test_series: train/<segment_id>.csv) and it has no test table: kit init "
                                          "drafts no series folders, so its draft has no features to learn from",
    "text-normalization-challenge-english-language": "its rows are tokens whose answers are generated texts (the seq2seq "
                                                     "template, its sentence and token columns): kit init drafts no "
                                                     "seq2seq config",
    "text-normalization-challenge-russian-language": "its rows are tokens whose answers are generated texts (the seq2seq "
                                                     "template, its sentence and token columns): kit init drafts no "
                                                     "seq2seq config",
    "tensorflow2-question-answering": "its pages are Natural Questions' JSONL (a page a line, answers as token ranges in "
                                      "annotations) and its sample two rows a page (_long, _short): kit init drafts no "
                                      "spans config from them, nor reads nq_micro_f1 in a description",
    "hms-harmful-brain-activity-classification": "its recordings are parquet files read as an EEG montage (image_ext "
                                                 ".parquet), its training rows windows of a recording and its sample's "
                                                 "ids repeated: kit init finds no sound files and drafts a tabular config",
    "vesuvius-challenge-ink-detection": "kit init finds no images in fragment folders of surface_volume/NN.tif layers "
    "and no template for them: it does not draft [data] layers, nor inklabels.png inside each fragment's folder",
    "predict-volcanic-eruptions-cnn": "the audio template reading the segments' CSVs as channels (image_ext .csv) is "
                                      "the alternative to the shipped tabular config of the same files, which is what "
                                      "kit init drafts (train_series)",
    "billion-word-imputation": "its training file is sentences one a line (no table), its test a table of sentences a "
                               "word short and it has no sample submission: kit init drafts no imputation config",
    "siim-covid19-detection": "kit init drafts detection where the DICOMs sit in one folder, not under siim's "
                              "study/series folders by their <image>_image ids, and drafts no study_table",
    "kuzushiji-recognition": "its sample's cells are `U+XXXX x y` points and its labels `U+XXXX x y w h` strings: "
                             "kit init reads them as space-separated labels and drafts a cnn config with f1_micro, "
                             "not detection with centre_f1",
}
FILES = ("train", "test", "sample_submission", "train_images", "test_images")
COLUMNS = ("id_column", "group_column", "sequence_column", "order_column", "task", "array_columns", "identity_columns",
           "submission_columns", "train_masks", "mask_ext", "score_mask", "answer_start_column")
SETS = ("text_columns", "step_columns")  # the same columns in any order
# how a Kaggle evaluation page names each shipped metric (in our words): the description.md MLE-bench writes beside
# the data, from which kit init reads the metric
EVALUATION = {
    "accuracy": "Submissions are scored on their accuracy: the share of test rows whose predicted class is right.",
    "auc": "Submissions are evaluated on the area under the ROC curve between the predicted probability and the truth.",
    "auc_micro": "Submissions are judged on area under the ROC curve.",  # mlsp-2013-birds' words: the pooled AUC unsaid
    "lwlrap": "The task is evaluated with label-weighted label-ranking average precision (lwlrap).",
    "group_log_mae": "Submissions are evaluated on the Log of the Mean Absolute Error, calculated for each scalar "
                     "coupling type, and then averaged across types.",
    "laplace": "Submissions are evaluated using a modified version of the Laplace Log Likelihood.",
    "bias_auc": "A new metric weighs overall performance against unintended bias: subgroup AUCs beside the overall one.",
    "dice": "The score is the mean Dice coefficient of the predicted and the true masks.",
    "jaccard": "Submissions are scored on the word-level Jaccard score of the predicted and the true selected text.",
    "dice_hausdorff": "This competition is evaluated on the mean Dice coefficient and 3D Hausdorff distance.",
    "global_dice": "This competition is evaluated on the global Dice coefficient over all the test pixels.",
    "f05": "We evaluate using a modified version of the Sørensen-Dice coefficient, where instead of using the F1 score, "
           "we are using the F0.5 score.",
    "f1_micro": "Submissions are scored on the micro-averaged F1 score of the predicted labels.",
    "f2_samples": "Submissions are scored on the mean F2 score of each row's predicted labels.",
    "log_loss": "Submissions are evaluated with the multi-class logarithmic loss of the predicted probabilities.",
    "macro_f1": "The score is the macro F1 score: the F1 of each class, averaged over the classes.",
    "mae": "Submissions are scored on the mean absolute error between the predicted and the actual values.",
    "map@5": "Submissions are evaluated on the Mean Average Precision @ 5 (MAP@5) of the five labels given a row.",
    "map_iou": "The score is the mean average precision at different intersection over union (IoU) thresholds.",
    "pearson": "Submissions are evaluated on the Pearson correlation coefficient between the predicted and actual scores.",
    "qwk": "Submissions are scored on the quadratic weighted kappa between the predicted and the actual scores.",
    "rmse": "Submissions are scored on the root mean squared error.",
    "rmsle": "The score is the root mean squared logarithmic error of the predictions.",
    "spearman": "Submissions are evaluated on the mean column-wise Spearman's rank correlation of the predictions.",
    "weighted_auc": "Submissions are evaluated on a weighted AUC: some regions of the ROC curve weigh more than others.",
    "nq_micro_f1": "Submissions are evaluated using micro F1 between the predicted and expected answers.",
    "kl_div": "Submissions are evaluated on the Kullback Liebler divergence between the predicted probability and the "
              "observed target.",
    "coco_map40": "The challenge uses the standard PASCAL VOC 2010 mean Average Precision (mAP) at IoU > 0.4.",
    "voc_map50": "The challenge uses the standard PASCAL VOC 2010 mean Average Precision (mAP) at IoU > 0.5.",
    "centre_f1": "Submissions are evaluated on a modified version of the F1 Score. To score a true positive, you must "
                 "provide center point coordinates that are within the ground truth bounding box and a matching label.",
    "levenshtein": "Submissions are evaluated on the mean Levenshtein distance between the sentences you submit and the "
                   "original sentences in the test set.",
}
FAMILY = {"lstm": "sequence", "transformer": "sequence"}  # which sequence model is a choice, not a reading of the data


def quiet(line: str) -> None:
    pass


def differences(shipped: Spec, drafted: Spec, data_dir: Path, scratch: Path) -> list[str]:
    """What the draft says otherwise than the shipped config, in the keys that decide the run."""
    out = []

    def differ(key: str, a, b) -> None:
        if a != b:
            out.append(f"{key}: shipped {a!r}, drafted {b!r}")

    differ("template", FAMILY.get(shipped.template, shipped.template), FAMILY.get(drafted.template, drafted.template))
    for key in COLUMNS:
        differ(key, getattr(shipped, key), getattr(drafted, key))
    for key in SETS:
        differ(key, sorted(getattr(shipped, key)), sorted(getattr(drafted, key)))
    images = shipped.template in ("cnn", "audio")  # sounds are found and labelled as images are
    if shipped.template == "segmentation":  # the masks' files and the images' are found by it
        differ("image_ext", shipped.image_ext, drafted.image_ext)
    if images:
        differ("layout", shipped.layout, drafted.layout)
    for key in FILES:  # train.csv and train.csv.zip, train/ and train.zip serve alike: compare what each finds
        a, b = getattr(shipped, key), getattr(drafted, key)
        unused = images and ((key == "train" and shipped.layout in ("folders", "names"))
                             or (key.endswith("_images") and shipped.layout in ("pixels", "arrays")))
        if not unused and (a or b):
            differ(key, archives.locate(data_dir, a) if a else None, archives.locate(data_dir, b) if b else None)
    if not _several_held(shipped, data_dir, scratch):  # else the sample's columns are the targets: target_column unused
        differ("target_column", shipped.target_column, drafted.target_column)
    if images and shipped.layout in ("files", "coco"):
        differ("training image paths", _train_path(shipped), _train_path(drafted))
        differ("test image paths", _test_path(shipped), _test_path(drafted))
    if images and shipped.layout in ("folders", "names"):  # class_folders, label_pattern, image_ext: the same labels
        a, b = _labels(shipped, data_dir), _labels(drafted, data_dir)
        if a != b:
            odd = sorted(set(a) ^ set(b))
            out.append(f"training labels: {len(odd)} of the files are labelled otherwise or only by one, such as {odd[0]}")
    return out


def _train_path(spec: Spec) -> str:
    return spec.image_path or ("" if spec.layout == "coco" else f"{{{spec.id_column}}}{spec.image_ext}")


def _test_path(spec: Spec) -> str:
    return spec.test_image_path or _train_path(spec)


def _labels(spec: Spec, data_dir: Path) -> list[tuple[str, str]]:
    table, _ = layouts.training_table(spec, data_dir, log=quiet)
    return sorted(zip(table[spec.id_column].astype(str), table[spec.target_column].astype(str)))


def _several_held(spec: Spec, data_dir: Path, scratch: Path) -> bool:
    """The sample has several target columns and the training table holds each (one-hot, multi-label, values)."""
    if (spec.template in ("cnn", "audio") and spec.layout != "files") or not spec.train:
        return False
    sample = tables.read_table(archives.find_file(data_dir, spec.sample_submission, "sample", scratch, quiet))
    train = tables.read_table(archives.find_file(data_dir, spec.train, "train", scratch, quiet))
    targets = [c for c in sample.columns if c != spec.id_column and not str(c).startswith("Unnamed: ")]
    return len(targets) > 1 and all(c in train.columns for c in targets)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=DIFFERENT[n]))
                                  if n in DIFFERENT else n for n in config.shipped()])
def test_init_drafts_the_shipped_config_from_its_smoke_data(name, tmp_path, kaggle_user, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    shipped = config.load(name)
    data_dir = tmp_path / "input" / shipped.spec.slug
    smoke.make_dataset(shipped.spec, data_dir, 0)
    (data_dir / "description.md").write_text(f"# {shipped.spec.slug}\n\n## Evaluation\n\n{EVALUATION[shipped.spec.metric]}\n")
    text = init.draft(data_dir)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    built = bundle.build(str(path), tmp_path / "kernels" / name)  # make kernel on the draft
    assert built.notebook.is_file()
    drafted = config.load(str(path))
    assert drafted.spec.slug == shipped.spec.slug and drafted.spec.metric == shipped.spec.metric
    found = differences(shipped.spec, drafted.spec, data_dir, tmp_path / "scratch")
    assert not found, f"{name}: " + "; ".join(found) + f"\n{text}"
