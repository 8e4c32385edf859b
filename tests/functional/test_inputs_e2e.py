"""The new inputs on smoke data in each shape's public layout, in this process, where the data and the model can
be looked at: .npy arrays of six channels (seti), labels from file names beside their zips (dogs-vs-cats), JSON
records and zipped TSV text tables. The real notebook on each gallery competition's layout (statoil's 7z'd
arrays, inaturalist's tars, stanford's JSON lines among them) runs in tests/functional/test_gallery_e2e.py."""
import json

import numpy as np
import pandas as pd
import pytest

from kit import smoke

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
