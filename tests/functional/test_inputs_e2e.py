"""The new inputs end to end, the real notebook on smoke data in each shape's public layout: per-row arrays in
7z'd JSON (statoil: two float channels, their own statistics, in_chans=2), a COCO file with its image folders
shipped as plain tars named .tar.gz (inaturalist), and JSON lines exploded into steps with several per-step
targets (stanford-covid-vaccine)."""
import json

import numpy as np
import pandas as pd
import pytest

from kit import smoke
from kit.data import archives

pytestmark = pytest.mark.e2e

CNN_SMOKE = """
[kernel]
title = "{title}"

[smoke]
model_name = "test_efficientnet"
pretrained = false
image_size = 32
epochs = 6
folds = 2
batch_size = 16
device = "cpu"
"""


def run(tmp_path, text: str):
    path = tmp_path / "comp.toml"
    path.write_text(text)
    result = smoke.run(str(path), root=tmp_path / "run")
    return result, (result.submission.parent / "kit.log").read_text()


def test_statoil_arrays_in_7z_json_train_on_their_own_statistics(tmp_path):
    if not (archives._importable("py7zr") or archives.shutil.which("7z")):
        pytest.skip("nothing here writes or reads .7z (py7zr or the 7z command)")
    result, log = run(tmp_path, """
[competition]
slug = "statoil-iceberg-classifier-challenge"
template = "cnn"
metric = "log_loss"

[data]
layout = "arrays"
train = "train.json"
test = "test.json"
sample_submission = "sample_submission.csv"
id_column = "id"
target_column = "is_iceberg"
array_columns = ["band_1", "band_2"]
""" + CNN_SMOKE.format(title="Statoil Iceberg Arrays"))
    assert sorted(p.name for p in result.input_dir.iterdir()) == ["sample_submission.csv.7z", "test.json.7z", "train.json.7z"]
    sub = pd.read_csv(result.submission)
    assert list(sub.columns) == ["id", "is_iceberg"] and len(sub) == 12 and sub["is_iceberg"].between(0, 1).all()
    assert "unpack         train.json.7z: 1 entries" in log
    assert "resize train: 120 images of 24 x 24 pixels resized into" in log
    checkpoint = json.loads((result.submission.parent / "cv.json").read_text())
    assert np.isfinite(checkpoint["score"]) and result.score < result.baseline  # log loss: lower than the prior's


def test_inaturalist_coco_files_with_their_folders_in_plain_tars(tmp_path):
    result, log = run(tmp_path, """
[competition]
slug = "inaturalist-2019-fgvc6"
template = "cnn"
metric = "accuracy"

[data]
layout = "coco"
train = "train2019.json"
test = "test2019.json"
sample_submission = "kaggle_sample_submission.csv"
id_column = "id"
target_column = "predicted"
train_images = "train_val2019"
test_images = "test2019"
""" + CNN_SMOKE.format(title="iNaturalist COCO"))
    sub = pd.read_csv(result.submission)
    sample = pd.read_csv(result.input_dir / "kaggle_sample_submission.csv")
    assert sub["id"].tolist() == sample["id"].tolist() and set(sub["predicted"]) <= {400, 401, 402}
    assert sub["predicted"].dtype.kind == "i"  # category ids as whole numbers, as the grader's int() needs
    assert "unpack         train_val2019.tar.gz: 48 entries" in log and "train          48 images, 3 classes" in log
    assert result.score > result.baseline


