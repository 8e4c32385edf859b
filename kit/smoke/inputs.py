"""Smoke data for the image inputs that need no table of ids and labels, or no image files: labels in file
names (dogs-vs-cats), COCO label files (iwildcam-2020, inaturalist-2019), arrays in .npy files (seti) and
per-row arrays in a JSON table (statoil); archived as those competitions' public folders archive them, where
the config's names say so. Classes show in the data, so a tiny CNN has something to learn."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.smoke import packing
from kit.spec import Spec


def _photo(rng: np.random.Generator, k: int, size: int = 48) -> Image.Image:
    """Class k's colour and stripe angle, with noise."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    angle = np.pi * k / 4
    stripes = np.sin(2 * np.pi * 3 * (xx * np.cos(angle) + yy * np.sin(angle)))
    color = np.array([[200, 60, 50], [60, 170, 70], [50, 90, 200], [210, 180, 40]][k % 4], np.float32)
    pixels = color * (0.65 + 0.35 * stripes[..., None]) + rng.normal(0, 15, (size, size, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def make_named(spec: Spec, folder: Path, seed: int = 0, per_class: int = 24, test: int = 12) -> None:
    """dogs-vs-cats' layout: train/cat.<k>.jpg and dog.<k>.jpg, test/<n>.jpg (n from 1), both also zipped
    with their files at the root as MLE-bench keeps them; sample_submission.csv id,label (P(dog)) = 0.5."""
    rng = np.random.default_rng(seed)
    train, hidden = folder / spec.train_images, folder / spec.test_images
    train.mkdir(parents=True)
    hidden.mkdir(parents=True)
    for k, name in enumerate(("cat", "dog")):
        for i in range(per_class):
            _photo(rng, k).save(train / f"{name}.{i}{spec.image_ext}", quality=90)
    for n in range(1, test + 1):
        _photo(rng, int(rng.integers(2))).save(hidden / f"{n}{spec.image_ext}", quality=90)
    packing.write_zip(train, folder / f"{spec.train_images}.zip")
    packing.write_zip(hidden, folder / f"{spec.test_images}.zip")
    pd.DataFrame({spec.id_column: range(1, test + 1), spec.target_column: 0.5}).to_csv(folder / spec.sample_submission,
                                                                                     index=False)


def make_coco(spec: Spec, folder: Path, seed: int = 0, per_class: int = 16, test: int = 12) -> None:
    """inaturalist-2019's shape: <train>.json and <test>.json COCO files whose file_names start with the image
    folder's name, the folders shipped as plain tars named <folder>.tar.gz (files without that prefix); the
    sample submission names the test images by id, classes by category id."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}-staging"
    categories = [{"id": 400 + k, "name": f"species_{k}"} for k in range(3)]
    images, annotations = [], []
    for k, category in enumerate(categories):
        for _ in range(per_class):
            image_id = len(images) + 1
            relative = f"Plants/{category['id']}/{rng.bytes(8).hex()}.jpg"
            (staging / "train" / relative).parent.mkdir(parents=True, exist_ok=True)
            _photo(rng, k).save(staging / "train" / relative, quality=90)
            images.append({"id": image_id, "file_name": f"{spec.train_images}/{relative}", "width": 48, "height": 48})
            annotations.append({"id": image_id, "image_id": image_id, "category_id": category["id"]})
    hidden = []
    for i in range(test):
        name = f"{rng.bytes(8).hex()}.jpg"
        (staging / "test").mkdir(parents=True, exist_ok=True)
        _photo(rng, int(rng.integers(3))).save(staging / "test" / name, quality=90)
        hidden.append({"id": 10_000 + i, "file_name": f"{spec.test_images}/{name}"})
    info = {"year": 2019}
    (folder / spec.train).write_text(json.dumps({"annotations": annotations, "categories": categories, "images": images,
                                                 "info": info, "licenses": []}, indent=4, sort_keys=True))
    (folder / spec.test).write_text(json.dumps({"images": hidden, "info": info, "licenses": []}, indent=4, sort_keys=True))
    packing.write_tar(staging / "train", folder / f"{spec.train_images}.tar.gz", compress=False)
    packing.write_tar(staging / "test", folder / f"{spec.test_images}.tar.gz", compress=False)
    shutil.rmtree(staging)
    sample = pd.DataFrame({spec.id_column: [h["id"] for h in hidden], spec.target_column: rng.integers(0, 1010, test)})
    sample.to_csv(folder / spec.sample_submission, index=False)


def make_npy(spec: Spec, folder: Path, seed: int = 0, per_class: int = 24, test: int = 12) -> None:
    """seti's layout: <train> id,target and train/<id[0]>/<id>.npy, test/<id[0]>/<id>.npy, float16 arrays
    (6, 32, 24): noise, and in a positive a drifting line in the 1st, 3rd and 5th channel."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids = {"train": [], "test": []}
    for split, count in (("train", 2 * per_class), ("test", test)):
        for i in range(count):
            image_id = rng.bytes(8).hex()[:15]
            positive = i % 2 if split == "train" else int(rng.integers(2))
            array = rng.normal(0, 1, (6, 32, 24))
            if positive:
                start = int(rng.integers(4, 16))
                for c in (0, 2, 4):
                    array[c, np.arange(32), np.clip(start + np.arange(32) // 4, 0, 23)] += 4.0
            path = folder / (spec.train_images if split == "train" else spec.test_images) / image_id[0] / f"{image_id}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, array.astype(np.float16))
            ids[split].append((image_id, positive))
    pd.DataFrame(ids["train"], columns=[spec.id_column, spec.target_column]).to_csv(folder / spec.train, index=False)
    pd.DataFrame({spec.id_column: [i for i, _ in ids["test"]], spec.target_column: 0.5}).to_csv(
        folder / spec.sample_submission, index=False)


def make_arrays(spec: Spec, folder: Path, seed: int = 0, per_class: int = 60, test: int = 12, side: int = 24) -> None:
    """statoil's layout: train.json.7z, test.json.7z and sample_submission.csv.7z, each one file at the
    archive's root; JSON records id, band_1, band_2 (side x side dB floats, flattened), inc_angle (a float, or
    "na"), is_iceberg; an iceberg a round bright blob, a ship a long one with a brighter second band."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}-staging"
    staging.mkdir()
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) - side / 2

    def record(iceberg: int) -> dict:
        cy, cx = rng.uniform(-3, 3, 2)
        stretch = 1.0 if iceberg else 3.0
        blob = np.exp(-(((yy - cy) / 2.5) ** 2 + ((xx - cx) / (2.5 * stretch)) ** 2))
        band_1 = -25 + 12 * blob + rng.normal(0, 1.5, (side, side))
        band_2 = -28 + (6 if iceberg else 14) * blob + rng.normal(0, 1.5, (side, side))
        angle = "na" if rng.random() < 0.05 else float(rng.uniform(30, 45))
        return {"id": rng.bytes(4).hex(), "band_1": band_1.ravel().round(4).tolist(), "band_2": band_2.ravel().round(4).tolist(),
                "inc_angle": angle}

    train = [{**record(k % 2), spec.target_column: k % 2} for k in range(2 * per_class)]
    hidden = [record(int(rng.integers(2))) for _ in range(test)]
    (staging / spec.train).write_text(json.dumps(train))
    (staging / spec.test).write_text(json.dumps(hidden))
    pd.DataFrame({spec.id_column: [h["id"] for h in hidden], spec.target_column: 0.5}).to_csv(
        staging / spec.sample_submission, index=False)
    for name in (spec.train, spec.test, spec.sample_submission):
        packing.write_7z(staging / name, folder / f"{name}.7z")
    shutil.rmtree(staging)
