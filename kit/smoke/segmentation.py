"""Tiny segmentation datasets in each segmentation competition's Kaggle layout, for `make smoke`: masks that
show in the pixels, so a tiny model on the CPU has something to learn in a couple of epochs.

- mask files (tgs-salt-identification-challenge): train.csv id,rle_mask, depths.csv id,z,
  train/images/<id>.png, train/masks/<id>.png (0/255), test/images/<id>.png, sample_submission.csv id,rle_mask
  ("1 1", sorted by id). Grey seismic-like texture; salt is a brighter, smoother blob; a third of the images
  hold none.
- pages (denoising-dirty-documents): train/<n>.png, train_cleaned/<n>.png, test/<n>.png (grey, two heights), a
  sample of one row per pixel, <n>_<row>_<col> (1-indexed, row-major), the images in file-name order, value 1.
  Clean pages are white with dark word-like strokes; dirty ones are stained, greyed and noisy.
- run-length codes per image and class (the original Severstal layout): train.csv ImageId_ClassId,EncodedPixels,
  four rows per image (empty codes where a class is absent), train_images/<id>.jpg, test_images/<id>.jpg,
  sample_submission.csv of the same rows for the test images ("1 1"). Each class is its own kind of mark on
  grey steel: dark spots, bright vertical lines, dark horizontal scratches, bright patches, each of its own shade.

`draw(spec, seed)` returns the data with the test masks (the answers); `make_dataset` writes all but the answers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.data import rle
from kit.spec import Spec


@dataclass
class Drawn:
    train: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # id: (image, mask or page)
    test: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # id: (image, answer)


def draw(spec: Spec, seed: int = 0, **sizes: int) -> Drawn:
    """`sizes` (train=, test=, and the maker's image sides) change the smoke's counts, for `make quality`."""
    rng = np.random.default_rng(seed)
    if spec.metric == "rmse":
        return _pages(rng, **sizes)
    if spec.train_masks:
        return _salt(rng, **sizes)
    return _steel(rng, **sizes)


def make_dataset(spec: Spec, folder: Path, seed: int = 0, **sizes: int) -> Drawn:
    """Writes the data but the answers, and returns all of it (the answers in `.test`)."""
    drawn = draw(spec, seed, **sizes)
    folder.mkdir(parents=True, exist_ok=True)
    if spec.metric == "rmse":
        _write_pages(spec, folder, drawn)
    elif spec.train_masks:
        _write_salt(spec, folder, drawn)
    else:
        _write_steel(spec, folder, drawn)
    return drawn


# -- tgs-salt-identification-challenge ------------------------------------------------------------------
def _texture(rng: np.random.Generator, h: int, w: int, smooth: int) -> np.ndarray:
    noise = rng.normal(0, 1, (h + 2 * smooth, w + 2 * smooth))
    kernel = np.ones(smooth) / smooth
    noise = np.apply_along_axis(np.convolve, 0, noise, kernel, "same")
    noise = np.apply_along_axis(np.convolve, 1, noise, kernel, "same")
    return noise[smooth : smooth + h, smooth : smooth + w] / (noise.std() + 1e-9)


def _blob(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    cy, cx = rng.uniform(0, h), rng.uniform(0, w)
    ry, rx = rng.uniform(0.2, 0.6) * h, rng.uniform(0.2, 0.6) * w
    wobble = 1 + 0.2 * np.sin(np.arctan2(yy - cy, xx - cx) * rng.integers(2, 5) + rng.uniform(0, 6.3))
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < wobble**2


def _salt(rng: np.random.Generator, train: int = 64, test: int = 16, side: int = 28) -> Drawn:
    out = Drawn()
    for split, n in (("train", train), ("test", test)):
        for _ in range(n):
            mask = _blob(rng, side, side) if rng.random() < 0.67 else np.zeros((side, side), bool)
            rough = 110 + 30 * _texture(rng, side, side, 2)
            salt = 175 + 8 * _texture(rng, side, side, 5)
            image = np.clip(np.where(mask, salt, rough) + rng.normal(0, 6, (side, side)), 0, 255).astype(np.uint8)
            getattr(out, split)[rng.bytes(5).hex()] = (image, mask)
    return out


def _write_salt(spec: Spec, folder: Path, drawn: Drawn) -> None:
    for sub in (spec.train_images, spec.train_masks, spec.test_images):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for i, (image, mask) in drawn.train.items():
        Image.fromarray(image).save(folder / spec.train_images / f"{i}{spec.image_ext}")
        Image.fromarray((mask * 255).astype(np.uint8)).save(folder / spec.train_masks / f"{i}{spec.image_ext}")
    for i, (image, _) in drawn.test.items():
        Image.fromarray(image).save(folder / spec.test_images / f"{i}{spec.image_ext}")
    ids = sorted(drawn.train)
    pd.DataFrame({spec.id_column: ids, spec.target_column: [rle.encode(drawn.train[i][1], spec.rle_order) for i in ids]}).to_csv(
        folder / spec.train, index=False)
    rng = np.random.default_rng(len(ids))
    pd.DataFrame({spec.id_column: ids, "z": rng.integers(50, 950, len(ids))}).to_csv(folder / "depths.csv", index=False)
    pd.DataFrame({spec.id_column: sorted(drawn.test), spec.target_column: "1 1"}).to_csv(
        folder / spec.sample_submission, index=False)


# -- denoising-dirty-documents --------------------------------------------------------------------------
def _page(rng: np.random.Generator, h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    clean = np.ones((h, w))
    for top in range(3, h - 5, 7):  # lines of words: dark strokes 2-3 px tall
        left = int(rng.integers(1, 5))
        while left < w - 4:
            length = int(rng.integers(3, 9))
            clean[top : top + int(rng.integers(2, 4)), left : min(left + length, w - 1)] = rng.uniform(0.05, 0.2)
            left += length + int(rng.integers(2, 4))
    stain = np.clip(0.75 + 0.2 * _texture(rng, h, w, 9), 0.45, 1.0)
    dirty = np.clip(clean * stain + rng.normal(0, 0.04, (h, w)) - 0.05, 0, 1)
    return (dirty * 255).round().astype(np.uint8), (clean * 255).round().astype(np.uint8)


def _pages(rng: np.random.Generator, train: int = 24, test: int = 6, width: int = 48, heights=(40, 26)) -> Drawn:
    out = Drawn()
    names = rng.permutation(np.arange(1, train + test + 1))  # integer stems, as 101.png
    for k, n in enumerate(names):
        image, clean = _page(rng, int(heights[k % 2]), width)
        (out.train if k < train else out.test)[str(n)] = (image, clean)
    return out


def _write_pages(spec: Spec, folder: Path, drawn: Drawn) -> None:
    for sub in (spec.train_images, spec.train_masks, spec.test_images):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for n, (image, clean) in drawn.train.items():
        Image.fromarray(image).save(folder / spec.train_images / f"{n}{spec.image_ext}")
        Image.fromarray(clean).save(folder / spec.train_masks / f"{n}{spec.image_ext}")
    ids = []
    for n in sorted(drawn.test):  # sorted(Path) order: by file name, 10.png before 2.png
        image, _ = drawn.test[n]
        Image.fromarray(image).save(folder / spec.test_images / f"{n}{spec.image_ext}")
        h, w = image.shape
        ids += [f"{n}_{r}_{c}" for r in range(1, h + 1) for c in range(1, w + 1)]
    pd.DataFrame({spec.id_column: ids, spec.target_column: 1}).to_csv(folder / spec.sample_submission, index=False)


# -- severstal-steel-defect-detection (the original layout) ---------------------------------------------
CLASSES = 4


def _steel(rng: np.random.Generator, train: int = 80, test: int = 12, h: int = 32, w: int = 64) -> Drawn:
    out = Drawn()
    yy, xx = np.mgrid[0:h, 0:w]
    for split, n in (("train", train), ("test", test)):
        for _ in range(n):
            image = 120 + 12 * _texture(rng, h, w, 3) + 10 * np.sin(xx / 5.0)
            masks = np.zeros((CLASSES, h, w), bool)
            for k in rng.choice(CLASSES, size=int(rng.integers(0, 3)), replace=False):
                cy, cx = rng.uniform(4, h - 4), rng.uniform(6, w - 6)
                if k == 0:  # dark spots
                    masks[k] = (yy - cy) ** 2 + (xx - cx) ** 2 < rng.uniform(6, 16)
                elif k == 1:  # bright vertical lines
                    masks[k] = (np.abs(xx - cx) < 1.5) & (np.abs(yy - cy) < rng.uniform(6, 14))
                elif k == 2:  # dark horizontal scratches
                    masks[k] = (np.abs(yy - cy) < 1.5) & (np.abs(xx - cx) < rng.uniform(10, 30))
                else:  # bright patches
                    masks[k] = (np.abs(yy - cy) < rng.uniform(4, 8)) & (np.abs(xx - cx) < rng.uniform(6, 14))
                image = np.where(masks[k], (40, 230, 80, 190)[k], image)  # each class its own shade too
            picture = np.clip(image + rng.normal(0, 5, (h, w)), 0, 255).astype(np.uint8)
            getattr(out, split)[f"{rng.bytes(4).hex()}.jpg"] = (np.repeat(picture[..., None], 3, -1), masks)
    return out


def _write_steel(spec: Spec, folder: Path, drawn: Drawn) -> None:
    for sub in (spec.train_images, spec.test_images):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (image, masks) in drawn.train.items():
        Image.fromarray(image).save(folder / spec.train_images / f"{i}{spec.image_ext}", quality=95)
        rows += [(f"{i}_{k + 1}", rle.encode(masks[k], spec.rle_order)) for k in range(CLASSES)]
    pd.DataFrame(rows, columns=[spec.id_column, spec.target_column]).to_csv(folder / spec.train, index=False)
    for i, (image, _) in drawn.test.items():
        Image.fromarray(image).save(folder / spec.test_images / f"{i}{spec.image_ext}", quality=95)
    ids = [f"{i}_{k + 1}" for i in drawn.test for k in range(CLASSES)]
    pd.DataFrame({spec.id_column: ids, spec.target_column: "1 1"}).to_csv(folder / spec.sample_submission, index=False)