def test_stanford_json_lines_explode_into_steps_with_several_targets(tmp_path):
    result, log = run(tmp_path, """
[competition]
slug = "stanford-covid-vaccine"
template = "lstm"
metric = "rmse"

[data]
train = "train.json"
test = "test.json"
sample_submission = "sample_submission.csv"
id_column = "id_seqpos"
sequence_column = "id"
order_column = "seqpos"
features = ["seqpos"]
categorical = ["sequence", "structure", "predicted_loop_type"]
step_columns = ["sequence", "structure", "predicted_loop_type", "reactivity", "deg_Mg_pH10", "deg_50C"]
task = "per_step"

[kernel]
title = "Stanford Covid Steps"

[smoke]
device = "cpu"
epochs = 12
folds = 2
batch_size = 16
hidden_size = 32
num_layers = 1
""")
    sub = pd.read_csv(result.submission)
    sample = pd.read_csv(result.input_dir / "sample_submission.csv")
    assert list(sub.columns) == ["id_seqpos", "reactivity", "deg_Mg_pH10", "deg_50C"] and len(sub) == 16 * 40
    assert sub["id_seqpos"].tolist() == sample["id_seqpos"].tolist() and sub.iloc[:, 1:].notna().all().all()
    assert sub["reactivity"].std() > 0 and not np.allclose(sub["reactivity"], sub["deg_50C"])  # a value per target
    assert "train          80 sequences, 3200 rows, up to 40 steps" in log
    assert result.score < result.baseline  # MCRMSE over the scored positions (the first 28 of 40)


def in_process(tmp_path, toml: str, **params):
    """The config's smoke data, and the cnn pipeline run in this process (no notebook): faster, and its data
    and model can be looked at."""
    from kit import config
    from kit.pipelines import create_pipeline
    from kit.run import start

    path = tmp_path / "comp.toml"
    path.write_text(toml)
    cfg = config.load(str(path))
    folder = tmp_path / "data" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=3)
    values = {**cfg.parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "out"), **params}
    session = start("cnn", values)
    return session, create_pipeline(session), folder


def test_seti_npy_files_train_a_six_channel_model(tmp_path, monkeypatch):
    from kit.run import train_folds, write_submission

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    session, pipe, folder = in_process(tmp_path, """
[competition]
slug = "seti-breakthrough-listen"
template = "cnn"
metric = "auc"

[data]
train = "train_labels.csv"
id_column = "id"
target_column = "target"
image_path = "{id[0]}/{id}.npy"
""" + CNN_SMOKE.format(title="SETI Six Channels"), epochs=2)
    data = pipe.load()
    assert data.train_cache.form.channels == 6 and data.train_cache.form.dtype == "float16"
    assert data.recipe["channels"] == 6 and len(data.recipe["mean"]) == 6  # its own statistics, per channel
    model = pipe.model(data, pretrained=False)
    assert next(p for p in model.parameters() if p.ndim == 4).shape[1] == 6  # timm's in_chans
    batch = next(iter(pipe.batches(data, data.usable[:8], train=True, batch_size=8)))
    assert batch["image"].shape == (8, 6, 32, 32)
    train_folds(session, pipe, data)
    sub = write_submission(session, pipe, data)
    assert len(sub) == 12 and sub["target"].between(0, 1).all()


