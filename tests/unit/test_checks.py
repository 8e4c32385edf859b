"""Checks before the data is touched: model names, weights, image extensions and image file names, each a
one-line error that says where and what to write instead."""
import os
import subprocess
import sys

import pytest
from conftest import MINIMAL_TOML, ROOT

from kit import config, templates
from kit.data import images
from kit.data.layouts import check_image_files
from kit.errors import KitError
from kit.models.names import check_model_name, close_models
from kit.params import CnnParams, SequenceParams, TabularParams
from kit.run.start import check_choices
from kit.spec import Spec

MINIMAL = MINIMAL_TOML.format(title="Some Competition Baseline", kernel="")


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_a_model_name_typo_suggests_the_name_it_misspells():
    assert close_models("resnet-18")[0] == "resnet18"
    assert "efficientnet_b0" in close_models("EfficientNet-B0")
    with pytest.raises(KitError) as e:
        check_model_name("resnet-18", "parameters cell")
    message = one_line(e)
    assert message.startswith("parameters cell: model_name = 'resnet-18' is not a timm model (did you mean resnet18, ")
    assert message.endswith("set it to a name in timm.list_models()")


def test_model_names_timm_knows_pass():
    for name in ("resnet18", "resnet18.a1_in1k", "test_efficientnet", CnnParams().model_name):
        check_model_name(name, "parameters cell")


