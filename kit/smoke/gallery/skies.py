"""The gallery's satellite segmentation in its MLE-bench public layout at smoke size: contrails' GOES-16 records
(google-research-identify-contrails-reduce-global-warming), each a folder of band_08.npy to band_16.npy (height,
width, 8 time steps of brightness temperature, float32 kelvin) with, for training records,
human_pixel_masks.npy ((height, width, 1) int32, the labelled fifth step's) and human_individual_masks.npy
((height, width, 1, labellers) int32); train/, test/ (bands only) and validation/ (the original validation split,
copied as it is), train_metadata.json and validation_metadata.json, and sample_submission.csv
record_id,encoded_pixels,height,width whose codes are "1 3 10 5" or "-" at random. A contrail is a cold,
thin, straight cloud: band 14 colder along a line and band 15 - band 14 warmer there, drifting between steps,
as the ash false colour shows it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

BANDS = range(8, 17)
STEPS, LABELLED = 8, 4  # time steps per band; the labelled one (0-based)
WAVES = {8: 235.0, 9: 245.0, 10: 255.0, 11: 283.0, 12: 260.0, 13: 285.0, 14: 284.0, 15: 282.0, 16: 268.0}  # K


def contrails(rng: np.random.Generator, size: int) -> list[tuple[float, float, float]]:
    """Each contrail's line: (row at the left edge, slope, drift per step); none for a third of the records."""
    n = 0 if rng.random() < 0.35 else int(rng.integers(1, 3))
    return [(float(rng.uniform(4, size - 4)), float(rng.uniform(-0.6, 0.6)), float(rng.uniform(-1, 1))) for _ in range(n)]


def line_mask(lines: list[tuple[float, float, float]], size: int, step: int) -> np.ndarray:
    """(size, size) bool: pixels within a pixel of each line, the lines drifted to `step`."""
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    mask = np.zeros((size, size), bool)
    for row, slope, drift in lines:
        centre = row + drift * (step - LABELLED) + slope * cols
        mask |= np.abs(rows - centre) / np.sqrt(1 + slope * slope) < 1.1
    return mask


def record(rng: np.random.Generator, folder: Path, size: int, labelled: bool) -> None:
    """One record's band files (and, where `labelled`, its masks) under `folder`."""
    folder.mkdir(parents=True)
    lines = contrails(rng, size)
    masks = np.stack([line_mask(lines, size, t) for t in range(STEPS)], -1)  # (H, W, T)
    ground = rng.normal(0, 1.5, (size, size, 1)) + rng.normal(0, 0.6, (size, size, STEPS))
    for band in BANDS:
        values = WAVES[band] + ground
        if band == 14:
            values = values - 12.0 * masks  # ice is colder at 11 um
        elif band == 15:
            values = values - 9.5 * masks  # and less so at 12 um: band 15 - band 14 rises on a contrail
        elif band == 11:
            values = values - 13.0 * masks
        np.save(folder / f"band_{band:02d}.npy", values.astype(np.float32))
    if labelled:
        truth = masks[:, :, LABELLED : LABELLED + 1].astype(np.int32)
        np.save(folder / "human_pixel_masks.npy", truth)
        labellers = np.stack([truth & (rng.random(truth.shape) < 0.9) for _ in range(3)], -1).astype(np.int32)
        np.save(folder / "human_individual_masks.npy", labellers)  # (H, W, 1, labellers)


def metadata(rng: np.random.Generator, ids: list[str]) -> list[dict]:
    """The metadata files' records: each record's id, projection and place on it, and time."""
    return [{"record_id": i, "projection_wkt": "PROJCS[\"unknown\",GEOGCS[\"unknown\"]]",
             "row_min": float(rng.uniform(-4e6, 4e6)), "row_size": 2000.0,
             "col_min": float(rng.uniform(-4e6, 4e6)), "col_size": 2000.0,
             "timestamp": 1.6e9 + float(rng.integers(0, 10**7))} for i in ids]


def contrails_dataset(folder: Path, seed: int = 0, train: int = 60, test: int = 12, validation: int = 4,
                      size: int = 32) -> None:
    """train/<record_id>/ and validation/<record_id>/ (bands and masks), test/<record_id>/ (bands), the two
    metadata files and sample_submission.csv, record ids of 18 or 19 digits as the competition's."""
    rng = np.random.default_rng(seed)
    ids = [str(int(rng.integers(10**17, 9 * 10**18))) for _ in range(train + test + validation)]
    for i, rid in enumerate(ids):
        split = "train" if i < train else "test" if i < train + test else "validation"
        record(rng, folder / split / rid, size, split != "test")
    (folder / "train_metadata.json").write_text(json.dumps(metadata(rng, ids[:train])))
    (folder / "validation_metadata.json").write_text(json.dumps(metadata(rng, ids[train + test :])))
    tests = ids[train : train + test]
    codes = [str(rng.choice(["1 3 10 5", "-"])) for _ in tests]
    pd.DataFrame({"record_id": tests, "encoded_pixels": codes, "height": size, "width": size}).to_csv(
        folder / "sample_submission.csv", index=False)
