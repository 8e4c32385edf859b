"""kit init on competitions no shipped config covers (issue 37), each folder built as MLE-bench's prepare.py
writes it (tiny, images of a few bytes): files that are not tables, images beside look-alike folders, an
image folder beside number columns, short texts, and drafts the kernel's own data checks would refuse."""
import json
import tomllib
from pathlib import Path

import layouts

from kit import cli, config
from kit.build import init
from kit.pipelines import tabular


def cassava(folder: Path) -> Path:
    """cassava-leaf-disease-classification: train.csv image_id (with .jpg),label; train_images/, test_images/,
    train_tfrecords/ and test_tfrecords/, and label_num_to_disease_map.json (class number -> disease name)."""
    train, test = [f"{k}.jpg" for k in layouts.hexes(10, 9)], [f"{k}.jpg" for k in layouts.hexes(4, 9, 1)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            layouts.touch(folder / f"{split}_images" / name)
        layouts.touch(folder / f"{split}_tfrecords" / f"ld_{split}00-{len(names)}.tfrec", b"records")
    layouts.csv({"image_id": train, "label": [k % 5 for k in range(10)]}, folder / "train.csv")
    layouts.csv({"image_id": test, "label": 4}, folder / "sample_submission.csv")
    names = ["Cassava Bacterial Blight (CBB)", "Cassava Brown Streak Disease (CBSD)", "Cassava Green Mottle (CGM)",
             "Cassava Mosaic Disease (CMD)", "Healthy"]
    (folder / "label_num_to_disease_map.json").write_text(json.dumps({str(k): n for k, n in enumerate(names)}))
    return folder


def test_a_json_file_that_is_not_a_table_is_skipped_with_a_note(tmp_path):
    """cassava's label map is a mapping of class numbers to names: neither records nor columns. It is left out,
    said so under the heading, and the images are drafted as the competition has them."""
    text = init.draft(cassava(tmp_path / "cassava-leaf-disease-classification"), metric="accuracy")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "cnn"
    assert {k: raw["data"][k] for k in ("layout", "train", "id_column", "target_column", "train_images", "test_images",
                                        "image_ext")} == {
        "layout": "files", "train": "train.csv", "id_column": "image_id", "target_column": "label",
        "train_images": "train_images", "test_images": "test_images", "image_ext": ""}
    assert "# not read: label_num_to_disease_map.json: neither a list of records nor a mapping of columns" in text


def siim_isic(folder: Path) -> Path:
    """siim-isic-melanoma-classification: train.csv (image_name, patient_id, sex, age_approx,
    anatom_site_general_challenge, diagnosis, benign_malignant, target), test.csv (its first five), the sample
    image_name,target; DICOMs in train/ and test/, the same images as JPEGs in jpeg/train/ and jpeg/test/, and
    tfrecords/."""
    train, test = [f"ISIC_{k:07d}" for k in range(12)], [f"ISIC_{k:07d}" for k in range(100, 104)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            layouts.touch(folder / split / f"{name}.dcm", b"DICM")
            layouts.touch(folder / "jpeg" / split / f"{name}.jpg")
        layouts.touch(folder / "tfrecords" / f"{split}00-{len(names)}.tfrec", b"records")
    meta = {"sex": "male", "age_approx": 45.0, "anatom_site_general_challenge": "torso"}
    layouts.csv({"image_name": train, "patient_id": [f"IP_{k // 2:04d}" for k in range(12)], **meta, "diagnosis": "unknown",
                 "benign_malignant": "benign", "target": [k % 2 for k in range(12)]}, folder / "train.csv")
    layouts.csv({"image_name": test, "patient_id": ["IP_0100", "IP_0100", "IP_0101", "IP_0101"], **meta},
                folder / "test.csv")
    layouts.csv({"image_name": test, "target": 0}, folder / "sample_submission.csv")
    return folder


def test_images_in_split_folders_beside_look_alike_folders_are_found(tmp_path):
    """siim-isic: train/ and test/ hold DICOMs, which kit does not read; the JPEGs the ids name are in jpeg/train/
    and jpeg/test/. The draft is the cnn template on those folders (kit's verdict: train_images = "jpeg/train"),
    its folds grouped by patient (the verdict's caveat: "folds are not grouped by patient")."""
    text = init.draft(siim_isic(tmp_path / "siim-isic-melanoma-classification"), metric="auc")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "cnn", text
    assert {k: raw["data"][k] for k in ("layout", "train", "id_column", "target_column", "train_images", "test_images",
                                        "image_ext")} == {
        "layout": "files", "train": "train.csv", "id_column": "image_name", "target_column": "target",
        "train_images": "jpeg/train", "test_images": "jpeg/test", "image_ext": ".jpg"}
    assert raw["data"]["group_column"] == "patient_id"  # a patient's images stay in one fold: the test's are new


def leaf(folder: Path) -> Path:
    """leaf-classification: train.csv (id, species, margin1-64, shape1-64, texture1-64), test.csv (the same but
    species), the sample id + a probability column per species, and images/<id>.jpg for train and test alike."""
    species = ["Acer_Capillipes", "Acer_Circinatum", "Quercus_Rubra"]
    rng = layouts.np.random.default_rng(0)
    features = {f"{kind}{k}": rng.random(16).round(6) for kind in ("margin", "shape", "texture") for k in range(1, 65)}
    frame = layouts.pd.DataFrame({"id": range(1, 17), "species": [species[k % 3] for k in range(16)], **features})
    layouts.csv(frame.iloc[:12], folder / "train.csv")
    layouts.csv(frame.iloc[12:].drop(columns=["species"]), folder / "test.csv")
    layouts.csv({"id": frame["id"].iloc[12:], **{s: 1 / 3 for s in species}}, folder / "sample_submission.csv")
    for i in frame["id"]:
        layouts.touch(folder / "images" / f"{i}.jpg")
    return folder


def test_the_image_folder_the_ids_name_is_preferred_over_number_columns(tmp_path):
    """leaf: 192 feature columns are not 8 x 8 pixels of an image; the images the ids name are (kit's verdict:
    the files layout with train_images = test_images = "images"). The draft says which it took, and why."""
    text = init.draft(leaf(tmp_path / "leaf-classification"), metric="log_loss")
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
    folder = siim_isic(tmp_path / "siim-isic-melanoma-classification")
    raw = tomllib.loads(init.draft(folder, metric="auc", template="tabular"))
    assert raw["data"]["drop_columns"] == ["diagnosis", "benign_malignant"]
    spec = config.parse(raw, tmp_path / "x.toml").spec
    train, test, sample = (layouts.pd.read_csv(folder / n) for n in ("train.csv", "test.csv", "sample_submission.csv"))
    target, _, recipe = tabular.checked(spec, train, test, sample, (folder / "train.csv", folder / "test.csv",
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


def us_patent(folder: Path) -> Path:
    """us-patent-phrase-to-phrase-matching: train.csv id,anchor,target,context,score (phrases of a few words and a
    CPC code), test.csv without score, the sample id,score."""
    anchors = ["abatement", "acid absorption", "adjustable cup", "wood article"]
    targets = ["abatement of pollution", "act of abating", "eliminating process", "forest region", "absorbent of acid",
               "acid uptake", "cup holder", "height adjustable cup", "wooden article", "article of wood", "forest area",
               "pollution control", "water absorption", "adjustable basket", "timber product", "acid absorbent layer"]
    contexts = ["A47", "C08", "H01", "B44"]
    ids = layouts.hexes(16, 16, 2)
    frame = layouts.pd.DataFrame({"id": ids, "anchor": [anchors[k % 4] for k in range(16)], "target": targets,
                                  "context": [contexts[k % 4] for k in range(16)],
                                  "score": [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 0.5] * 2})
    layouts.csv(frame.iloc[:12], folder / "train.csv")
    layouts.csv(frame.iloc[12:].drop(columns=["score"]), folder / "test.csv")
    layouts.csv({"id": ids[12:], "score": 0}, folder / "sample_submission.csv")
    return folder


def test_short_texts_are_drafted_as_text(tmp_path):
    """us-patent: anchor, target and context of a word to a few are what the model reads, and nothing else is;
    the text template reads them (kit's verdict: text_columns = ["anchor", "target", "context"])."""
    text = init.draft(us_patent(tmp_path / "us-patent-phrase-to-phrase-matching"), metric="pearson")
    raw = tomllib.loads(text)
    assert raw["competition"]["template"] == "text", text
    assert {k: raw["data"].get(k) for k in ("train", "test", "id_column", "target_column", "text_columns")} == {
        "train": "train.csv", "test": "test.csv", "id_column": "id", "target_column": "score",
        "text_columns": ["anchor", "target", "context"]}


def iwildcam_2019(folder: Path) -> Path:
    """iwildcam-2019-fgvc6 as MLE-bench splits it, by camera location: train.csv (category_id, date, file_name,
    frame_num, id, location, seq_id, ...), test.csv without category_id at locations train.csv lacks, the sample
    Id,Category; train_images/ and test_images/ of <id>.jpg."""
    train, test = layouts.hexes(14, 12), layouts.hexes(4, 12, 1)
    for split, ids in (("train_images", train), ("test_images", test)):
        for i in ids:
            layouts.touch(folder / split / f"{i}.jpg")
    rows = {"date": "2012-03-17 03:48:44", "frame_num": 1, "seq_num_frames": 3, "width": 1024, "height": 747}
    layouts.csv({"category_id": [k % 3 for k in range(14)], **rows, "file_name": [f"{i}.jpg" for i in train], "id": train,
                 "location": [k % 6 for k in range(14)], "seq_id": [f"s{k // 3}" for k in range(14)]}, folder / "train.csv")
    layouts.csv({**rows, "file_name": [f"{i}.jpg" for i in test], "id": test, "location": [40, 41, 40, 41],
                 "seq_id": ["t0", "t0", "t1", "t1"]}, folder / "test.csv")
    layouts.csv({"Id": test, "Category": 0}, folder / "sample_submission.csv")
    return folder


def test_a_column_named_for_the_rows_groups_is_drafted_as_group_column(tmp_path):
    """iwildcam-2019's test cameras are new, and movie-review's phrases come in sentences: kit's configs keep each
    group in one fold (group_column = "location", "SentenceId"); so does the draft, saying why."""
    text = init.draft(iwildcam_2019(tmp_path / "iwildcam-2019-fgvc6"), metric="macro_f1")
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


def google_quest(folder: Path) -> Path:
    """google-quest-challenge: train.csv (qa_id, question_title, question_body, question_user_name,
    question_user_page, answer, answer_user_name, answer_user_page, url, category, host, then the 30 scores; three
    here), test.csv without the scores, the sample qa_id and the scores."""
    texts = layouts.sentences(30, words=12)
    host = "photo.stackexchange.com"
    rows = [{"qa_id": 10 + k, "question_title": texts[k][:40], "question_body": texts[k + 10], "question_user_name": f"ann{k}",
             "question_user_page": f"https://{host}/users/{1024 + k}/ann-the-photographer-{k}", "answer": texts[k + 20],
             "answer_user_name": f"bob{k}", "answer_user_page": f"https://{host}/users/{2048 + k}/bob-answers-{k}",
             "url": f"http://{host}/questions/{9000 + k}/what-is-the-distance-of-field-{k}",
             "category": ["LIFE_ARTS", "CULTURE", "SCIENCE"][k % 3], "host": host} for k in range(10)]
    scores = ["question_asker_intent_understanding", "question_body_critical", "answer_helpful"]
    frame = layouts.pd.DataFrame(rows)
    layouts.csv(frame.iloc[:7].assign(**{s: [k / 7 for k in range(7)] for s in scores}), folder / "train.csv")
    layouts.csv(frame.iloc[7:], folder / "test.csv")
    layouts.csv({"qa_id": frame["qa_id"].iloc[7:], **{s: 0.5 for s in scores}}, folder / "sample_submission.csv")
    return folder


def test_addresses_are_not_read_as_text(tmp_path):
    """google-quest's url and user pages are long strings of letters, but addresses: kit's config reads the title,
    the body and the answer alone."""
    raw = tomllib.loads(init.draft(google_quest(tmp_path / "google-quest-challenge"), metric="spearman"))
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
    folder = leaf(tmp_path / "leaf-classification")
    for image in (folder / "images").iterdir():
        image.unlink()
    (folder / "images").rmdir()
    assert cli.main(["init", str(folder), "--metric", "log_loss"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(template cnn) would stop at the kernel's data checks (run on the tables' first " \
                                    "10,000 rows): train.csv: 192 pixel columns (all but id, species) do not make a " \
                                    "square image" in err, err
