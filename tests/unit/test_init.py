"""kit init: the config drafted from tiny folders in the public layouts of real competitions (tests/layouts.py),
each guess with its comment, what the files cannot say on a "cannot tell" line, and bad inputs in one line each."""
import shutil
import tomllib
import zipfile

import layouts
import pandas as pd
import pytest

from kit import cli, config
from kit.build import init, mask_guesses, metric_guess
from kit.data import masks
from kit.errors import KitError
from kit.smoke import gallery
from kit.smoke import segmentation as smoke_segmentation
from kit.smoke.packing import write_zip

# competition folder -> (template, the [data] keys init must guess as so)
EXPECTED = {
    "aerial_cactus": ("cnn", {"layout": "files", "train": "train.csv", "id_column": "id", "target_column": "has_cactus",
                              "train_images": "train", "test_images": "test", "image_ext": ""}),
    "dogs_vs_cats": ("cnn", {"layout": "names", "id_column": "id", "target_column": "label", "train_images": "train",
                             "test_images": "test", "image_ext": ".jpg", "label_pattern": r"^(cat|dog)\."}),
    "imet": ("cnn", {"layout": "files", "train": "train.csv", "id_column": "id", "target_column": "attribute_ids",
                     "image_ext": ".png"}),
    "whale": ("cnn", {"train": "train.csv", "id_column": "Image", "target_column": "Id", "image_ext": ""}),
    "hotel_id": ("cnn", {"id_column": "image", "target_column": "hotel_id", "train_images": "train_images",
                         "test_images": "test_images", "image_path": "{chain}/{image}", "test_image_path": "{image}"}),
    "iwildcam_2019": ("cnn", {"layout": "files", "train": "train.csv", "id_column": "Id", "target_column": "category_id",
                              "train_images": "train_images", "test_images": "test_images", "image_path": "{file_name}",
                              "test_image_path": "{Id}.jpg"}),
    "seti": ("cnn", {"train": "train_labels.csv", "train_images": "train", "test_images": "test",
                     "image_path": "{id[0]}/{id}.npy"}),
    "alaska2": ("cnn", {"layout": "folders", "id_column": "Id", "target_column": "Label", "train_images": "",
                        "test_images": "Test", "image_ext": "",
                        "class_folders": ["Cover=0", "JMiPOD=1", "JUNIWARD=1", "UERD=1"]}),
    "invasive": ("cnn", {"train": "train_labels.csv", "sample_submission": "sample_submission.csv", "id_column": "name",
                         "target_column": "invasive", "train_images": "train", "test_images": "test", "image_ext": ".jpg"}),
    "statoil": ("cnn", {"layout": "arrays", "train": "train.json", "test": "test.json",
                        "sample_submission": "sample_submission.csv", "id_column": "id", "target_column": "is_iceberg",
                        "array_columns": ["band_1", "band_2"]}),
    "inaturalist": ("cnn", {"layout": "coco", "train": "train2019.json", "test": "test2019.json", "id_column": "id",
                            "target_column": "predicted", "train_images": "train_val2019", "test_images": "test2019"}),
    "herbarium_2020": ("cnn", {"layout": "coco", "train": "nybg2020/train/metadata.json",
                               "test": "nybg2020/test/metadata.json", "id_column": "Id", "train_images": "nybg2020/train",
                               "test_images": "nybg2020/test"}),
    "iwildcam_2020": ("cnn", {"layout": "coco", "train": "iwildcam2020_train_annotations.json",
                              "test": "iwildcam2020_test_information.json", "train_images": "train", "test_images": "test"}),
    "insults": ("text", {"train": "train.csv", "test": "test.csv", "sample_submission": "sample_submission_null.csv",
                         "id_column": "", "target_column": "Insult", "text_columns": ["Comment"],
                         "submission_columns": ["Insult"]}),
    "pizza": ("text", {"train": "train.json", "test": "test.json", "id_column": "request_id",
                       "target_column": "requester_received_pizza",
                       "text_columns": ["request_title", "request_text_edit_aware"]}),
    "movie_review": ("text", {"train": "train.tsv", "test": "test.tsv", "id_column": "PhraseId", "target_column": "Sentiment",
                              "text_columns": ["Phrase"]}),
    "lmsys": ("text", {"id_column": "id", "text_columns": ["prompt", "response_a", "response_b"]}),
    "jigsaw": ("text", {"id_column": "id", "target_column": "target", "text_columns": ["comment_text"]}),
    "stanford_covid": ("lstm", {"train": "train.json", "test": "test.json", "id_column": "id_seqpos", "sequence_column": "id",
                                "order_column": "seqpos", "features": ["seqpos"], "task": "per_step",
                                "categorical": ["sequence", "structure", "predicted_loop_type"],
                                "step_columns": ["sequence", "structure", "predicted_loop_type", "reactivity", "deg_Mg_pH10",
                                                 "deg_pH10", "deg_Mg_50C", "deg_50C"]}),
    "hubmap": ("segmentation", {"train": "train.csv", "id_column": "id", "target_column": "encoding", "train_images": "train",
                                "test_images": "test", "image_ext": ".tiff"}),
    "carvana": ("segmentation", {"train": "train_masks.csv", "id_column": "img", "target_column": "rle_mask",
                                 "train_images": "train", "test_images": "test", "image_ext": ""}),
    "mask_files": ("segmentation", {"train": "", "id_column": "id", "target_column": "rle_mask", "train_images": "train",
                                    "train_masks": "train_masks", "mask_ext": "_mask.gif", "test_images": "test",
                                    "image_ext": ".jpg"}),
}