def test_a_config_is_checked_against_timms_names_without_importing_timm_once_they_are_listed(tmp_path):
    """The first check lists timm's names into the scratch folder; a later process reads the list, not timm (and
    torch): kit push, status and submit read a config each, ~4 s of imports apiece before."""
    check = ("import sys; from kit import config; from kit.models import names; config.load('dog-breed'); "
             "print('timm' in sys.modules, names.known('resnet18.a1_in1k'), names.known('resnet-18'))")
    env = {**os.environ, "KIT_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["True", "True", "False"], ["False", "True", "False"]], runs[0].stderr
    assert len(list(tmp_path.glob("timm-*-models.txt"))) == 1


def test_a_segmentation_config_is_checked_against_smps_architectures_without_importing_smp_once_listed(tmp_path):
    """smp's architectures are listed into the scratch folder as timm's names are: make kernel of a segmentation
    config took ~9 s more than another's for importing smp to check its model_name."""
    check = ("import sys; from kit import config; config.load('tgs-salt-identification-challenge'); "
             "print('segmentation_models_pytorch' in sys.modules)")
    env = {**os.environ, "KIT_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["True"], ["False"]], runs[0].stderr
    assert len(list(tmp_path.glob("segmentation-models-pytorch-*-architectures.txt"))) == 1


def test_a_wrong_smp_architecture_is_one_line(write_toml):
    text = (ROOT / "kit" / "competitions" / "tgs-salt-identification-challenge.toml").read_text()
    path = write_toml(text.replace('model_name = "Unet"', 'model_name = "unetplus"', 1))
    with pytest.raises(KitError) as e:
        config.load(str(path))
    assert "model_name = 'unetplus' is not an smp architecture (did you mean unetplusplus" in one_line(e)


@pytest.mark.parametrize("table", ["params", "smoke"])
def test_build_names_the_config_table_that_set_a_wrong_model(write_toml, table):
    path = write_toml(MINIMAL + f'\n[{table}]\nmodel_name = "resnet-18"\n')
    with pytest.raises(KitError) as e:
        config.load(str(path))
    assert one_line(e).startswith(f"{path}: [{table}]: model_name = 'resnet-18' is not a timm model (did you mean resnet18")


def test_setup_finds_a_missing_weights_file_and_a_wrong_model(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    with pytest.raises(KitError) as e:
        check_choices(CnnParams(model_name="resnet18", weights_path="resnet18.safetensors"), templates.get("cnn"))
    assert one_line(e).startswith("weights_path 'resnet18.safetensors' not found")
    with pytest.raises(KitError, match=r"^parameters cell: model_name = 'resnet_18' .*did you mean resnet18"):
        check_choices(CnnParams(model_name="resnet_18"), templates.get("cnn"))
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "resnet18.safetensors").write_bytes(b"")
    check_choices(CnnParams(model_name="resnet18", weights_path="resnet18.safetensors"), templates.get("cnn"))
    check_choices(SequenceParams(), templates.get("lstm"))
    check_choices(TabularParams(model_name="catboost"), templates.get("tabular"))  # a booster's name is no timm name


def test_image_ext_without_its_dot_gets_one_in_the_build_and_the_kernel(write_toml):
    cfg = config.load(str(write_toml(MINIMAL + '\n[data]\nimage_ext = "png"\n')))
    assert cfg.spec.image_ext == ".png" and cfg.parameters()["competition"]["image_ext"] == ".png"
    assert Spec.from_dict({"slug": "x", "image_ext": "png"}).image_ext == ".png"
    assert Spec.from_dict({"slug": "x", "image_ext": ".PNG"}).image_ext == ".PNG"
    assert Spec.from_dict({"slug": "x", "image_ext": ""}).image_ext == ""  # ids that end in their extension


def test_image_ext_with_a_folder_is_an_error(write_toml):
    path = write_toml(MINIMAL + '\n[data]\nimage_ext = "train/.jpg"\n')
    with pytest.raises(KitError) as e:
        config.load(str(path))
    assert one_line(e).startswith(f"{path}: [data]: image_ext = 'train/.jpg' holds a folder; put folders in train_images")
    with pytest.raises(KitError, match=r"^competition parameter: image_ext = 'a\\\\.jpg' holds a folder"):
        Spec.from_dict({"slug": "x", "image_ext": "a\\.jpg"}, "competition parameter")


def image_folder(tmp_path, names):
    folder = tmp_path / "train"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes(b"")  # only names are looked at: nothing is decoded
    return folder


IDS = [f"id{k:03d}" for k in range(30)]


def test_wrong_extension_names_the_one_in_the_folder(tmp_path):
    folder = image_folder(tmp_path, [f"{i}.jpg" for i in IDS])
    with pytest.raises(KitError) as e:
        check_image_files(folder, "train", IDS, ".png", "labels.csv", "train_images")
    assert one_line(e) == ('no train/<id>.png for 20 of the first 20 ids in labels.csv; '
                           'the folder holds .jpg files: set image_ext = ".jpg" in [data]')


def test_ids_that_end_in_their_extension_ask_for_an_empty_image_ext(tmp_path):
    folder = image_folder(tmp_path, [f"{i}.jpg" for i in IDS])
    with pytest.raises(KitError, match=r'the ids already end in their extension: set image_ext = "" in \[data\]$'):
        check_image_files(folder, "train", [f"{i}.jpg" for i in IDS[:5]], ".jpg", "train.csv", "train_images")


def test_files_named_otherwise_point_at_the_id_column(tmp_path):
    folder = image_folder(tmp_path, [f"img_{i}.jpg" for i in IDS])
    with pytest.raises(KitError) as e:
        check_image_files(folder, "train", IDS, ".jpg", "labels.csv", "train_images")
    assert one_line(e) == ("no train/<id>.jpg for 20 of the first 20 ids in labels.csv; the folder holds .jpg files "
                           "such as img_id000.jpg: check id_column, train_images and image_ext in [data]")


def test_an_empty_or_nested_folder_points_at_its_key(tmp_path):
    empty = tmp_path / "test"
    empty.mkdir()
    with pytest.raises(KitError, match=r"; the folder holds nothing: check test_images in \[data\]$"):
        check_image_files(empty, "test", IDS, ".jpg", "sample_submission.csv", "test_images")
    (empty / "test").mkdir()  # a zip unpacked into a folder of its own name
    with pytest.raises(KitError, match=r"; the folder holds only folders \(such as test\): check test_images in \[data\]$"):
        check_image_files(empty, "test", IDS, ".jpg", "sample_submission.csv", "test_images")


def test_a_few_missing_files_are_left_to_the_decoder(tmp_path):
    folder = image_folder(tmp_path, [f"{i}.jpg" for i in IDS[1:]])
    check_image_files(folder, "train", IDS, ".jpg", "labels.csv", "train_images")
    check_image_files(folder, "train", [], ".jpg", "labels.csv", "train_images")


def test_images_that_do_not_exist_point_at_image_ext_not_at_the_files():
    names = [f"train/{i}.jpg" for i in IDS]
    missing = images.ImageFiles(names, 8, bad={k: "file not found" for k in range(30)})  # as decode says
    with pytest.raises(KitError) as e:
        images.check_bad(missing, names, "train", "are left out", 0.01, print)
    assert one_line(e).endswith("; 30 of them do not exist: check image_ext and the train image folder in [data]")
    broken = images.ImageFiles(names, 8, bad={k: "cannot identify image file" for k in range(30)})
    with pytest.raises(KitError, match="; replace or remove those files$"):
        images.check_bad(broken, names, "train", "are left out", 0.01, print)
