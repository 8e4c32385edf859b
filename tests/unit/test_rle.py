"""Run-length codes as Kaggle's graders read them: column-major, 1-indexed, start/length pairs, empty = no mask."""
import numpy as np
import pytest
from graders import rle_decode
from PIL import Image

from kit.data import canvas, rle
from kit.errors import KitError


def test_column_major_and_one_indexed():
    mask = np.zeros((3, 4), bool)
    mask[0, 0] = True  # pixel 1
    mask[1:3, 0] = True  # pixels 2-3: one run down the first column
    mask[0, 1] = True  # pixel 4: the top of the second column, touching the first run
    mask[2, 3] = True  # the last pixel, 12
    assert rle.encode(mask) == "1 4 12 1"
    assert np.array_equal(rle.decode("1 4 12 1", 3, 4, "x"), mask)


def test_row_major_counts_along_each_row():
    mask = np.zeros((3, 4), bool)
    mask[0, :2] = True  # pixels 1-2
    mask[1, 0] = True  # pixel 5: the start of the second row
    mask[2, 3] = True  # the last pixel, 12
    assert rle.encode(mask, "row") == "1 2 5 1 12 1"
    assert np.array_equal(rle.decode("1 2 5 1 12 1", 3, 4, "x", "row"), mask)
    rng = np.random.default_rng(0)
    mask = rng.random((7, 5)) < 0.4
    assert np.array_equal(rle.decode(rle.encode(mask, "row"), 7, 5, "x", "row"), mask)
    assert rle.encode(mask, "row") == rle.encode(mask.T)  # row by row is column by column of the transpose


def test_the_decoded_cache_is_not_reused_for_the_other_order(tmp_path):
    """A Carvana user told to set rle_order = "row" reruns with the same cache folder: the masks are decoded
    again, not read back transposed."""
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "a.png")
    built = {}
    for order in ("column", "row"):
        masks = canvas.Masks(codes=(((0, "1 4"),),), order=order)
        found = canvas.build([str(tmp_path / "a.png")], masks, np.array([[4, 4]]), (4, 4), tmp_path / "cache", 1,
                             log=lambda line: None)
        built[order] = found.read(np.array([0]))[1][0, ..., 0].astype(bool)
    assert built["column"][:, 0].all() and built["column"].sum() == 4  # the first column
    assert built["row"][0, :].all() and built["row"].sum() == 4  # the first row


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_and_the_graders_decoder_agree(seed):
    rng = np.random.default_rng(seed)
    h, w = rng.integers(1, 40, 2)
    mask = rng.random((h, w)) < rng.uniform(0, 1)
    mask[:, 0] |= seed % 2 == 0  # touching the left and bottom borders
    mask[-1, :] |= seed % 3 == 0
    code = rle.encode(mask)
    assert np.array_equal(rle.decode(code, h, w, "x"), mask)
    assert np.array_equal(rle_decode(code, h, w), mask)
    assert rle.problem(code) == ""


def test_empty_and_full_masks():
    assert rle.encode(np.zeros((5, 7), bool)) == ""
    for empty in ("", "  ", None, float("nan")):
        assert not rle.decode(empty, 5, 7, "x").any()
    assert rle.encode(np.ones((5, 7), bool)) == "1 35"
    assert rle.decode("1 35", 5, 7, "x").all()


def test_a_code_past_the_end_is_one_line():
    with pytest.raises(KitError, match=r"^train\.csv row 3: run-length code runs past the image's end \(pair 2, '30 7', "
                                       r"reaches pixel 36 of 35 in a 5 x 7 image\)"):
        rle.decode("1 2 30 7", 5, 7, "train.csv row 3")


@pytest.mark.parametrize("code, why", [("1 2 3", "odd count"), ("a b", "not whole numbers"), ("0 3", "start below 1"),
                                       ("4 0", "length below 1")])
def test_malformed_codes_are_one_line(code, why):
    with pytest.raises(KitError, match=why):
        rle.decode(code, 5, 7, "x")


def test_problems_the_graders_reject():
    assert rle.problem("5 2 1 2") and rle.problem("1 5 3 2") and rle.problem(3) and rle.problem("1 2 3")
    assert rle.problem("1 2 3 2") == "" and rle.problem("") == ""
