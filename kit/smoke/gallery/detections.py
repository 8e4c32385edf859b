"""The gallery's detection competitions in their MLE-bench public layouts at smoke size: siim-covid19-detection
(DICOM chest x-rays under train/<study>/<series>/<image>.dcm written with pydicom, opacity boxes per image and a
class per study) and kuzushiji-recognition (zipped page JPEGs, characters as `U+XXXX x y w h` sequences). Each box
is a bright shape on a dark ground (siim) or a dark glyph on light paper, one shape a class (kuzushiji), so that a
detector learns them in a few epochs on a CPU."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.smoke import packing
from kit.smoke.gallery.pictures import hex_ids, save

# train_study_level.csv's class columns, in the raw table's order; a submission writes each one's first word
SIIM_STUDY = ("Negative for Pneumonia", "Typical Appearance", "Indeterminate Appearance", "Atypical Appearance")
SIIM_ODDS = (0.3, 0.4, 0.2, 0.1)
SIIM_SIDE = 64  # pixels a side of a smoke x-ray (Kaggle's are 2000-4000)


def siim_pixels(rng: np.random.Generator, boxes: np.ndarray, size: int = SIIM_SIDE) -> np.ndarray:
    """A 12-bit x-ray: a dark, noisy ground, each box (x_min, y_min, x_max, y_max) a bright blob filling it."""
    pixels = np.full((size, size), 900.0) + rng.normal(0, 120, (size, size))
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    for x0, y0, x1, y1 in boxes:
        inside = ((xx - (x0 + x1) / 2) / ((x1 - x0) / 2)) ** 2 + ((yy - (y0 + y1) / 2) / ((y1 - y0) / 2)) ** 2
        pixels[inside <= 1.0] += 2400
    return np.clip(pixels, 0, 4095).astype(np.uint16)


def write_dicom(pixels: np.ndarray, path: Path, monochrome1: bool) -> None:
    """An uncompressed 12-bit DICOM file, as a digital x-ray's (MONOCHROME1 stores dense as dark: inverted here);
    its dotted uids derived from the path's hashed ones (Kaggle's folders and file names are hashes of them)."""
    from pydicom.dataset import Dataset, FileMetaDataset  # the dev extras' pydicom (a kernel lists it in packages)
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"  # digital X-ray
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[path.stem])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = generate_uid(entropy_srcs=[path.parent.parent.name])
    ds.SeriesInstanceUID = generate_uid(entropy_srcs=[path.parent.name])
    ds.Modality, ds.Rows, ds.Columns = "DX", *pixels.shape
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME1" if monochrome1 else "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.PixelData = (4095 - pixels if monochrome1 else pixels).astype(np.uint16).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)


def siim_boxes(rng: np.random.Generator, study_class: int, size: int = SIIM_SIDE) -> np.ndarray:
    """A negative study's image has no opacity; the others 1 or 2 boxes (typical: 2), each in one lung's half."""
    if study_class == 0:
        return np.zeros((0, 4))
    count = 2 if study_class == 1 else 1
    boxes = []
    for half in rng.permutation(2)[:count]:
        w, h = rng.uniform(0.18, 0.32) * size, rng.uniform(0.25, 0.45) * size
        x = rng.uniform(0.04, 0.46 - w / size) * size + half * size / 2
        y = rng.uniform(0.05, 0.92 - h / size) * size
        boxes.append([x, y, x + w, y + h])
    return np.round(np.array(boxes), 5)


def siim_covid(folder: Path, seed: int = 0, train: int = 48, test: int = 12) -> None:
    """train_study_level.csv id (<study>_study), the four one-hot class columns; train_image_level.csv id
    (<image>_image), boxes (a Python-literal list of {'x', 'y', 'width', 'height'} dicts, blank without opacity),
    label ("opacity 1 x_min y_min x_max y_max ..." or "none 1 0 0 1 1"), StudyInstanceUID; both sorted by id.
    train/<study>/<series>/<image>.dcm and test/ likewise (12-hex ids; a sixth of the studies hold a second image,
    in a series of its own, without boxes; a third of the files MONOCHROME1); sample_submission.csv id,
    PredictionString: each test study's "negative 1 0 0 1 1" then each test image's "none 1 0 0 1 1"."""
    rng = np.random.default_rng(seed)
    n = train + test
    studies = hex_ids(rng, n, 12)
    classes = rng.choice(len(SIIM_STUDY), n, p=SIIM_ODDS)
    hidden = np.zeros(n, bool)
    hidden[rng.choice(n, test, replace=False)] = True  # prepare.py: train_test_split of the studies
    study_rows, image_rows = [], []
    for i, study in enumerate(studies):
        study_rows.append({"id": f"{study}_study", **{c: int(k == classes[i]) for k, c in enumerate(SIIM_STUDY)}})
        images = 2 if rng.random() < 1 / 6 else 1
        series = hex_ids(rng, images, 12)
        for j, image in enumerate(hex_ids(rng, images, 12)):
            boxes = siim_boxes(rng, int(classes[i])) if j == 0 else np.zeros((0, 4))
            write_dicom(siim_pixels(rng, boxes), folder / ("test" if hidden[i] else "train") / study / series[j]
                        / f"{image}.dcm", monochrome1=rng.random() < 1 / 3)
            literal = str([{"x": x0, "y": y0, "width": round(x1 - x0, 5), "height": round(y1 - y0, 5)}
                           for x0, y0, x1, y1 in boxes.tolist()]) if len(boxes) else None
            label = " ".join(f"opacity 1 {x0} {y0} {x1} {y1}" for x0, y0, x1, y1 in boxes.tolist()) or "none 1 0 0 1 1"
            image_rows.append({"id": f"{image}_image", "boxes": literal, "label": label, "StudyInstanceUID": study,
                               "hidden": hidden[i]})
    study_table, image_table = pd.DataFrame(study_rows), pd.DataFrame(image_rows)
    study_table[~hidden].sort_values("id").to_csv(folder / "train_study_level.csv", index=False)
    image_table[~image_table["hidden"]].drop(columns="hidden").sort_values("id").to_csv(
        folder / "train_image_level.csv", index=False)
    sample = pd.concat([
        pd.DataFrame({"id": study_table[hidden]["id"].sort_values(), "PredictionString": "negative 1 0 0 1 1"}),
        pd.DataFrame({"id": image_table[image_table["hidden"]]["id"].sort_values(), "PredictionString": "none 1 0 0 1 1"})])
    sample.to_csv(folder / "sample_submission.csv", index=False)


# kuzushiji's characters here: code, and the glyph the smoke pages draw for it
KUZUSHIJI = ("U+306B", "U+306E", "U+3057")
KUZUSHIJI_CHARS = {"U+306B": "に", "U+306E": "の", "U+3057": "し", "U+003F": "?", "U+FF2F": "Ｏ", "U+3044": "い"}
PAGE = (80, 64)  # height, width of a smoke page (Kaggle's are about 3000 x 2000)


def glyph(k: int, side: int) -> np.ndarray:
    """Class k's ink (1 = ink) in a side x side square: a filled disc, a ring, a cross."""
    yy, xx = (np.mgrid[0:side, 0:side] + 0.5 - side / 2) / (side / 2)
    r = np.hypot(xx, yy)
    if k == 0:
        return (r <= 0.9).astype(np.float32)
    if k == 1:
        return ((r <= 0.95) & (r >= 0.55)).astype(np.float32)
    return ((np.abs(xx) <= 0.3) | (np.abs(yy) <= 0.3)).astype(np.float32)


