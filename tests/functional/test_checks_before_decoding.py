"""Mistakes in a config stop the real set-up and data steps before a single image is decoded, as one line."""

import pytest

from kit import cli, config
from kit.errors import KitError
from kit.runtime.session import start

SMOKE = ["device=cpu", "model_name=test_efficientnet", "pretrained=false", "image_size=64", "batch_size=16", "folds=2"]


def namespace(data_dir, out, image_ext=".jpg", **params):
    values = config.load("dog-breed").parameters(smoke=True)
    competition = {**values["competition"], "image_ext": image_ext}
    return {**values, "competition": competition, "data_dir": str(data_dir), "output_dir": str(out), **params}


def one_line(error: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(error.value)
    return str(error.value)


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
