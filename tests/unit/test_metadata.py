"""kernel-metadata.json: the contract, the username look-up, and stricter checks than the client's."""
import json

import pytest

from kit import config
from kit.build import metadata
from kit.errors import KitError


def load(minimal_toml, title="Some Competition Baseline", kernel=""):
    return config.load(str(minimal_toml(title=title, kernel=kernel)))


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
def test_title_length(minimal_toml, title):
    with pytest.raises(KitError, match="Kaggle needs 5 to 50"):
        metadata.build(load(minimal_toml, title=title), "alice")


def test_fifty_character_title_is_fine(minimal_toml):
    meta = metadata.build(load(minimal_toml, title="A" * 50), "alice")
    assert meta["id"] == "alice/" + "a" * 50


def test_slug_must_match_title(minimal_toml):
    with pytest.raises(KitError, match="slug 'other-name' does not match the title, which Kaggle turns into "
                                       "'some-competition-baseline'"):
        metadata.build(load(minimal_toml, kernel='slug = "other-name"'), "alice")
    meta = metadata.build(load(minimal_toml, kernel='slug = "some-competition-baseline"'), "alice")
    assert meta["code_file"] == "some-competition-baseline.ipynb"


def test_gpu_off_and_sources(minimal_toml):
    meta = metadata.build(
        load(minimal_toml, kernel='gpu = false\ninternet = true\nprivate = false\ndataset_sources = ["me/weights"]'), "alice"
    )
    assert meta["enable_gpu"] is False and "machine_shape" not in meta
    assert meta["enable_internet"] is True and meta["is_private"] is False
    assert meta["dataset_sources"] == ["me/weights"]


def test_p100_warns_and_internet_off_pretrained_warns(minimal_toml):
    cfg = load(minimal_toml, kernel='machine_shape = "NvidiaTeslaP100"')
    warnings = metadata.warnings_for(cfg)
    assert any("retired" in w and "sm_60" in w for w in warnings)
    assert any("weights_path" in w for w in warnings)
    cfg = load(minimal_toml, kernel="internet = true")
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


@pytest.mark.parametrize(
    "kernel, message",
    [
        ('model_sources = ["timm/efficientnet"]',
         "model_sources: 'timm/efficientnet' is not of the form owner/model/framework/variation/version"),
        ('model_sources = ["a/b/pytorch/default/latest"]', "not of the form owner/model/framework/variation/version"),
        ('dataset_sources = ["just-a-name"]', "dataset_sources: 'just-a-name' is not of the form owner/dataset-slug"),
        ('kernel_sources = ["a/b/c/d"]', "kernel_sources: 'a/b/c/d' is not of the form owner/kernel-slug"),
        ('machine_shape = "NvidiaTeslaK80"', "machine_shape = 'NvidiaTeslaK80' is not one of"),
        ('docker_image_pinning_type = "newest"', "docker_image_pinning_type = 'newest' is not one of"),
    ],
)
def test_sources_and_shapes_are_checked_before_kaggle_sees_them(minimal_toml, kernel, message):
    with pytest.raises(KitError, match=message.replace("(", r"\(")):
        metadata.build(load(minimal_toml, kernel=kernel), "alice")


def test_good_sources_pass(minimal_toml):
    meta = metadata.build(load(minimal_toml, kernel='model_sources = ["google/efficientnet/pytorch/b4/1"]\n'
                                                     'dataset_sources = ["alice/weights", "bob/more-weights/3"]'), "alice")
    assert meta["model_sources"] == ["google/efficientnet/pytorch/b4/1"] and len(meta["dataset_sources"]) == 2
