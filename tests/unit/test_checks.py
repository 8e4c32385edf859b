"""Checks before the data is touched: model names, weights, image extensions and image file names, each a
one-line error that says where and what to write instead."""
import pytest
from conftest import MINIMAL_TOML

from kit import config
from kit.errors import KitError
from kit.spec import Spec

MINIMAL = MINIMAL_TOML.format(title="Some Competition Baseline", kernel="")


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


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