def drafted(tmp_path, name, **kwargs) -> tuple[str, dict]:
    folder = getattr(layouts, name)(tmp_path / "input" / name.replace("_", "-"))
    text = init.draft(folder, **kwargs)
    return text, tomllib.loads(text)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_layout_is_read_as_the_competition_ships_it(tmp_path, name):
    template, expected = EXPECTED[name]
    text, raw = drafted(tmp_path, name)
    assert raw["competition"]["template"] == template
    assert raw["competition"]["slug"] == name.replace("_", "-")
    assert {k: raw["data"].get(k) for k in expected} == expected
    data = text.split("[data]")[1].split("[kernel]")[0]
    for line in data.splitlines():  # every guess says what it was read from
        assert not line or line.startswith("# cannot tell: ") or " # guessed: " in line, line
    config.parse(raw, tmp_path / "x.toml")  # loads as make kernel loads it


@pytest.mark.parametrize("name, metric", [("aerial_cactus", "auc"), ("whale", "map@5"), ("imet", "f1_micro"),
                                          ("lmsys", "log_loss"), ("stanford_covid", "rmse"), ("movie_review", "accuracy"),
                                          ("hubmap", "dice")])
def test_the_metric_is_guessed_from_the_target_and_says_what_else_it_may_be(tmp_path, name, metric):
    text, raw = drafted(tmp_path, name)
    assert raw["competition"]["metric"] == metric
    assert f"# cannot tell: the metric from the data alone: {metric} fits" in text and "pass --metric" in text


def test_a_given_metric_and_template_are_taken_as_they_are(tmp_path):
    text, raw = drafted(tmp_path, "lmsys", metric="auc", template="text")
    assert raw["competition"]["metric"] == "auc" and "given (--metric)" in text and "given (--template)" in text
    assert "cannot tell: the metric" not in text
    _, raw = drafted(tmp_path / "t", "stanford_covid", template="transformer")
    assert raw["competition"]["template"] == "transformer" and raw["smoke"]["nhead"] == 4


def test_the_metric_is_read_from_the_description_where_there_is_one(tmp_path):
    folder = layouts.aerial_cactus(tmp_path / "aerial-cactus-identification")
    (folder / "description.md").write_text("# Overview\n\n## Evaluation\n\nSubmissions are evaluated on area under the ROC "
                                           "curve between the predicted probability and the observed target.\n")
    text = init.draft(folder)
    assert 'metric = "auc"' in text and 'description.md says "area under the roc"' in text
    (folder / "description.md").write_text("## Evaluation\nSubmissions are evaluated according to the Mean Average "
                                           "Precision @ 5 (MAP@5).")
    assert tomllib.loads(init.draft(folder))["competition"]["metric"] == "map@5"


