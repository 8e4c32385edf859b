"""The text smoke's tiny encoder: built from config classes, loaded from its folder alone, offline."""
import socket

import pytest

from kit.smoke.text import build_tiny_encoder

TEXTS = ["Cars should be limited in cities because they pollute.", "Venus is worth studying despite its dangers."] * 20


def test_the_tiny_encoder_loads_from_its_folder_with_no_network(tmp_path, monkeypatch):
    from transformers import AutoModel, AutoTokenizer

    folder = build_tiny_encoder(TEXTS, tmp_path / "tiny")
    assert {p.name for p in folder.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args, **kwargs):
        raise AssertionError("a network connection was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModel.from_pretrained(folder, local_files_only=True)
    batch = tokenizer(["cars pollute cities", "venus"], padding=True, return_tensors="pt")
    assert batch["input_ids"][0, 0] == tokenizer.cls_token_id and batch["attention_mask"][1, -1] == 0
    assert model(**batch).last_hidden_state.shape == (2, batch["input_ids"].shape[1], 32)
    assert model.config.max_position_embeddings == 128 and tokenizer.model_max_length == 128


def test_the_same_seed_builds_the_same_weights(tmp_path):
    a = build_tiny_encoder(TEXTS, tmp_path / "a", seed=3)
    b = build_tiny_encoder(TEXTS, tmp_path / "b", seed=3)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "tokenizer.json").read_text() == (b / "tokenizer.json").read_text()


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_essay_smoke_data_is_in_the_competitions_layout_and_says_its_score(tmp_path):
    import numpy as np
    import pandas as pd

    from kit import config
    from kit.smoke.text import make_essays

    make_essays(config.load("learning-agency-lab-automated-essay-scoring-2").spec, tmp_path / "aes", seed=1)
    train = pd.read_csv(tmp_path / "aes" / "train.csv")
    test = pd.read_csv(tmp_path / "aes" / "test.csv")
    sample = pd.read_csv(tmp_path / "aes" / "sample_submission.csv")
    assert list(train.columns) == ["essay_id", "full_text", "score"] and list(test.columns) == ["essay_id", "full_text"]
    assert list(sample.columns) == ["essay_id", "score"] and sample["essay_id"].tolist() == test["essay_id"].tolist()
    assert set(train["score"]) == {1, 2, 3, 4, 5, 6} and train["full_text"].str.len().min() > 0
    assert not set(train["essay_id"]) & set(test["essay_id"])
    length = train["full_text"].str.split().str.len()
    assert np.corrcoef(length, train["score"])[0, 1] > 0.8  # learnable: longer, richer essays score higher
