"""The gallery's detection competitions in their MLE-bench public layouts at smoke size: vinbigdata's chest x-rays
(DICOM files under train/ and test/, 12-bit, some MONOCHROME1 as its scanners wrote them, train.csv one row a
radiologist's box, "No finding" rows without one). Each finding shows in its picture as a bright shape of its class."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

VINBIGDATA = ["Aortic enlargement", "Atelectasis", "Calcification", "Cardiomegaly", "Consolidation", "ILD",
              "Infiltration", "Lung Opacity", "Nodule/Mass", "Other lesion", "Pleural effusion", "Pleural thickening",
              "Pneumothorax", "Pulmonary fibrosis"]
NO_FINDING = 14
SHOWN = (0, 8)  # the smoke's two findings: a bright square (aortic enlargement), a small bright disc (nodule/mass)


def write_dicom(path: Path, pixels: np.ndarray, photometric: str = "MONOCHROME2", window: bool = False) -> None:
    """(H, W) 12-bit values as an uncompressed DICOM file (MONOCHROME1: white is 0, so the values are turned over)."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"  # digital X-ray
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    stored = 4095 - pixels if photometric == "MONOCHROME1" else pixels
    if window:
        ds.WindowCenter, ds.WindowWidth = 2048, 4096
    ds.PixelData = np.clip(stored, 0, 4095).astype(np.uint16).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)


def x_ray(rng: np.random.Generator, h: int, w: int, findings: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """A dark noisy chest (12-bit) with each finding drawn bright: class 0 a filled square, class 8 a disc."""
    pixels = 900 + rng.normal(0, 120, (h, w))
    yy, xx = np.mgrid[0:h, 0:w]
    for k, (x0, y0, x1, y1) in findings:
        if k == SHOWN[0]:
            pixels[int(y0):int(y1), int(x0):int(x1)] = 3400 + rng.normal(0, 60, (int(y1) - int(y0), int(x1) - int(x0)))
        else:
            cx, cy, r = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2
            pixels[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = 2900
    return pixels


def findings_of(rng: np.random.Generator, h: int, w: int) -> list[tuple[int, np.ndarray]]:
    out = []
    for k in SHOWN:
        if rng.random() < 0.55:
            side = rng.uniform(0.3, 0.45) * min(h, w) if k == SHOWN[0] else rng.uniform(0.22, 0.3) * min(h, w)
            x0, y0 = rng.uniform(0, w - side), rng.uniform(0, h - side)
            out.append((k, np.array([x0, y0, x0 + side, y0 + side])))
    return out


def vinbigdata(folder: Path, seed: int = 0, train: int = 48, test: int = 12) -> None:
    """train.csv image_id, class_name, class_id, rad_id, x_min, y_min, x_max, y_max: each finding drawn by three of
    the radiologists R8 .. R10 (their boxes a few pixels apart, fused in training), an image without findings a "No
    finding" row (class 14, no box) from each; train/<id>.dicom and test/<id>.dicom (12-bit, a quarter MONOCHROME1,
    sizes 96 to 128 px); sample_submission.csv image_id, PredictionString "14 1 0 0 1 1"."""
    rng = np.random.default_rng(seed)
    ids = ["".join(rng.choice(list("0123456789abcdef"), 32)) for _ in range(train + test)]
    rows = []
    for i, image_id in enumerate(ids):
        h, w = int(rng.integers(96, 129)), int(rng.integers(96, 129))
        found = findings_of(rng, h, w)
        photometric = "MONOCHROME1" if rng.random() < 0.25 else "MONOCHROME2"
        split = "train" if i < train else "test"
        write_dicom(folder / split / f"{image_id}.dicom", x_ray(rng, h, w, found), photometric, window=i % 2 == 0)
        if split == "test":
            continue
        readers = rng.choice(["R8", "R9", "R10"], 3, replace=False)
        for rad in readers:
            if not found:
                rows.append({"image_id": image_id, "class_name": "No finding", "class_id": NO_FINDING, "rad_id": rad,
                             "x_min": np.nan, "y_min": np.nan, "x_max": np.nan, "y_max": np.nan})
            for k, box in found:
                b = np.clip(box + rng.normal(0, 1.0, 4), 0, [w, h, w, h]).round(1)
                rows.append({"image_id": image_id, "class_name": VINBIGDATA[k], "class_id": k, "rad_id": rad,
                             "x_min": b[0], "y_min": b[1], "x_max": b[2], "y_max": b[3]})
    pd.DataFrame(rows).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"image_id": ids[train:], "PredictionString": "14 1 0 0 1 1"}).to_csv(
        folder / "sample_submission.csv", index=False)