def test_a_description_metric_the_template_cannot_score_falls_back_to_the_data(tmp_path):
    """"intersection over union" in a text competition, or TGS's F2 over IoU thresholds in a mask one: the mask
    metrics score masks only, and masks only them; the draft reads the metric from the data instead, and says so."""
    text, raw = drafted(tmp_path, "insults")
    folder = tmp_path / "input" / "insults"
    (folder / "description.md").write_text("## Evaluation\nScored on the intersection over union of the words.")
    text = init.draft(folder)
    assert tomllib.loads(text)["competition"]["metric"] == raw["competition"]["metric"] != "iou"
    assert "# cannot tell: description.md says \"intersection over union\", but metric iou scores masks" in text
    _, raw = drafted(tmp_path / "m", "mask_files")
    folder = tmp_path / "m" / "input" / "mask-files"
    (folder / "description.md").write_text("## Evaluation\nThis competition is evaluated on the F2 Score at different "
                                           "intersection over union (IoU) thresholds.")
    text = init.draft(folder)
    assert tomllib.loads(text)["competition"]["metric"] == raw["competition"]["metric"] == "dice"
    assert "but metric f2_samples does not score masks" in text


@pytest.mark.parametrize("evaluation, metric", [
    ("Essays evaluate learning.\n\n## Evaluation\n\nSubmissions are scored on the quadratic weighted kappa.", "qwk"),
    ("## Evaluation\nSubmissions will be evaluated based on their micro averaged\xa0[F1 score](https://x).", "f1_micro"),
    ("## Evaluation\nThe evaluation metric for this competition is [Mean F1-Score](https://x).", "f1_micro"),
    ("## Evaluation\nWe use top-1 classification error as the metric for this competition.", "accuracy"),
    ("## Evaluation\nSubmissions are scored using MCRMSE, mean columnwise root mean squared error:", "rmse"),
    ("## Evaluation\nThe metric is the Root Mean Squared Logarithmic Error.", "rmsle"),
    ("## Evaluation\nSubmissions are evaluated on the weighted AUC. Each region of the ROC curve ...", "weighted_auc"),
    ("## Evaluation\nSubmissions are evaluated with multi-class logarithmic loss.", "log_loss"),
    ("## Evaluation\nSubmissions are evaluated according to the Mean Average Precision @ 5 (MAP@5).", "map@5"),
    ("## Evaluation\nThis competition is evaluated on the mean average precision at different intersection over union "
     "(IoU) thresholds.", "map_iou"),
    ("## Evaluation\nThis competition is evaluated on the mean Dice coefficient.", "dice"),
    ("## Evaluation\nThis competition is evaluated on the **global** [Dice coefficient](https://x).", "global_dice"),
    ("## Evaluation\nWe evaluate ... a modified version of the [Sørensen--Dice coefficient](https://en.wikipedia.org/x), "
     "where instead of using the F1 score, we are using the F0.5 score.", "f05"),
    ("## Evaluation\nThis competition is evaluated on the mean Dice coefficient and 3D Hausdorff distance.",
     "dice_hausdorff"),
    ("## Evaluation\nSubmissions are scored on the intersection over union of the predicted and true masks.", "iou"),
    ("## Evaluation\nThe metric in this competition is the [word-level Jaccard score](https://x).", "jaccard"),
    # freesound's: its "average precision" must not read as another metric's
    ("## Evaluation\nThe task is evaluated based on the label-weighted label-ranking average precision (lwlrap).",
     "lwlrap"),
    # hms' (its misspelling kept), before its "predicted probability" reads as another metric
    ("### Evaluation\nSubmissions are evaluated on the [Kullback Liebler divergence](https://x) between the predicted "
     "probability and the observed target.", "kl_div"),
    ("## Overview\nNothing about how it is scored.", ""),
])
def test_an_evaluation_section_names_its_metric(evaluation, metric):
    assert metric_guess.from_description(evaluation)[0] == metric


@pytest.mark.parametrize("slug, data", [
    ("tweet-sentiment-extraction", {"target_column": "selected_text", "text_columns": ["sentiment", "text"]}),
    ("chaii-hindi-and-tamil-question-answering", {"target_column": "answer_text", "text_columns": ["question", "context"],
                                                  "answer_start_column": "answer_start"}),
])
def test_a_column_of_pieces_of_another_is_drafted_as_spans_with_jaccard(tmp_path, slug, data):
    """A training column the test table lacks whose texts are pieces of each row's text (the tweet's selected_text,
    the article's answer) is a span to find, given the other column both tables hold (the sentiment, the question;
    not chaii's two-valued language); a number column holding each answer's first character is its start."""
    folder = gallery.write(slug, tmp_path / slug)
    (folder / "description.md").unlink()  # the metric from the data alone
    raw = tomllib.loads(init.draft(folder))
    assert (raw["competition"]["template"], raw["competition"]["metric"]) == ("spans", "jaccard")
    assert {k: raw["data"].get(k) for k in data} == data and raw["data"]["id_column"] == ("textID" if "tweet" in slug
                                                                                          else "id")


