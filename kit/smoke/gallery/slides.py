"""The gallery's gigapixel segmentation in its MLE-bench public layouts at smoke size, written with tifffile:

- hubmap-kidney-segmentation: train/<id>.tiff with <id>.json and <id>-anatomical-structure.json beside it, the same
  under test/ (and test/sample_submission.csv, which prepare.py copies there too), train.csv id,encoding (the
  glomeruli's column-major run-length code of the whole slide), HuBMAP-20-dataset_information.csv and
  sample_submission.csv id,predicted (blank). The slides come in the layouts the competition's do: RGB in strips,
  tiled and compressed with a pyramid level (a SubIFD), and channel-first pages with leading axes of one
  (1, 1, 3, H, W). Kidney tissue is pink on a white slide; a glomerulus is a round, darker purple tuft in it.
- vesuvius-challenge-ink-detection: train/1 and train/2, each surface_volume/00.tif to 64.tif (16-bit layers),
  mask.png (the fragment), inklabels.png, inklabels_rle.csv and ir.png; test/a with surface_volume and mask.png only;
  sample_submission.csv Id,Predicted ("1 1 5 1"). Ink is strokes that raise the middle layers' values a little.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.data import rle

LAYERS = 65  # a fragment's surface volume: 00.tif to 64.tif
INK_LAYERS = range(26, 38)  # where the strokes show: the volume's middle


def _tifffile():
    import tifffile  # a dev extra (pyproject): the smoke side writes what Kaggle's image reads

    return tifffile


def _blobs(rng: np.random.Generator, height: int, width: int, tissue: np.ndarray, count: int) -> np.ndarray:
    """(height, width) bool: `count` round tufts of 14 to 22 px radius (4 to 5 at 1/4) centred in the tissue."""
    rows, cols = np.mgrid[0:height, 0:width]
    mask = np.zeros((height, width), bool)
    inside = np.argwhere(tissue[24:-24, 24:-24]) + 24
    for r, c in inside[rng.choice(len(inside), size=min(count, len(inside)), replace=False)]:
        mask |= (rows - r) ** 2 + (cols - c) ** 2 < rng.uniform(14, 22) ** 2
    return mask


def slide(rng: np.random.Generator, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(RGB uint8 slide, glomeruli mask): a pink ellipse of tissue on white, purple tufts in it. The ellipse spans
    0.6 of the slide each way: its corners are bare glass, tiles that `tissue_min` drops."""
    rows, cols = np.mgrid[0:height, 0:width]
    tissue = ((rows - height / 2) / (height * 0.3)) ** 2 + ((cols - width / 2) / (width * 0.3)) ** 2 < 1
    mask = _blobs(rng, height, width, tissue, int(rng.integers(3, 7))) & tissue
    image = np.full((height, width, 3), 242.0) + rng.normal(0, 3, (height, width, 3))
    image[tissue] = np.array([225.0, 150.0, 190.0]) + rng.normal(0, 10, (int(tissue.sum()), 3))
    image[mask] = np.array([150.0, 70.0, 140.0]) + rng.normal(0, 12, (int(mask.sum()), 3))
    return np.clip(image, 0, 255).astype(np.uint8), mask


def write_slide(path: Path, image: np.ndarray, layout: str) -> None:
    """One slide as the competition's come: "strips" (H, W, 3), "pyramid" (tiled, zlib, a half-size SubIFD) or
    "channel_first" (1, 1, 3, H, W: a page per channel)."""
    tifffile = _tifffile()
    if layout == "pyramid":
        with tifffile.TiffWriter(path) as w:
            w.write(image, tile=(128, 128), subifds=1, compression="zlib", photometric="rgb")
            w.write(image[::2, ::2], tile=(128, 128), subfiletype=1, compression="zlib", photometric="rgb")
    elif layout == "channel_first":
        tifffile.imwrite(path, image.transpose(2, 0, 1)[None, None], photometric="minisblack")
    else:
        tifffile.imwrite(path, image, photometric="rgb", rowsperstrip=16)


