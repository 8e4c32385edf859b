"""Bad segmentation inputs a user can cause, one KitError line each: a mask whose size is not its image's, an
encoder or architecture name that neither timm nor smp knows (with the name that would work), and a sample naming
mask files outside the output folder or one file twice."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from kit import config
from kit.data import masks
from kit.data.canvas import Masks, _DecodeJob
from kit.errors import KitError
from kit.models import segmentation as models
from kit.pipelines import segmentation_data


def test_a_mask_of_another_size_than_its_image_is_one_line(tmp_path):
    Image.fromarray(np.zeros((10, 12, 3), np.uint8)).save(tmp_path / "a.png")
    Image.fromarray(np.zeros((10, 11), np.uint8)).save(tmp_path / "a_mask.png")
    job = _DecodeJob([str(tmp_path / "a.png")], Masks(paths=(str(tmp_path / "a_mask.png"),)), str(tmp_path / "c.u8"),
                     (32, 32), 1)
    np.memmap(tmp_path / "c.u8", np.uint8, "w+", shape=(1, 32, 32, 3)).flush()
    np.memmap(tmp_path / "c.masks.u8", np.uint8, "w+", shape=(1, 32, 32, 1)).flush()
    problems = job([0])[4]
    assert problems == [f"{tmp_path / 'a_mask.png'}: the mask is 11 x 10 px and its image 12 x 10; a mask must have "
                        "its image's size"]


@pytest.mark.parametrize("values, says", [
    ({"encoder": "tu-resnet3"}, "names no timm model"),
    ({"encoder": "convnext_tiny"}, "timm has it: write 'tu-convnext_tiny'"),
    ({"encoder": "no_such_net"}, "is neither smp's nor timm's"),
    ({"model_name": "Unett"}, "did you mean unet"),
    ({"image_size": 100}, "use 96 or 128"),
])
def test_names_smp_and_timm_do_not_know_are_one_line(values, says):
    with pytest.raises(KitError, match=says) as e:
        models.check_params(values, "kit/competitions/x.toml")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("names, says", [
    (["../a.png", "b.png"], "'../a.png' in 'mask' is not a file inside the output folder"),
    (["/kaggle/a.png", "b.png"], "'/kaggle/a.png' in 'mask' is not a file inside the output folder"),
    (["m/a.png", "m/a.png"], "'m/a.png' is named twice in 'mask'"),
    (["m/a.png", "m/./a.png"], r"'m/a\.png' and 'm/\./a\.png' name one file in 'mask'"),  # one file, written twice
    (["m\\a.png", "m/a.png"], r"'m\\a\.png' and 'm/a\.png' name one file in 'mask'"),  # a Windows name: m/a.png
    (["m/a.png ", "m/a.png"], r"'m/a\.png ' and 'm/a\.png' name one file in 'mask'"),  # a space after it
    (["predictions.png", "b.png"], "'predictions.png' in 'mask' is a file kit writes itself"),  # the preview grid
    (["checkpoints/a.png", "b.png"], "'checkpoints/a.png' in 'mask' is a file kit writes itself"),
    (["a.png", None], "row 3 of 'mask' names no file"),  # read as "nan" before: a file named nan
])
def test_a_sample_naming_files_outside_the_output_or_twice_is_one_line(tmp_path, names, says):
    spec = config.load("tgs-salt-identification-challenge").spec
    for name in ("a", "b"):
        Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / f"{name}.png")
    sample = pd.DataFrame({"id": ["a", "b"], "mask": names})
    with pytest.raises(KitError, match=says) as e:
        masks.output(dataclasses.replace(spec, test_images=str(tmp_path)), tmp_path, sample, tmp_path / "sample_submission.csv",
                     "mask", print)
    assert str(e.value).startswith("sample_submission.csv: ") and "\n" not in str(e.value)
    sample["mask"] = ["m/a.png", "m/b.png"]
    assert masks.output(dataclasses.replace(spec, test_images=str(tmp_path)), tmp_path, sample, tmp_path / "s.csv", "mask",
                        print).layout == "files"


def test_mask_files_are_written_where_the_names_point(tmp_path):
    """A Windows name and a space after a name: each mask is written at the name's file (masks/a.png), in the format
    its extension says; before, the space made the format '.png ' a KeyError."""
    sample = pd.DataFrame({"id": ["a", "b"], "mask": ["masks\\a.png", "masks/b.tif "]})
    output = masks.Output("files", "mask", ["a", "b"], ["a.png", "b.png"], np.array([0, 1]), np.zeros(2, np.int64))
    data = SimpleNamespace(output=output, sample=sample, test=SimpleNamespace(sizes=np.array([[4, 5], [3, 3]])),
                           recipe={"kind": "binary", "prior": [0.0]})
    pred = np.zeros((2, 1, 4, 5), bool)
    pred[0, 0, 1:3, 2:4] = True
    assert segmentation_data.fill(data, pred, tmp_path) == sample["mask"].tolist()
    with Image.open(tmp_path / "masks" / "a.png") as a, Image.open(tmp_path / "masks" / "b.tif") as b:
        assert a.format == "PNG" and b.format == "TIFF" and b.size == (3, 3)
        assert np.array_equal(np.asarray(a), pred[0, 0].astype(np.uint8) * 255)
    assert sorted(p.name for p in (tmp_path / "masks").iterdir()) == ["a.png", "b.tif"]