def test_micro_f1_of_one_label_a_row_is_accuracy(tmp_path):
    folder = layouts.alaska2(tmp_path / "plant-seedlings-classification")
    (folder / "description.md").write_text("## Evaluation\nSubmissions are evaluated on MeanFScore, micro-averaged F1.")
    text = init.draft(folder)
    assert 'metric = "accuracy"' in text and "of one label a row: accuracy" in text


def test_jigsaws_metric_names_the_identities_it_scores(tmp_path):
    _, raw = drafted(tmp_path, "jigsaw", metric="bias_auc")
    assert raw["data"]["identity_columns"] == ["male", "female", "black"]


def test_what_it_cannot_tell_is_one_line_each(tmp_path):
    text, _ = drafted(tmp_path, "alaska2", metric="weighted_auc")
    assert "# cannot tell: which class folders are which class: Cover is taken as class 0" in text
    folder = tmp_path / "ventilator-pressure-prediction"
    layouts.csv({"id": range(1, 13), "breath_id": [1] * 6 + [2] * 6, "R": [5] * 6 + [20] * 6, "C": 10,
                 "time_step": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] * 2, "u_in": 1.5, "u_out": [0, 1, 0, 1, 0, 1] * 2,
                 "pressure": 5.0}, folder / "train.csv")  # u_out no phase: 0 and 1 by turns (test_init_unseen: one)
    layouts.csv({"id": range(13, 25), "breath_id": [3] * 6 + [4] * 6, "R": 5, "C": 10,
                 "time_step": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] * 2, "u_in": 1.5, "u_out": [0, 1, 0, 1, 0, 1] * 2},
                folder / "test.csv")
    layouts.csv({"id": range(13, 25), "pressure": 0.0}, folder / "sample_submission.csv")
    text = init.draft(folder, metric="mae")
    raw = tomllib.loads(text)["data"]
    assert (raw["sequence_column"], raw["order_column"], raw["task"]) == ("breath_id", "time_step", "per_step")
    assert "# cannot tell: which rows the metric scores" in text and "score_mask" not in raw
    text, _ = drafted(tmp_path / "t", "pizza")
    assert "# cannot tell: which Hugging Face model" in text
    folder = tmp_path / "reviews"  # two columns the test lacks, neither named as a label is, nor as the sample's
    texts = layouts.sentences(8)
    layouts.csv({"id": range(6), "review": texts[:6], "stars": [1, 2, 3, 4, 5, 1], "helpful": 0}, folder / "train.csv")
    layouts.csv({"id": [6, 7], "review": texts[6:]}, folder / "test.csv")
    layouts.csv({"id": [6, 7], "rating": 3}, folder / "sample_submission.csv")
    text = init.draft(folder, metric="rmse")
    assert 'target_column = "stars"' in text
    assert "# cannot tell: which training column holds the target of rating (of stars, helpful): set target_column" in text


def test_the_slug_skips_folders_named_as_mle_bench_names_them(tmp_path):
    folder = layouts.whale(tmp_path / "whale-categorization-playground" / "prepared" / "public")
    raw = tomllib.loads(init.draft(folder))
    assert raw["competition"]["slug"] == "whale-categorization-playground"
    assert 5 <= len(raw["kernel"]["title"]) <= 50


def test_output_is_written_whole_and_never_over_a_config(tmp_path, capsys):
    folder = layouts.dogs_vs_cats(tmp_path / "dogs-vs-cats-redux-kernels-edition")
    out = tmp_path / "configs" / "dogs.toml"
    assert cli.main(["init", str(folder), "--metric", "log_loss", "--output", str(out)]) == 0
    assert config.load(str(out)).spec.label_pattern == r"^(cat|dog)\."
    assert [p.name for p in out.parent.iterdir()] == ["dogs.toml"]
    assert cli.main(["init", str(folder), "--output", str(out)]) == 1
    assert "exists; kit init does not overwrite a config" in capsys.readouterr().err