def hubmap(folder: Path, seed: int = 0, train: int = 6, test: int = 2, height: int = 384, width: int = 512) -> None:
    """train/ and test/ slides with their JSON files, train.csv, the dataset information and the sample."""
    rng = np.random.default_rng(seed)
    ids = [f"{int(rng.integers(16**8, 16**9)):09x}" for _ in range(train + test)]
    layouts = ["pyramid", "channel_first", "strips"]
    codes, info = [], []
    for i, name in enumerate(ids):
        split = "train" if i < train else "test"
        (folder / split).mkdir(parents=True, exist_ok=True)
        h, w = height + 8 * (i % 3), width - 8 * (i % 2)  # slides differ in size
        image, mask = slide(rng, h, w)
        write_slide(folder / split / f"{name}.tiff", image, layouts[i % len(layouts)])
        polygons = [{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]},
                     "properties": {"classification": {"name": "glomerulus"}}}]
        (folder / split / f"{name}.json").write_text(json.dumps(polygons))
        (folder / split / f"{name}-anatomical-structure.json").write_text(json.dumps(polygons))
        codes.append(rle.encode(mask))
        info.append({"image_file": f"{name}.tiff", "width_pixels": w, "height_pixels": h, "anatomical_structures_segmention_file":
                     f"{name}-anatomical-structure.json", "glomerulus_segmentation_file": f"{name}.json",
                     "patient_number": 60000 + i, "race": "White", "ethnicity": "Not Hispanic or Latino", "sex": "Male",
                     "age": 50 + i, "weight_kilograms": 80.0, "height_centimeters": 180.0, "bmi_kg/m^2": 24.7,
                     "laterality": "Left", "percent_cortex": 80, "percent_medulla": 20})
    pd.DataFrame({"id": ids[:train], "encoding": codes[:train]}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame(info).to_csv(folder / "HuBMAP-20-dataset_information.csv", index=False)
    sample = pd.DataFrame({"id": ids[train:], "predicted": ""})
    sample.to_csv(folder / "sample_submission.csv", index=False)
    sample.to_csv(folder / "test" / "sample_submission.csv", index=False)


def strokes(rng: np.random.Generator, height: int, width: int, fragment: np.ndarray) -> np.ndarray:
    """(height, width) bool: short thick strokes, letters' parts, inside the fragment."""
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float64)
    ink = np.zeros((height, width), bool)
    for _ in range(int(height * width / 900)):
        r, c = rng.uniform(8, height - 8), rng.uniform(8, width - 8)
        angle, length = rng.uniform(0, np.pi), rng.uniform(6, 14)
        dr, dc = np.sin(angle), np.cos(angle)
        along = (rows - r) * dr + (cols - c) * dc
        across = np.abs(-(rows - r) * dc + (cols - c) * dr)
        ink |= (np.abs(along) < length / 2) & (across < 2.0)
    return ink & fragment


def fragment(rng: np.random.Generator, path: Path, height: int, width: int, labelled: bool) -> None:
    """One fragment's folder: its layers, mask.png and, where `labelled`, inklabels.png, inklabels_rle.csv, ir.png."""
    tifffile = _tifffile()
    rows, cols = np.mgrid[0:height, 0:width]
    area = ((rows - height / 2) / (height * 0.47)) ** 2 + ((cols - width / 2) / (width * 0.47)) ** 2 < 1
    ink = strokes(rng, height, width, area)
    (path / "surface_volume").mkdir(parents=True)
    papyrus = 22000 + rng.normal(0, 1500, (height, width))
    for layer in range(LAYERS):
        values = papyrus + rng.normal(0, 1800, (height, width))
        if layer in INK_LAYERS:
            values = values + 12000 * ink
        tifffile.imwrite(path / "surface_volume" / f"{layer:02d}.tif", np.where(area, np.clip(values, 0, 65535), 0)
                         .astype(np.uint16))
    Image.fromarray(area.astype(np.uint8) * 255).save(path / "mask.png")
    if labelled:
        Image.fromarray(ink.astype(np.uint8) * 255).save(path / "inklabels.png")
        Image.fromarray((area * (120 + 60 * ink)).astype(np.uint8)).save(path / "ir.png")
        pd.DataFrame({"Id": [path.name], "Predicted": [rle.encode(ink, "row")]}).to_csv(path / "inklabels_rle.csv",
                                                                                       index=False)


def vesuvius(folder: Path, seed: int = 0, height: int = 160, width: int = 128) -> None:
    """train/1 and train/2 (labelled), test/a (its layers and mask), and the sample."""
    rng = np.random.default_rng(seed)
    fragment(rng, folder / "train" / "1", height, width, True)
    fragment(rng, folder / "train" / "2", height + 32, width + 16, True)
    fragment(rng, folder / "test" / "a", height - 16, width + 8, False)
    pd.DataFrame({"Id": ["a"], "Predicted": ["1 1 5 1"]}).to_csv(folder / "sample_submission.csv", index=False)
