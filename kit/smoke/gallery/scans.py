"""The gallery's medical image competitions in their MLE-bench public layouts at smoke size: RANZCR's chest x-rays
(a label column per tube and its placement, annotations beside) and SIIM-ISIC's skin lesions (JPEGs under jpeg/
beside the DICOM and TFRecord copies kit does not read, patients with several lesions). Each label shows in its
picture."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.smoke.gallery.pictures import hex_id, of_class, save

RANZCR = ["ETT - Abnormal", "ETT - Borderline", "ETT - Normal", "NGT - Abnormal", "NGT - Borderline",
          "NGT - Incompletely Imaged", "NGT - Normal", "CVC - Abnormal", "CVC - Borderline", "CVC - Normal",
          "Swan Ganz Catheter Present"]
RANZCR_SCORED = RANZCR[:9]  # mlebench's classes.py: the sample submission's and the grader's nine
# (tube, how often an x-ray shows it, its placements' odds): one placement a tube at most, as in the raw table
TUBES = (("ETT", 0.5, {"Abnormal": 0.2, "Borderline": 0.3, "Normal": 0.5}),
         ("NGT", 0.5, {"Abnormal": 0.2, "Borderline": 0.2, "Incompletely Imaged": 0.2, "Normal": 0.4}),
         ("CVC", 0.9, {"Abnormal": 0.25, "Borderline": 0.3, "Normal": 0.45}))


def x_ray(rng: np.random.Generator, labels: list[int], size: int = 32) -> Image.Image:
    """A dark, noisy chest with one bright line per tube placement: label k's row and slope."""
    pixels = np.full((size, size), 60.0) + rng.normal(0, 10, (size, size))
    xs = np.arange(size)
    for k in labels:
        ys = np.clip((2 + 2.6 * k + (k % 3 - 1) * 0.4 * xs / 3).astype(int), 0, size - 1)
        pixels[ys, xs] = 230
        pixels[np.clip(ys + 1, 0, size - 1), xs] = 200
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).convert("RGB")


def ranzcr(folder: Path, seed: int = 0, train: int = 120, test: int = 20, patients: int = 50) -> None:
    """train.csv StudyInstanceUID, the 11 label columns (0/1), PatientID; train_annotations.csv
    StudyInstanceUID,label,data (a tube's points) for some training x-rays; train/<uid>.jpg and test/<uid>.jpg
    (uids dotted DICOM ids); sample_submission.csv StudyInstanceUID + the 9 scored columns at 0."""
    rng = np.random.default_rng(seed)
    n = train + test
    uids = [f"1.2.826.0.1.3680043.8.498.{int(rng.integers(1, 10))}{''.join(map(str, rng.integers(0, 10, 37)))}"
            for _ in range(n)]
    owners = [hex_id(rng, 9) for _ in range(patients)]
    rows, notes = [], []
    for i, uid in enumerate(uids):
        row = dict.fromkeys(RANZCR, 0)
        for tube, shown, odds in TUBES:
            if rng.random() < shown:
                row[f"{tube} - {rng.choice(list(odds), p=list(odds.values()))}"] = 1
        row["Swan Ganz Catheter Present"] = int(rng.random() < 0.05)
        on = [k for k, c in enumerate(RANZCR) if row[c]]
        save(x_ray(rng, on), folder / ("train" if i < train else "test") / f"{uid}.jpg")
        rows.append({"StudyInstanceUID": uid, **row, "PatientID": owners[int(rng.integers(patients))]})
        if i < train and on and rng.random() < 0.4:
            points = [[int(v) for v in rng.integers(0, 2800, 2)] for _ in range(3)]
            notes.append({"StudyInstanceUID": uid, "label": RANZCR[on[0]], "data": str(points)})
    table = pd.DataFrame(rows)
    table[:train].to_csv(folder / "train.csv", index=False)
    pd.DataFrame(notes).to_csv(folder / "train_annotations.csv", index=False)
    table[train:][["StudyInstanceUID", *RANZCR_SCORED]].assign(**dict.fromkeys(RANZCR_SCORED, 0)).to_csv(
        folder / "sample_submission.csv", index=False)


SITES = ("torso", "lower extremity", "upper extremity", "head/neck", "palms/soles", "oral/genital")
DICOM_PREAMBLE = bytes(128) + b"DICM"  # a DICOM file's first 132 bytes; kit reads the JPEG copies


def siim_isic(folder: Path, seed: int = 0, train: int = 96, test: int = 20, patients: int = 24) -> None:
    """train.csv image_name,patient_id,sex,age_approx,anatom_site_general_challenge,diagnosis,benign_malignant,
    target; test.csv its first five columns; sample_submission.csv image_name,target=0; jpeg/train/<image_name>.jpg
    and jpeg/test/ (what kit reads), train/ and test/ with a placeholder <image_name>.dcm each, and tfrecords/
    (trainNN-<count>.tfrec, testNN-<count>.tfrec placeholders). A quarter malignant (1.8% on Kaggle: enough
    for two folds' AUC at smoke size); some sexes, ages and sites blank, as in the raw table."""
    rng = np.random.default_rng(seed)
    n = train + test
    names = [f"ISIC_{k:07d}" for k in rng.choice(9_999_999, n, replace=False)]
    owners = [f"IP_{k:07d}" for k in rng.choice(9_999_999, patients, replace=False)]
    owner = rng.integers(patients, size=n)
    target = (rng.random(n) < 0.25).astype(int)
    diagnosis = np.where(target == 1, "melanoma", rng.choice(["unknown", "nevus", "seborrheic keratosis"], n))
    table = pd.DataFrame({
        "image_name": names, "patient_id": [owners[k] for k in owner],
        "sex": [None if k % 11 == 0 else ("male", "female")[k % 2] for k in owner],
        "age_approx": np.where(rng.random(n) < 0.05, np.nan, rng.integers(2, 18, n) * 5.0),
        "anatom_site_general_challenge": [None if rng.random() < 0.08 else SITES[int(rng.integers(6))] for _ in range(n)],
        "diagnosis": diagnosis, "benign_malignant": np.where(target == 1, "malignant", "benign"), "target": target})
    hidden = np.zeros(n, bool)
    hidden[rng.choice(n, test, replace=False)] = True  # prepare.py: two TFRecord files' images, in the raw order
    for i, name in enumerate(names):
        split = "test" if hidden[i] else "train"
        save(of_class(rng, int(target[i]), 2), folder / "jpeg" / split / f"{name}.jpg")
        (folder / split).mkdir(exist_ok=True)
        (folder / split / f"{name}.dcm").write_bytes(DICOM_PREAMBLE)
    records = folder / "tfrecords"
    records.mkdir()
    for name in (f"train00-{train // 2}", f"train01-{train - train // 2}", f"test00-{test}"):
        (records / f"{name}.tfrec").write_bytes(bytes(16))
    table[~hidden].to_csv(folder / "train.csv", index=False)
    table[hidden].iloc[:, :5].to_csv(folder / "test.csv", index=False)
    table[hidden][["image_name"]].assign(target=0).to_csv(folder / "sample_submission.csv", index=False)
