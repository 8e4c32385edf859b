"""The gallery's photo competitions with one number a photo, kept in a table beside one image per row: a retina's
grade (aptos2019), a tissue patch's finding (histopathologic), a pet photo's appeal (petfinder). Their MLE-bench
public folders (names, columns, id formats) at smoke size, each number showing in its picture."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke.gallery.pictures import hex_ids, of_class, save


def split(rng: np.random.Generator, n: int, test: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a shuffled table split in two, as MLE-bench's train_test_split of the original train.csv."""
    order = rng.permutation(n)
    return order[test:], order[:test]


def aptos(folder: Path, seed: int = 0, per_grade: int = 18, test: int = 14) -> None:
    """train.csv id_code,diagnosis (0 to 4; ids 12 hex digits), test.csv id_code, sample_submission.csv
    id_code,diagnosis=0, train_images/<id_code>.png and test_images/<id_code>.png. A grade is a colour and angle."""
    rng = np.random.default_rng(seed)
    grades = rng.permutation(np.repeat(np.arange(5), per_grade + 3))[:5 * per_grade + test]
    ids = np.array(hex_ids(rng, len(grades), 12))
    train, held = split(rng, len(grades), test)
    for rows, name in ((train, "train_images"), (held, "test_images")):
        for i in rows:
            save(of_class(rng, int(grades[i]), 5), folder / name / f"{ids[i]}.png")
    pd.DataFrame({"id_code": ids[train], "diagnosis": grades[train]}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"id_code": ids[held]}).to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"id_code": ids[held], "diagnosis": 0}).to_csv(folder / "sample_submission.csv", index=False)


def histopathologic(folder: Path, seed: int = 0, train: int = 80, test: int = 20) -> None:
    """train_labels.csv id,label (ids 40 hex digits), sample_submission.csv id,label=0, train/<id>.tif and
    test/<id>.tif (RGB TIFFs, 96 px in the competition, 32 here); no test table. About 2 in 5 with a tumour."""
    rng = np.random.default_rng(seed)
    ids = np.array(hex_ids(rng, train + test, 40))
    label = (rng.random(train + test) < 0.4).astype(int)
    rows, held = split(rng, train + test, test)
    for part, name in ((rows, "train"), (held, "test")):
        for i in part:
            save(of_class(rng, int(label[i]), 2), folder / name / f"{ids[i]}.tif")
    pd.DataFrame({"id": ids[rows], "label": label[rows]}).to_csv(folder / "train_labels.csv", index=False)
    pd.DataFrame({"id": ids[held], "label": 0}).to_csv(folder / "sample_submission.csv", index=False)


# the 12 photo flags petfinder's tables carry beside Pawpularity (0 or 1), in its column order
FLAGS = ("Subject Focus", "Eyes", "Face", "Near", "Action", "Accessory", "Group", "Collage", "Human", "Occlusion", "Info",
         "Blur")


def petfinder(folder: Path, seed: int = 0, train: int = 90, test: int = 16, looks: int = 5) -> None:
    """train.csv Id + the 12 flags + Pawpularity (1 to 100; ids 32 hex digits), test.csv without Pawpularity,
    sample_submission.csv Id,Pawpularity (uniform in [1, 100], 2 decimals), train/<Id>.jpg and test/<Id>.jpg.
    A photo's look (one of a few) sets its Pawpularity, give or take a few points."""
    rng = np.random.default_rng(seed)
    n = train + test
    look = rng.integers(0, looks, n)
    score = np.clip(np.rint(10 + 80 * look / (looks - 1) + rng.normal(0, 3, n)), 1, 100).astype(int)
    ids = np.array(hex_ids(rng, n, 32))
    rows, held = split(rng, n, test)
    for part, name in ((rows, "train"), (held, "test")):
        for i in part:
            save(of_class(rng, int(look[i]), looks), folder / name / f"{ids[i]}.jpg")
    table = pd.DataFrame({"Id": ids, **{f: rng.integers(0, 2, n) for f in FLAGS}, "Pawpularity": score})
    table.iloc[rows].to_csv(folder / "train.csv", index=False)
    table.iloc[held].drop(columns="Pawpularity").to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"Id": ids[held], "Pawpularity": np.random.default_rng(0).uniform(1, 100, test).round(2)}).to_csv(
        folder / "sample_submission.csv", index=False)
