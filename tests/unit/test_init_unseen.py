"""kit init on competitions no shipped config covers (issue 37), each folder built as MLE-bench's prepare.py
writes it (tiny, images of a few bytes): files that are not tables, images beside look-alike folders, an
image folder beside number columns, short texts, and drafts the kernel's own data checks would refuse."""
import re
import tomllib

import layouts
import pandas as pd
import pytest
import unseen

from kit import cli, config
from kit.build import draft_check, init
from kit.build.survey import Survey
from kit.errors import KitError
from kit.pipelines import tabular_checks


def test_a_json_file_that_is_not_a_table_is_skipped_with_a_note(tmp_path):
    """cassava's label map is a mapping of class numbers to names: neither records nor columns. It is left out,
    said so under the heading, and the images are drafted as the competition has them."""
    text = init.draft(unseen.cassava(tmp_path / "cassava-leaf-disease-classification"), metric="accuracy")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "cnn"
    assert {k: raw["data"][k] for k in ("layout", "train", "id_column", "target_column", "train_images", "test_images",
                                        "image_ext")} == {
        "layout": "files", "train": "train.csv", "id_column": "image_id", "target_column": "label",
        "train_images": "train_images", "test_images": "test_images", "image_ext": ""}
    assert "# not read: label_num_to_disease_map.json: neither a list of records nor a mapping of columns" in text


def test_images_in_split_folders_beside_look_alike_folders_are_found(tmp_path):
    """siim-isic: train/ and test/ hold DICOMs, which kit does not read; the JPEGs the ids name are in jpeg/train/
    and jpeg/test/. The draft is the cnn template on those folders (kit's verdict: train_images = "jpeg/train"),
    its folds grouped by patient (the verdict's caveat: "folds are not grouped by patient")."""
    text = init.draft(unseen.siim_isic(tmp_path / "siim-isic-melanoma-classification"), metric="auc")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "cnn", text
    assert {k: raw["data"][k] for k in ("layout", "train", "id_column", "target_column", "train_images", "test_images",
                                        "image_ext")} == {
        "layout": "files", "train": "train.csv", "id_column": "image_name", "target_column": "target",
        "train_images": "jpeg/train", "test_images": "jpeg/test", "image_ext": ".jpg"}
    assert raw["data"]["group_column"] == "patient_id"  # a patient's images stay in one fold: the test's are new


def test_the_image_folder_the_ids_name_is_preferred_over_number_columns(tmp_path):
    """leaf: 192 feature columns are not 8 x 8 pixels of an image; the images the ids name are (kit's verdict:
    the files layout with train_images = test_images = "images"). The draft says which it took, and why."""
    text = init.draft(unseen.leaf(tmp_path / "leaf-classification"), metric="log_loss")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "cnn"
    assert {k: raw["data"].get(k) for k in ("layout", "train", "id_column", "target_column", "train_images", "test_images",
                                            "image_ext")} == {
        "layout": "files", "train": "train.csv", "id_column": "id", "target_column": "species",
        "train_images": "images", "test_images": "images", "image_ext": ".jpg"}
    assert "# cannot tell: whether the model reads the images or the tables' 192 number columns (margin1 ... " \
           "texture64): the images the ids name are taken" in text


def test_a_tabular_draft_drops_the_columns_the_test_table_lacks_and_passes_the_kernels_checks(tmp_path):
    """siim-isic as tables: diagnosis and benign_malignant are the training table's alone; the kernel reads every
    feature in both tables, and stopped at once ("test.csv: no column 'diagnosis' of the training table")."""
    folder = unseen.siim_isic(tmp_path / "siim-isic-melanoma-classification")
    raw = tomllib.loads(init.draft(folder, metric="auc", template="tabular"))
    assert raw["data"]["drop_columns"] == ["diagnosis", "benign_malignant"]
    spec = config.parse(raw, tmp_path / "x.toml").spec
    train, test, sample = (pd.read_csv(folder / n) for n in ("train.csv", "test.csv", "sample_submission.csv"))
    target, _, recipe = tabular_checks.checked(spec, train, test, sample, (folder / "train.csv", folder / "test.csv",
                                                                    folder / "sample_submission.csv"), print)
    assert target.columns == ("target",) and "diagnosis" not in recipe["kinds"] and "age_approx" in recipe["kinds"]


