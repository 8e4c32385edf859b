"""The gallery's mask competitions as MLE-bench's prepare.py writes them (contrails' record folders, uw-madison's
scans), and the traps of their graders' run-length decoding (kit.smoke.gallery.graders)."""
import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from kit import config, smoke
from kit.smoke import gallery
from kit.smoke.gallery import graders

CONTRAILS, UW = "google-research-identify-contrails-reduce-global-warming", "uw-madison-gi-tract-image-segmentation"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("masks")
    return {slug: gallery.write(slug, root / slug) for slug in (CONTRAILS, UW)}


def answers(slug, written, tmp_path):
    return graders.read(smoke.sample_path(config.load(slug).spec, written[slug], tmp_path))


def refused(slug, frame, truth, match, tmp_path):
    frame.to_csv(tmp_path / "sub.csv", index=False)  # as the grader reads it back
    with pytest.raises(graders.Invalid, match=match):
        graders.CHECKS[slug](graders.read(tmp_path / "sub.csv"), truth)


def test_contrails_records_hold_the_bands_and_masks_prepare_copies(written):
    folder = written[CONTRAILS]
    train = [r["record_id"] for r in json.loads((folder / "train_metadata.json").read_text())]
    assert sorted(p.name for p in (folder / "train").iterdir()) == sorted(train)
    record = folder / "train" / train[0]
    names = [f"band_{b:02d}.npy" for b in range(8, 17)]
    assert sorted(p.name for p in record.iterdir()) == sorted(names + ["human_individual_masks.npy", "human_pixel_masks.npy"])
    band, mask = np.load(record / "band_11.npy"), np.load(record / "human_pixel_masks.npy")
    assert band.dtype == np.float32 and band.shape[2] == 8 and mask.shape == (*band.shape[:2], 1)
    assert np.load(record / "human_individual_masks.npy").ndim == 4
    sample = pd.read_csv(folder / "sample_submission.csv", dtype=str)
    assert set(sample["encoded_pixels"]) <= {"1 3 10 5", "-"} and sample["record_id"].str.fullmatch(r"\d{18,19}").all()
    assert all(sorted(p.name for p in (folder / "test" / r).iterdir()) == names for r in sample["record_id"])


def test_uw_slices_are_16_bit_pngs_under_case_day_scans(written):
    folder = written[UW]
    train = pd.read_csv(folder / "train.csv")
    assert (train.groupby("id")["class"].apply(tuple) == ("large_bowel", "small_bowel", "stomach")).all()
    assert train["segmentation"].isna().any() and train["segmentation"].notna().any()
    case, day, _, z = train["id"].iloc[0].split("_")
    (path,) = (folder / "train" / case / f"{case}_{day}" / "scans").glob(f"slice_{z}_*_*_1.50_1.50.png")
    with Image.open(path) as im:
        assert im.mode in ("I;16", "I") and np.asarray(im).max() > 255
    test_cases = {i.split("_")[0] for i in pd.read_csv(folder / "test.csv")["id"]}
    assert test_cases & {i.split("_")[0] for i in train["id"]}  # a training case's later day is held out too


def test_the_mask_graders_traps(written, tmp_path):
    sky = answers(CONTRAILS, written, tmp_path / "c")
    assert graders.CHECKS[CONTRAILS](sky.assign(encoded_pixels="-"), sky) is None  # "-" is no mask
    refused(CONTRAILS, sky.assign(encoded_pixels=np.nan), sky, "not text", tmp_path)  # a blank cell reads as NaN
    refused(CONTRAILS, sky.assign(encoded_pixels="5 3 1 2"), sky, "out of order", tmp_path)
    refused(CONTRAILS, sky.assign(encoded_pixels="1 5 3 2"), sky, "overlapping", tmp_path)
    refused(CONTRAILS, sky.assign(encoded_pixels="1020 10"), sky, "runs past a 32 x 32 image", tmp_path)
    uw = answers(UW, written, tmp_path / "u")
    assert graders.CHECKS[UW](uw.assign(predicted=np.nan), uw) is None  # its grader fills a blank code with ""
    refused(UW, uw.iloc[::-1], uw, "by position", tmp_path)
    refused(UW, uw.assign(predicted="1 0"), uw, "below 1", tmp_path)
