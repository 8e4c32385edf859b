"""kernel-metadata.json: the contract, the username look-up, and stricter checks than the client's."""
import json

import pytest

from kit import config
from kit.errors import KitError
from kit.kernel import metadata

MINIMAL = """
[competition]
slug = "some-competition"
template = "cnn"
metric = "accuracy"

[kernel]
title = "{title}"
{kernel}
"""


def load(write_toml, title="Some Competition Baseline", kernel=""):
    return config.load(str(write_toml(MINIMAL.format(title=title, kernel=kernel))))


def test_dog_breed_metadata_contract():
    meta = metadata.build(config.load("dog-breed"), "alice")
    assert meta == {
        "id": "alice/dog-breed-efficientnet",
        "title": "Dog Breed EfficientNet",
        "code_file": "dog-breed-efficientnet.ipynb",
        "language": "python",
        "kernel_type": "notebook",
        "is_private": True,
        "enable_gpu": True,
        "enable_tpu": False,
        "enable_internet": False,
        "dataset_sources": [],
        "competition_sources": ["dog-breed-identification"],
        "kernel_sources": [],
        "model_sources": [],
        "machine_shape": "NvidiaTeslaT4",
    }


@pytest.mark.parametrize("title", ["Dog", "x" * 51])
def test_title_length(write_toml, title):
    with pytest.raises(KitError, match="Kaggle needs 5 to 50"):
        metadata.build(load(write_toml, title=title), "alice")


def test_fifty_character_title_is_fine(write_toml):
    meta = metadata.build(load(write_toml, title="A" * 50), "alice")
    assert meta["id"] == "alice/" + "a" * 50


def test_slug_must_match_title(write_toml):
    with pytest.raises(KitError, match="slug 'other-name' does not match the title, which Kaggle turns into 'some-competition-baseline'"):
        metadata.build(load(write_toml, kernel='slug = "other-name"'), "alice")
    meta = metadata.build(load(write_toml, kernel='slug = "some-competition-baseline"'), "alice")
    assert meta["code_file"] == "some-competition-baseline.ipynb"


def test_gpu_off_and_sources(write_toml):
    meta = metadata.build(
        load(write_toml, kernel='gpu = false\ninternet = true\nprivate = false\ndataset_sources = ["me/weights"]'), "alice"
    )
    assert meta["enable_gpu"] is False and "machine_shape" not in meta
    assert meta["enable_internet"] is True and meta["is_private"] is False
    assert meta["dataset_sources"] == ["me/weights"]


def test_p100_warns_and_internet_off_pretrained_warns(write_toml):
    cfg = load(write_toml, kernel='machine_shape = "NvidiaTeslaP100"')
    warnings = metadata.warnings_for(cfg)
    assert any("retired" in w and "sm_60" in w for w in warnings)
    assert any("weights_path" in w for w in warnings)
    cfg = load(write_toml, kernel="internet = true")
    assert metadata.warnings_for(cfg) == []


def test_validate_rejects_unknown_keys_and_bad_ids():
    good = metadata.build(config.load("dog-breed"), "alice")
    with pytest.raises(KitError, match="unknown key 'enable_gpus'"):
        metadata.validate({**good, "enable_gpus": True})
    with pytest.raises(KitError, match="must be <username>/<slug>"):
        metadata.validate({**good, "id": "dog-breed-efficientnet"})


def test_username_from_env(monkeypatch, kaggle_user):
    monkeypatch.setenv("KAGGLE_USERNAME", "bob")
    assert metadata.username() == "bob"


def test_username_from_kaggle_json(monkeypatch, kaggle_user):
    monkeypatch.delenv("KAGGLE_USERNAME")
    (kaggle_user / "kaggle.json").write_text(json.dumps({"username": "carol", "key": "secret-key-123"}))
    assert metadata.username() == "carol"


def test_missing_username_says_how_to_set_it(monkeypatch, kaggle_user):
    monkeypatch.delenv("KAGGLE_USERNAME")
    with pytest.raises(KitError, match="no Kaggle username: set KAGGLE_USERNAME, or save kaggle.json"):
        metadata.username()


def test_broken_kaggle_json_never_echoes_its_content(monkeypatch, kaggle_user):
    monkeypatch.delenv("KAGGLE_USERNAME")
    (kaggle_user / "kaggle.json").write_text('{"username": "dave", "key": "secret-key-123"')
    with pytest.raises(KitError) as e:
        metadata.username()
    assert "secret-key-123" not in str(e.value)