def page(rng: np.random.Generator, boxes: list[tuple[int, int, int, int, int]]) -> Image.Image:
    """Light, noisy paper with each (class, x, y, w, h) character as its glyph in dark ink."""
    h, w = PAGE
    pixels = np.full((h, w), 225.0) + rng.normal(0, 10, (h, w))
    for k, x, y, bw, bh in boxes:
        ink = np.asarray(Image.fromarray((glyph(k, 32) * 255).astype(np.uint8)).resize((bw, bh)), np.float32) / 255
        pixels[y:y + bh, x:x + bw] -= 170 * ink
    rgb = np.repeat(np.clip(pixels, 0, 255)[..., None], 3, axis=2) * np.array([1.0, 0.95, 0.85])  # yellowed
    return Image.fromarray(rgb.astype(np.uint8))


def characters(rng: np.random.Generator) -> list[tuple[int, int, int, int, int]]:
    """1 to 4 characters in columns, none overlapping (a page's text runs in columns, right to left)."""
    h, w = PAGE
    placed: list[tuple[int, int, int, int, int]] = []
    for column in range(int(rng.integers(1, 3))):
        y = int(rng.integers(2, 10))
        x = w - 4 - 26 * (column + 1) + int(rng.integers(0, 4))
        for _ in range(int(rng.integers(1, 3))):
            side = int(rng.integers(14, 21))
            if y + side > h - 2:
                break
            placed.append((int(rng.integers(len(KUZUSHIJI))), x, y, side, side + int(rng.integers(-2, 3))))
            y += side + int(rng.integers(4, 10))
    return placed


def kuzushiji(folder: Path, seed: int = 0, train: int = 60, test: int = 12) -> None:
    """train.csv image_id,labels ("U+XXXX x y w h ...", x and y the top left; blank for a page without
    characters), in train_test_split's shuffled order; train_images.zip and test_images.zip with <image_id>.jpg at
    their root; unicode_translation.csv Unicode,char; sample_submission.csv image_id,labels="U+003F 1 1 U+FF2F 2 2".
    Ids as the books' pages are named (100241706_00004_2, umgy001-007)."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    n = train + test
    books = ["100241706", "umgy001", "brsk001", "200003076"]
    ids = []
    for i in range(n):
        book = books[i % len(books)]
        ids.append(f"{book}_{i:05d}_{int(rng.integers(1, 3))}" if book[0].isdigit() else f"{book}-{i:03d}")
    rows = []
    for i, image_id in enumerate(ids):
        chars = [] if rng.random() < 0.08 else characters(rng)
        save(page(rng, chars), staging / ("train" if i < train else "test") / f"{image_id}.jpg")
        rows.append({"image_id": image_id,
                     "labels": " ".join(f"{KUZUSHIJI[k]} {x} {y} {bw} {bh}" for k, x, y, bw, bh in chars) or None})
    order = rng.permutation(n)
    table = pd.DataFrame(rows)
    for split in ("train", "test"):
        packing.write_zip(staging / split, folder / f"{split}_images.zip")
    shutil.rmtree(staging)
    table.iloc[order[order < train]].to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"Unicode": list(KUZUSHIJI_CHARS), "char": list(KUZUSHIJI_CHARS.values())}).to_csv(
        folder / "unicode_translation.csv", index=False)
    table.iloc[order[order >= train]].assign(labels="U+003F 1 1 U+FF2F 2 2").to_csv(
        folder / "sample_submission.csv", index=False)
