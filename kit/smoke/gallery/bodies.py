"""The gallery's MRI segmentation in its MLE-bench public layout at smoke size: uw-madison-gi-tract-image-segmentation's
scans, each slice a 16-bit grey PNG at train/<case>/<case>_<day>/scans/slice_<NNNN>_<width>_<height>_1.50_1.50.png
(test/ the same), whole cases and a training case's later days in test/ as prepare.py splits them; train.csv
id,class,segmentation (a row per slice and organ, the code empty where the organ is absent), test.csv id,class,
and sample_submission.csv id,class,predicted, every code "1 1 5 2". The organs are ellipses of their own
brightness, far above 255 (a reader that clips to 8 bits sees them all alike), each in its own region, growing and
shrinking through a scan's slices as organs do."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.data import rle

ORGANS = ("large_bowel", "small_bowel", "stomach")  # train.csv's classes, in its order for each slice
BRIGHTNESS = {"large_bowel": 1400.0, "small_bowel": 2200.0, "stomach": 3000.0}  # a 16-bit scan's grey levels
PLACES = {"large_bowel": (0.3, 0.25), "small_bowel": (0.7, 0.5), "stomach": (0.3, 0.75)}  # each organ's region


def organ_mask(rng: np.random.Generator, h: int, w: int, depth: float, place: tuple[float, float]) -> np.ndarray:
    """An ellipse at `place` (fractions of the image) whose radii follow `depth` (0 to 1 through the organ)."""
    if depth <= 0:
        return np.zeros((h, w), bool)
    rows, cols = np.mgrid[0:h, 0:w]
    ry, rx = (0.2 * h + rng.uniform(-0.5, 0.5)) * depth, (0.17 * w + rng.uniform(-0.5, 0.5)) * depth
    return ((rows - place[0] * h) / max(ry, 0.5)) ** 2 + ((cols - place[1] * w) / max(rx, 0.5)) ** 2 <= 1.0


def scan(rng: np.random.Generator, folder: Path, case: str, day: str, slices: int, h: int, w: int) -> list[dict]:
    """One day's scan of a case: its slices' PNGs, and its train.csv rows."""
    where = folder / case / f"{case}_{day}" / "scans"
    where.mkdir(parents=True)
    places = {o: (y + rng.uniform(-0.05, 0.05), x + rng.uniform(-0.05, 0.05)) for o, (y, x) in PLACES.items()}
    spans = {o: sorted(rng.uniform(0.05, 0.95, 2)) for o in ORGANS}  # where each organ is, through the scan
    rows = []
    for z in range(1, slices + 1):
        at = z / (slices + 1)
        pixels = rng.normal(500.0, 60.0, (h, w))
        for organ in ORGANS:
            lo, hi = spans[organ]
            depth = 0.0 if not lo < at < hi else 1.0 - abs(2 * (at - lo) / (hi - lo) - 1) ** 2
            mask = organ_mask(rng, h, w, depth, places[organ])
            pixels[mask] = BRIGHTNESS[organ] + rng.normal(0, 60.0, int(mask.sum()))
            rows.append({"id": f"{case}_{day}_slice_{z:04d}", "class": organ, "segmentation": rle.encode(mask)})
        png = np.clip(pixels, 0, 65535).astype(np.uint16)
        Image.fromarray(png).save(where / f"slice_{z:04d}_{w}_{h}_1.50_1.50.png")
    return rows


def uw_madison(folder: Path, seed: int = 0, cases: int = 5, slices: int = 12, h: int = 36, w: int = 40) -> None:
    """Cases of one to three days; the last case whole, and the third day of the first, in test/ (prepare.py moves
    whole cases and each training case's days past its fourth)."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(cases):
        case = f"case{int(rng.integers(2, 150)) + 150 * c}"
        days = sorted(rng.choice(np.arange(1, 40), 3 if c == 0 else 2, replace=False))
        for k, d in enumerate(days):
            held = c == cases - 1 or (c == 0 and k == 2)
            rows = scan(rng, folder / ("test" if held else "train"), case, f"day{d}", slices, h, w)
            (test if held else train).extend(rows)
    frame = pd.DataFrame(train)
    frame.to_csv(folder / "train.csv", index=False, na_rep="")
    held = pd.DataFrame(test)
    held[["id", "class"]].to_csv(folder / "test.csv", index=False, na_rep="")
    held.assign(predicted="1 1 5 2")[["id", "class", "predicted"]].to_csv(folder / "sample_submission.csv", index=False,
                                                                       na_rep="")
