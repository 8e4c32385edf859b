"""Mistakes in a config stop the real set-up and data steps before a single image is decoded, as one line."""
import shutil

import pandas as pd
import pytest

from kit import cli, config
from kit.data import images
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.run import start

SMOKE = ["device=cpu", "model_name=test_efficientnet", "pretrained=false", "image_size=64", "batch_size=16", "folds=2"]


@pytest.fixture
def no_decoding(monkeypatch):
    """Decoding any image fails the test: the checks must have stopped the run before it."""

    def decode(*args, **kwargs):
        raise AssertionError("an image was decoded before the mistake was reported")

    monkeypatch.setattr(images, "build_cache", decode)
    monkeypatch.setattr(images, "streaming", decode)


def namespace(data_dir, out, image_ext=".jpg", **params):
    values = config.load("dog-breed").parameters(smoke=True)
    competition = {**values["competition"], "image_ext": image_ext}
    return {**values, "competition": competition, "data_dir": str(data_dir), "output_dir": str(out), **params}


def one_line(error: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("image_ext", ["png", ".png"])
def test_wrong_image_ext_stops_the_data_step_before_decoding(dog_breed_data, tmp_path, no_decoding, image_ext):
    _, folder = dog_breed_data
    pipe = create_pipeline(start("cnn", namespace(folder, tmp_path / "out", image_ext)))
    with pytest.raises(KitError) as e:
        pipe.load()
    assert one_line(e) == ('no train/<id>.png for 20 of the first 20 ids in labels.csv; the folder holds .jpg files: '
                           'set image_ext = ".jpg" in [data]')


def test_test_images_are_checked_against_the_sample_submission(dog_breed_data, tmp_path, no_decoding):
    _, original = dog_breed_data
    folder = tmp_path / "data"
    shutil.copytree(original, folder)
    for path in (folder / "test").iterdir():
        path.rename(path.with_suffix(".jpeg"))
    pipe = create_pipeline(start("cnn", namespace(folder, tmp_path / "out")))
    with pytest.raises(KitError) as e:
        pipe.load()
    assert one_line(e) == ('no test/<id>.jpg for 16 of the first 16 ids in sample_submission.csv; the folder holds '
                           '.jpeg files: set image_ext = ".jpeg" in [data]')


def test_images_missing_past_the_first_ids_point_at_image_ext_after_decoding(dog_breed_data, tmp_path):
    _, original = dog_breed_data
    folder = tmp_path / "data"
    shutil.copytree(original, folder)
    ids = pd.read_csv(folder / "labels.csv", dtype=str)["id"]
    for i in ids[20:50]:  # the first ids have their files: only decoding finds the rest missing
        (folder / "train" / f"{i}.jpg").unlink()
    pipe = create_pipeline(start("cnn", namespace(folder, tmp_path / "out")))
    with pytest.raises(KitError) as e:
        pipe.load()
    assert one_line(e).startswith("30 of 60 train images could not be decoded (50.0%, more than 1%): ")
    assert one_line(e).endswith("; 30 of them do not exist: check image_ext and the train image folder in [data]")


def test_set_up_stops_at_a_model_name_typo(dog_breed_data, tmp_path):
    _, folder = dog_breed_data
    with pytest.raises(KitError) as e:
        start("cnn", namespace(folder, tmp_path / "out", model_name="resnet-18"))
    assert one_line(e).startswith("parameters cell: model_name = 'resnet-18' is not a timm model (did you mean resnet18")
    assert not (tmp_path / "out").exists()  # stopped before the set-up went on to make the output folder


def test_set_up_stops_at_a_missing_weights_file(dog_breed_data, tmp_path, monkeypatch):
    _, folder = dog_breed_data
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path / "input"))
    with pytest.raises(KitError) as e:
        start("cnn", namespace(folder, tmp_path / "out", weights_path="tiny/model.safetensors"))
    assert one_line(e).startswith("weights_path 'tiny/model.safetensors' not found")
    assert not (tmp_path / "out").exists()


def dog_breed_toml(tmp_path, old: str, new: str):
    text = config.resolve("dog-breed").read_text()
    assert old in text
    path = tmp_path / "dogs.toml"
    path.write_text(text.replace(old, new))
    return path


def test_kit_kernel_stops_at_a_model_name_typo_in_one_line(tmp_path, capsys, kaggle_user):
    path = dog_breed_toml(tmp_path, 'model_name = "tf_efficientnet_b4"', 'model_name = "resnet-18"')
    assert cli.main(["kernel", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: [params]: model_name = 'resnet-18' is not a timm model (did you mean resnet18")
    assert err.count("\n") == 1


@pytest.mark.e2e
def test_kit_run_stops_at_a_wrong_image_ext_in_one_line_with_nothing_decoded(dog_breed_data, tmp_path, monkeypatch, capsys):
    _, folder = dog_breed_data
    path = dog_breed_toml(tmp_path, 'image_ext = ".jpg"', 'image_ext = "png"')
    cache = tmp_path / "cache"
    monkeypatch.setenv("KIT_CACHE_DIR", str(cache))
    args = ["run", str(path), "--data", str(folder), "--output", str(tmp_path / "out"), "-p", "fallback=none"]  # no prior
    assert cli.main(args + [a for p in SMOKE for a in ("-p", p)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert not [line for line in err if "Traceback" in line]
    assert err[-1] == ('error: no train/<id>.png for 20 of the first 20 ids in labels.csv; the folder holds .jpg files: '
                       'set image_ext = ".jpg" in [data]')
    assert not list(cache.glob("*.u8"))  # no image was decoded into the cache