def test_dogs_vs_cats_reads_its_folders_beside_their_zips_and_labels_from_names(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    session, pipe, folder = in_process(tmp_path, """
[competition]
slug = "dogs-vs-cats-redux-kernels-edition"
template = "cnn"
metric = "log_loss"

[data]
layout = "names"
label_pattern = '^(cat|dog)\\.'
id_column = "id"
target_column = "label"
""" + CNN_SMOKE.format(title="Dogs vs Cats Names"))
    assert (folder / "train.zip").is_file() and (folder / "train").is_dir()
    data = pipe.load()
    assert data.target.kind == "binary" and data.target.classes == ("cat", "dog")  # the column is P(dog)
    assert len(data.ids) == 48 and not (tmp_path / "cache" / "unpacked").exists()  # the folders, not the zips


def text_session(tmp_path, data: str, folder, texts):
    """The text pipeline on `folder` with a tiny encoder built from `texts`, in this process."""
    from kit import config
    from kit.pipelines import create_pipeline
    from kit.run import start
    from kit.smoke.text import build_tiny_encoder

    path = tmp_path / "comp.toml"
    path.write_text(data + '\n[kernel]\ntitle = "Text Inputs"\n\n[params]\nmodel_path = "tiny"\n')
    cfg = config.load(str(path))
    model = build_tiny_encoder(texts, tmp_path / "tiny", max_positions=64)
    values = {**cfg.parameters(smoke=True), "model_path": str(model), "data_dir": str(folder), "max_length": 32,
              "output_dir": str(tmp_path / "out"), "device": "cpu", "epochs": 1, "folds": 2, "batch_size": 8}
    session = start("text", values)
    return session, create_pipeline(session)


def test_a_text_table_of_json_records_with_a_true_false_target(tmp_path, monkeypatch):
    """random-acts-of-pizza: train.json and test.json (records, beside zips of them), the target a JSON
    boolean; the submission is P(True)."""
    from kit.run import train_folds, write_submission

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    folder = tmp_path / "pizza"
    folder.mkdir()
    words = ["please", "hungry", "pizza", "thanks", "family", "job", "rent", "broke"]
    rows = [{"request_id": f"t3_{k:04x}", "request_title": f"[Request] {words[k % 8]}",
             "request_text_edit_aware": " ".join(rng.choice(words, 6)), "requester_received_pizza": bool(k % 3 == 0),
             "requester_subreddits_at_request": ["AskReddit"]} for k in range(40)]
    (folder / "train.json").write_text(json.dumps(rows[:30], indent=4))
    (folder / "test.json").write_text(json.dumps([{k: v for k, v in r.items() if k != "requester_received_pizza"}
                                                  for r in rows[30:]], indent=4))
    pd.DataFrame({"request_id": [r["request_id"] for r in rows[30:]], "requester_received_pizza": 0}).to_csv(
        folder / "sampleSubmission.csv", index=False)
    session, pipe = text_session(tmp_path, """
[competition]
slug = "random-acts-of-pizza"
template = "text"
metric = "auc"

[data]
train = "train.json"
test = "test.json"
sample_submission = "sampleSubmission.csv"
id_column = "request_id"
target_column = "requester_received_pizza"
text_columns = ["request_title", "request_text_edit_aware"]
""", folder, [r["request_text_edit_aware"] for r in rows])
    data = pipe.load()
    assert data.target.kind == "binary" and data.target.classes == (False, True)
    train_folds(session, pipe, data)
    sub = write_submission(session, pipe, data)
    assert sub["request_id"].tolist() == [r["request_id"] for r in rows[30:]] and sub.iloc[:, 1].between(0, 1).all()


def test_a_zipped_tsv_text_table(tmp_path, monkeypatch):
    """movie-review: train.tsv.zip and test.tsv.zip, one file each at the root; Sentiment 0 to 4."""
    from kit.smoke.packing import write_zip

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "movies"
    folder.mkdir()
    phrases = ["a gem", "dull", "fine , I guess", 'a "classic"', "awful\tmess", "great fun", "so-so", "meh"]
    train = pd.DataFrame({"PhraseId": range(1, 33), "SentenceId": 1, "Phrase": [phrases[k % 8] for k in range(32)],
                          "Sentiment": [k % 5 for k in range(32)]})
    test = pd.DataFrame({"PhraseId": range(33, 41), "SentenceId": 2, "Phrase": phrases})
    for name, frame in (("train.tsv", train), ("test.tsv", test)):
        frame.to_csv(tmp_path / name, sep="\t", index=False)
        write_zip(tmp_path / name, folder / f"{name}.zip")
    pd.DataFrame({"PhraseId": test["PhraseId"], "Sentiment": 2}).to_csv(folder / "sampleSubmission.csv", index=False)
    session, pipe = text_session(tmp_path, """
[competition]
slug = "movie-review-sentiment-analysis-kernels-only"
template = "text"
metric = "accuracy"

[data]
train = "train.tsv"
test = "test.tsv"
sample_submission = "sampleSubmission.csv"
id_column = "PhraseId"
target_column = "Sentiment"
text_columns = ["Phrase"]
""", folder, phrases)
    data = pipe.load()
    assert data.target.kind == "label" and data.target.classes == (0, 1, 2, 3, 4) and len(data.y) == 32
    assert sorted(p.name for p in (tmp_path / "cache" / "unpacked").iterdir())[0].startswith("test.tsv.zip-")
