"""Contrails' records read as images (kit.data.bands): the ash false colour of the labelled step, raw bands, one line
for each bad band file; `[data] bands` and a mask file inside a record's folder; "-" for an empty mask where the
sample writes it (kit.data.rle)."""
import numpy as np
import pandas as pd
import pytest

from kit.data import bands, rle
from kit.errors import KitError
from kit.spec import Spec

BASE = {"slug": "contrails", "template": "segmentation", "metric": "global_dice"}


def stack(folder, values: dict[int, float], shape=(4, 6, 8)):
    folder.mkdir(parents=True, exist_ok=True)
    for band, kelvin in values.items():
        array = np.full(shape, 250.0, np.float32)
        array[..., 4] = kelvin  # only the labelled step holds these
        np.save(folder / f"band_{band:02d}.npy", array)
    return str(folder)


def test_ash_is_the_false_colour_of_bands_11_14_15_at_the_labelled_step(tmp_path):
    record = stack(tmp_path / "r", {11: 280.0, 14: 283.0, 15: 282.0})
    reader = bands.Bands("ash", 4)
    assert reader.header(record) == (4, 6, 3)
    image = reader.read(record)
    # red (15 - 14 = -1) over [-4, 2], green (14 - 11 = 3) over [-4, 5], blue 283 over [243, 303]
    expected = [round(3 / 6 * 255), round(7 / 9 * 255), round(40 / 60 * 255)]
    assert image.dtype == np.uint8 and image.shape == (4, 6, 3) and (image == expected).all()
    raw = bands.Bands("8 11 15", 0).read(stack(tmp_path / "s", {8: 250.0, 11: 250.0, 15: 250.0}))
    assert (raw == round(70 / 140 * 255)).all()  # step 0's 250 K over [180, 320]


@pytest.mark.parametrize("fault, says", [
    ("missing", r"band_15\.npy: no such band file; \[data\] bands = \"ash\" reads band_XX\.npy for bands 11, 14, 15"),
    ("flat", r"band_15\.npy: a band is \(height, width, time steps\) of numbers with step 4 \(\[data\] band_frame\) "
             r"among them, and this one is float32 \(4, 6\)$"),
    ("short", r"band_15\.npy: a band is .* and this one is float32 \(4, 6, 3\)$"),
    ("size", r"band_15\.npy: 5 x 6 px, where band_11\.npy is 4 x 6; a record's bands share one size$"),
    ("text", r"band_15\.npy: not a \.npy array"),
], ids=["missing", "flat", "short", "size", "text"])
def test_a_bad_band_file_is_one_line_naming_it(tmp_path, fault, says):
    record = stack(tmp_path / "r", {11: 280.0, 14: 283.0})
    path = tmp_path / "r" / "band_15.npy"
    shapes = {"flat": (4, 6), "short": (4, 6, 3), "size": (5, 6, 8)}
    if fault in shapes:
        np.save(path, np.zeros(shapes[fault], np.float32))
    elif fault == "text":
        path.write_text("not an array")
    with pytest.raises(KitError, match=says) as caught:
        bands.Bands("ash", 4).header(record)
    assert "\n" not in str(caught.value)


def test_the_bands_a_config_names_and_a_mask_file_inside_each_record():
    assert Spec.from_dict({**BASE, "bands": "8,11,15"}).bands == "8 11 15"
    spec = Spec.from_dict({**BASE, "bands": "ash", "band_frame": 4, "mask_ext": "/human_pixel_masks.npy"})
    assert (spec.bands, spec.mask_ext) == ("ash", "/human_pixel_masks.npy")
    for wrong in ("11 14", "11 14 17", "rgb"):
        with pytest.raises(KitError, match=r"bands = .* is not \"ash\" nor three band numbers from 1 to 16"):
            Spec.from_dict({**BASE, "bands": wrong})
    with pytest.raises(KitError, match=r"bands is not read by the cnn template"):
        Spec.from_dict({"slug": "x", "template": "cnn", "bands": "ash"})


def test_an_empty_mask_is_written_as_the_sample_writes_it():
    dashed, blank = pd.Series(["1 3 10 5", "-"]), pd.Series(["1 1 5 2", ""])
    assert (rle.empty_code(dashed), rle.empty_code(blank)) == ("-", "")
    rle.check_submission(pd.Series(["-", "3 2"]), dashed, None)
    with pytest.raises(KitError, match=r"^submission row 3: run-length code '' is blank where the sample writes an empty "
                                       r"mask as '-'$"):
        rle.check_submission(pd.Series(["3 2", ""]), dashed, None)
    with pytest.raises(KitError, match=r"^submission row 3: run-length code '-' is not whole numbers"):
        rle.check_submission(pd.Series(["3 2", "-"]), blank, None)


def test_reduce_and_layers_are_checked_at_the_config():
    assert Spec.from_dict({**BASE, "reduce": 4, "layers": [29, 32, 35]}).layers == (29, 32, 35)
    with pytest.raises(KitError, match="reduce"):
        Spec.from_dict({**BASE, "reduce": 100})
    assert Spec.from_dict({**BASE, "layers": list(range(24, 40))}).layers == tuple(range(24, 40))  # a slab
    for bad in ([1, 1], [-1], [2.5]):
        with pytest.raises(KitError, match="layers"):
            Spec.from_dict({**BASE, "layers": bad})
    with pytest.raises(KitError, match="more than one of bands, slices and layers is set"):
        Spec.from_dict({**BASE, "bands": "ash", "layers": [3]})