def bad_zip(tmp_path):
    folder = layouts.aerial_cactus(tmp_path / "aerial-cactus-identification")
    (folder / "test.zip").write_bytes(b"not a zip")
    return [str(folder)]


def no_sample(tmp_path):
    folder = layouts.imet(tmp_path / "imet-2020-fgvc7")
    (folder / "sample_submission.csv").unlink()
    return [str(folder)]


def empty_sample(tmp_path):
    folder = layouts.imet(tmp_path / "imet-2020-fgvc7")
    (folder / "sample_submission.csv").write_text("")
    return [str(folder)]


def empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    return [str(tmp_path / "empty")]


@pytest.mark.parametrize("arguments, said", [
    (lambda p: [str(p / "nowhere")], "no such folder; give kit init the competition's data folder"),
    (empty_folder, "the folder is empty"),
    (no_sample, "no sample submission (a table named like sample_submission.csv)"),
    (empty_sample, "sample_submission.csv: cannot read it as a table"),
    (bad_zip, "test.zip: not a zip archive"),
    (lambda p: [str(layouts.whale(p / "w")), "--metric", "map@k"], "--metric 'map@k' is not a metric kit knows"),
    (lambda p: [str(layouts.whale(p / "w")), "--template", "gbm"], "unknown template 'gbm' (known: cnn"),
    (lambda p: [str(layouts.whale(p / "w")), "--template", "text"], "found no a test table with free-text columns"),
    (lambda p: [str(layouts.whale(p / "w")), "--metric", "bias_auc"], "metric bias_auc needs the training table's identity"),
    (lambda p: [str(layouts.whale(p / "w")), "--metric", "iou"],
     "--metric iou: metric iou scores masks, which only the segmentation template predicts, and the draft's template is cnn"),
    (lambda p: [str(layouts.hubmap(p / "h")), "--metric", "auc"], "--metric auc: metric auc does not score masks"),
])
def test_bad_inputs_are_one_line(tmp_path, capsys, arguments, said):
    assert cli.main(["init", *arguments(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and said in err, err


def test_a_table_of_numbers_is_drafted_for_the_tabular_template(tmp_path):
    """spaceship-titanic's kind (no images, texts or sequences): the tabular template, its id and target."""
    raw = tomllib.loads(init.draft(layouts.tables_only(tmp_path / "t")))
    assert raw["competition"]["template"] == "tabular"
    assert (raw["data"]["id_column"], raw["data"]["target_column"]) == ("PassengerId", "Transported")


def test_archived_tables_and_image_archives_are_named_as_the_kernel_finds_them(tmp_path):
    """The kernel finds train.csv in train.csv.zip and train/ in train.zip: the draft names what serves both."""
    folder = layouts.movie_review(tmp_path / "movie-review-sentiment-analysis-kernels-only")
    raw = tomllib.loads(init.draft(folder))
    assert (raw["data"]["train"], raw["data"]["test"]) == ("train.tsv", "test.tsv")
    with zipfile.ZipFile(folder / "train.tsv.zip") as z:
        assert z.namelist() == ["train.tsv"]


def test_image_zips_made_on_macos_are_read_as_their_images(tmp_path):
    """macOS's Archive Utility adds __MACOSX/<folder>/._<name> for each file: its images are the folder's alone, and
    they sit in the archive's own folder (train.zip holding train/...), as the kernel finds them."""
    folder = tmp_path / "input" / "some-photos"
    train, test = [f"{k}.jpg" for k in range(1, 11)], [f"{k}.jpg" for k in range(11, 15)]
    layouts.csv({"name": [n[:-4] for n in train], "invasive": [k % 2 for k in range(10)]}, folder / "train_labels.csv")
    layouts.csv({"name": [n[:-4] for n in test], "invasive": 0.5}, folder / "sample_submission.csv")
    for split, names in (("train", train), ("test", test)):
        with zipfile.ZipFile(folder / f"{split}.zip", "w") as z:
            for name in names:
                z.writestr(f"{split}/{name}", b"jpg")
                z.writestr(f"__MACOSX/{split}/._{name}", b"\x00\x05\x16\x07")
    raw = tomllib.loads(init.draft(folder))
    assert raw["competition"]["template"] == "cnn"
    assert {k: raw["data"][k] for k in ("train_images", "test_images", "image_ext")} == {
        "train_images": "train", "test_images": "test", "image_ext": ".jpg"}


def test_a_label_pattern_is_a_literal_string(tmp_path):
    assert init.toml(r"^(cat|dog)\.") == r"'^(cat|dog)\.'"
    assert init.toml("it's") == '"it\'s"' and init.toml(["a", 1, True]) == '["a", 1, true]'
    with pytest.raises(KitError, match="exists"):
        out = tmp_path / "x.toml"
        out.write_text("")
        init.write("text", out)


def test_codes_in_the_sample_are_not_enough_for_masks(tmp_path):
    """"0 1" reads as a run-length code, and as two labels best first: without masks for the training images
    (codes in a table, or mask files) the folder is read as an image classification."""
    folder = layouts.imet(tmp_path / "imet-2020-fgvc7")
    layouts.csv({"id": layouts.hexes(4, 16, 1), "attribute_ids": "0 1"}, folder / "sample_submission.csv")
    raw = tomllib.loads(init.draft(folder))
    assert raw["competition"]["template"] == "cnn" and raw["data"]["target_column"] == "attribute_ids"


def test_a_segmentation_draft_installs_smp_and_says_which_folder_it_took_for_masks(tmp_path):
    text, raw = drafted(tmp_path, "mask_files")
    assert raw["kernel"]["packages"] == ["segmentation-models-pytorch==0.6.0"]
    assert (raw["params"]["model_name"], raw["params"]["encoder"]) == ("Unet", "tu-resnet34")
    assert "cannot tell: which of" not in text  # the masks carry a suffix the images lack
    assert "# cannot tell: the codes' pixel order: kit counts down each column" in text  # it writes codes
    text, _ = drafted(tmp_path / "h", "hubmap")
    assert "set rle_order = \"row\" where the competition counts along each row (Carvana)" in text
    folder = tmp_path / "input" / "mask-files"
    for mask in (folder / "train_masks").iterdir():  # masks named as their images, in a folder named for neither
        mask.rename(mask.with_name(mask.name.replace("_mask.gif", ".jpg")))
    (folder / "train_masks").rename(folder / "train2")
    text = init.draft(folder)
    raw = tomllib.loads(text)["data"]
    assert (raw["train_images"], raw["train_masks"]) == ("train", "train2") and "mask_ext" not in raw
    assert "# cannot tell: which of train/ and train2/ holds the masks (their files share names): train2/ is taken" in text


def test_a_resized_copy_of_labelled_images_is_not_read_as_their_masks(tmp_path):
    """train/ and train_256/ share names, as images and masks can: with a table of labels for the images and a
    blank sample, that is an image classification, not masks (nor is it certain enough to draft as one)."""
    folder = tmp_path / "resized-copies"
    train, test = layouts.hexes(6, 10), layouts.hexes(2, 10, 1)
    for i in train:
        layouts.touch(folder / "train" / f"{i}.jpg")
        layouts.touch(folder / "train_256" / f"{i}.jpg")
    for i in test:
        layouts.touch(folder / "test" / f"{i}.jpg")
    layouts.csv({"id": train, "label": ["a", "b"] * 3}, folder / "train.csv")
    layouts.csv({"id": test, "label": None}, folder / "sample_submission.csv")
    raw = tomllib.loads(init.draft(folder))
    assert raw["competition"]["template"] == "cnn" and raw["data"]["target_column"] == "label"
    folder = layouts.mask_files(tmp_path / "masks-and-depths")  # masks named as their images, and a table of depths
    for mask in (folder / "train_masks").iterdir():
        mask.rename(mask.with_name(mask.name.replace("_mask.gif", ".jpg")))
    (folder / "train_masks").rename(folder / "train2")
    sample = layouts.pd.read_csv(folder / "sample_submission.csv")
    layouts.csv({"id": sample["id"], "z": [500, 600]}, folder / "depths.csv")
    assert tomllib.loads(init.draft(folder))["competition"]["template"] == "segmentation"


def test_folders_are_walked_for_masks_only_where_the_sample_may_ask_for_masks(tmp_path, monkeypatch):
    """A sample of labels or probabilities asks for no masks: the folders' sub-folders (contrails' 20,000 record
    folders, a class folder each) are not listed again to look for images and masks."""
    walked = []
    monkeypatch.setattr(mask_guesses, "_flat_folders", lambda survey: walked.append(survey) or [])
    for name in ("dogs_vs_cats", "alaska2", "insults"):
        drafted(tmp_path / name, name)
    assert not walked
    drafted(tmp_path / "h", "hubmap")  # codes in the sample: worth a look
    assert len(walked) == 1


def test_tgs_as_kaggle_zips_it_reads_the_folders_inside_the_archives(tmp_path):
    """Kaggle's own TGS files: train.zip holding images/ and masks/, test.zip holding images/. The draft names the
    folders inside them as kit finds them (train/images in train.zip), and its config reads the data: the masks,
    and the sample's test images."""
    spec = config.load("tgs-salt-identification-challenge").spec
    folder = tmp_path / "tgs-salt-identification-challenge"
    smoke_segmentation.make_dataset(spec, folder, seed=0)
    for split in ("train", "test"):
        write_zip(folder / split, folder / f"{split}.zip")
        shutil.rmtree(folder / split)
    text = init.draft(folder)
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "segmentation"
    drafted_spec = config.parse(raw, folder / "draft.toml").spec
    assert (drafted_spec.train_images, drafted_spec.train_masks, drafted_spec.test_images) == \
        (spec.train_images, spec.train_masks, spec.test_images)
    found = masks.training(drafted_spec, folder, print)
    assert len(found.ids) == len(smoke_segmentation.draw(spec, seed=0).train) and found.masks.paths


def test_a_sample_naming_a_mask_file_per_image_is_segmentation(tmp_path):
    folder = layouts.mask_files(tmp_path / "masks-as-files")
    sample = layouts.pd.read_csv(folder / "sample_submission.csv")
    layouts.csv({"id": sample["id"], "mask": "masks/" + sample["id"] + ".png"}, folder / "sample_submission.csv")
    text = init.draft(folder)
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "segmentation" and "a mask file per test image" in text
    assert (raw["data"]["train_masks"], raw["data"]["target_column"]) == ("train_masks", "mask")


def test_a_box_layout_is_read_as_detection_and_its_sample_labels_choose_the_metric(tmp_path):
    """x, y, w, h a row, class names in the sample (siim-covid19's shape): PASCAL VOC's mAP at 0.5 is guessed; a
    sample of run-length codes of six numbers over a table without boxes is not taken for boxes."""
    from PIL import Image

    from kit.build import box_guesses
    from kit.build.survey import Survey

    for folder, ids in (("train", ["a", "b"]), ("test", ["c", "d"])):
        (tmp_path / folder).mkdir()
        for i in ids:
            Image.new("L", (8, 8)).save(tmp_path / folder / f"{i}.png")
    (tmp_path / "train.csv").write_text("image_id,label,x,y,w,h\na,opacity,1,1,3,3\nb,,,,,\n")
    (tmp_path / "sample_submission.csv").write_text("image_id,PredictionString\nc,none 1 0 0 1 1\nd,none 1 0 0 1 1\n")
    survey = Survey.of(tmp_path, tmp_path / "scratch")
    guess = box_guesses.detection_guess(survey, "sample_submission.csv", ["train.csv"])
    lines = {line.key: line.value for line in guess.data}
    assert guess.template == "detection" and guess.metric[0] == "voc_map50"
    assert lines == {"train": "train.csv", "sample_submission": "sample_submission.csv", "id_column": "image_id",
                     "target_column": "PredictionString", "train_images": "train", "test_images": "test",
                     "image_ext": ".png"}
    assert box_guesses._metric(pd.Series(["14 1 0 0 1 1"]))[0] == "coco_map40"
    (tmp_path / "train.csv").write_text("image_id,EncodedPixels\na,1 3 10 5 20 2\nb,\n")
    (tmp_path / "sample_submission.csv").write_text("image_id,EncodedPixels\nc,1 3 10 5 20 2\nd,1 1\n")
    survey = Survey.of(tmp_path, tmp_path / "scratch2")
    assert box_guesses.detection_guess(survey, "sample_submission.csv", ["train.csv"]) is None
    said = "The challenge uses the standard PASCAL VOC 2010 mean Average Precision (mAP) at IoU > 0.5."
    assert metric_guess.from_description(f"## Evaluation\n\n{said}")[0] == "voc_map50"