def test_a_draft_the_kernels_data_checks_refuse_is_one_line_not_a_config(tmp_path, capsys):
    """No test table: the tabular template's kernel stops at "[data] test is empty"; kit init says so and writes
    nothing, where it had printed the draft."""
    folder = layouts.tables_only(tmp_path / "spaceship-titanic")
    (folder / "test.csv").unlink()
    out = tmp_path / "draft.toml"
    assert cli.main(["init", str(folder), "--metric", "accuracy", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "would stop at the kernel's data checks (run on the tables' first 10,000 rows): " \
                                    "[data] test is empty" in err, err
    assert not out.exists()


def test_short_texts_are_drafted_as_text(tmp_path):
    """us-patent: anchor, target and context of a word to a few are what the model reads, and nothing else is;
    the text template reads them (kit's verdict: text_columns = ["anchor", "target", "context"])."""
    text = init.draft(unseen.us_patent(tmp_path / "us-patent-phrase-to-phrase-matching"), metric="pearson")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "text", text
    assert {k: raw["data"].get(k) for k in ("train", "test", "id_column", "target_column", "text_columns")} == {
        "train": "train.csv", "test": "test.csv", "id_column": "id", "target_column": "score",
        "text_columns": ["anchor", "target", "context"]}


def test_a_column_named_for_the_rows_groups_is_drafted_as_group_column(tmp_path):
    """iwildcam-2019's test cameras are new, and movie-review's phrases come in sentences: kit's configs keep each
    group in one fold (group_column = "location", "SentenceId"); so does the draft, saying why."""
    text = init.draft(unseen.iwildcam_2019(tmp_path / "iwildcam-2019-fgvc6"), metric="macro_f1")
    assert tomllib.loads(text)["data"]["group_column"] == "location"
    assert "a group stays in one fold; test.csv's are all new" in text
    folder = tmp_path / "movie-review-sentiment-analysis-kernels-only"
    phrases = layouts.sentences(16, words=4)
    layouts.csv({"PhraseId": range(1, 13), "SentenceId": [k // 2 for k in range(12)], "Phrase": phrases[:12],
                 "Sentiment": [k % 5 for k in range(12)]}, folder / "train.tsv", sep="\t")
    layouts.csv({"PhraseId": range(13, 17), "SentenceId": [7, 7, 8, 8], "Phrase": phrases[12:]}, folder / "test.tsv",
                sep="\t")
    layouts.csv({"PhraseId": range(13, 17), "Sentiment": 2}, folder / "sampleSubmission.csv")
    raw = tomllib.loads(init.draft(folder, metric="accuracy"))
    assert (raw["competition"]["template"], raw["data"]["group_column"]) == ("text", "SentenceId")


def test_addresses_are_not_read_as_text(tmp_path):
    """google-quest's url and user pages are long strings of letters, but addresses: kit's config reads the title,
    the body and the answer alone."""
    raw = tomllib.loads(init.draft(unseen.google_quest(tmp_path / "google-quest-challenge"), metric="spearman"))
    assert raw["data"]["text_columns"] == ["question_title", "question_body", "answer"]


def test_ordered_scores_are_guessed_qwk_without_a_description(tmp_path):
    """learning-agency-lab-automated-essay-scoring-2: train.csv essay_id,full_text,score (1 to 6), test.csv
    without score, the sample essay_id,score. Whole numbers on a scale, named a score, are graded by quadratic
    weighted kappa; movie-review's Sentiment 0-4 stays accuracy (test_init)."""
    folder = tmp_path / "learning-agency-lab-automated-essay-scoring-2"
    essays = layouts.sentences(16, words=20)
    ids = layouts.hexes(16, 7, 3)
    layouts.csv({"essay_id": ids[:12], "full_text": essays[:12], "score": [1 + k % 6 for k in range(12)]},
                folder / "train.csv")
    layouts.csv({"essay_id": ids[12:], "full_text": essays[12:]}, folder / "test.csv")
    layouts.csv({"essay_id": ids[12:], "score": 3}, folder / "sample_submission.csv")
    text = init.draft(folder)
    assert tomllib.loads(text)["competition"]["metric"] == "qwk"
    assert "ordered scores: 'score' holds the whole numbers 1 to 6" in text and "and so may accuracy or macro_f1" in text


def test_number_columns_the_kernel_would_not_read_as_pixels_are_one_line(tmp_path, capsys):
    """leaf without its images: 64 margin columns make an 8 x 8 square, but the kernel reads every column but the
    id and the label as pixels (192 of them) and refuses; so does kit init, in the kernel's words."""
    folder = unseen.leaf(tmp_path / "leaf-classification")
    for image in (folder / "images").iterdir():
        image.unlink()
    (folder / "images").rmdir()
    assert cli.main(["init", str(folder), "--metric", "log_loss"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(template cnn) would stop at the kernel's data checks: train.csv: 192 pixel " \
                                    "columns (all but id, species) do not make a square image" in err, err


def test_a_phase_column_is_drafted_as_the_score_mask(tmp_path):
    """ventilator-pressure-prediction: u_out is 0 while air goes in, then 1, in every breath; MLE-bench's grader
    scores the rows where u_out == 0 alone ("the expiratory phase is not scored"), as kit's config does. The draft
    guesses it, and says it is a guess."""
    text = init.draft(unseen.ventilator(tmp_path / "ventilator-pressure-prediction"), metric="mae")
    raw = tomllib.loads(text)["data"]
    assert (raw["sequence_column"], raw["task"], raw["score_mask"]) == ("breath_id", "per_step", "u_out == 0")
    assert "# cannot tell: whether the metric scores only the rows where u_out == 0" in text


@pytest.mark.parametrize("maker, slug, metric, why", [
    # the sample's label is P(dog): MLE-bench grades it by log loss (aerial-cactus' 0/1 has_cactus stays auc: test_init)
    (layouts.dogs_vs_cats, "dogs-vs-cats-redux-kernels-edition", "log_loss",
     "the sample asks for a number a row, the probability of one of the two named classes (cat, dog)"),
    (unseen.herbarium_2021, "herbarium-2021-fgvc8", "macro_f1", "2,500 classes"),  # train/metadata.json's categories
    (unseen.plant_pathology_2021, "plant-pathology-2021-fgvc8", "f1_micro", "rows hold several space-separated labels"),
])
def test_the_metric_without_a_description_follows_the_datas_shape(tmp_path, maker, slug, metric, why):
    """The guesses that went wrong on MLE-bench's folders without description.md: a probability of one of two
    named classes is log loss, thousands of classes macro F1, label sets micro F1 (imet's too); each still says
    it is a guess and what else it may be."""
    text = init.draft(maker(tmp_path / slug))
    assert tomllib.loads(text)["competition"]["metric"] == metric
    assert f"# cannot tell: the metric from the data alone: {metric} fits ({why}" in text and "pass --metric" in text


def _set(text: str, key: str, value: str) -> str:
    """The draft with `key = value` in [data], in place of its own line or added after the first line of [data]."""
    lines = text.splitlines()
    own = [k for k, line in enumerate(lines) if re.match(rf"{key} = ", line)]
    if own:
        lines[own[0]] = f"{key} = {value}"
    else:
        lines.insert(lines.index("[data]") + 1, f"{key} = {value}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("maker, slug, key, value, said", [
    (unseen.cassava, "cassava-leaf-disease-classification", "image_ext", '".png"',
     "the ids already end in their extension: set image_ext"),
    (unseen.siim_isic, "siim-isic-melanoma-classification", "image_path", '"{patient_id}.jpg"', "image_path"),
    (unseen.herbarium_2021, "herbarium-2021-fgvc8", "test_images", '"train"', "test_images"),
    (layouts.alaska2, "alaska2-image-steganalysis", "test_images", '"Tests"', "Tests"),
    (unseen.us_patent, "us-patent-phrase-to-phrase-matching", "text_columns", '["anchor", "target", "context", "score"]',
     "test.csv: no column 'score'"),
    (unseen.ventilator, "ventilator-pressure-prediction", "features", '["R", "C", "time_step", "u_in", "pressure"]',
     "pressure"),
    (layouts.mask_files, "carvana-image-masking-challenge", "mask_ext", '".gif"', "train_masks"),
])
def test_a_draft_the_kernels_data_step_refuses_is_one_line_in_every_template(tmp_path, maker, slug, key, value, said):
    """A draft whose files the kernel's data step would refuse (as kit init might draft it, or a user edit it: an
    image extension or path that finds no file, a text column the test table lacks, a training-only feature, the
    wrong masks' suffix) is refused in one line naming what to set, for every template's reading, not just the
    tables'; the kernel's own checks say it (each pipeline's check_data)."""
    folder = maker(tmp_path / slug)
    metric = {"carvana-image-masking-challenge": "dice", "ventilator-pressure-prediction": "mae"}.get(slug, "")
    text = _set(init.draft(folder, metric=metric), key, value)
    spec = config.parse(tomllib.loads(text), tmp_path / "x.toml").spec
    with pytest.raises(KitError) as refused:
        draft_check.check(spec, Survey.of(folder, tmp_path / "scratch"))
    line = str(refused.value)
    assert "\n" not in line and "would stop at the kernel's data checks: " in line and said in line, line
