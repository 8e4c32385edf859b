"""Boxes on images: one record per image, and the training labels of the detection competitions read into it.

- `ImageBoxes`: an image's boxes as float32 (N, 4) corners in pixels (x_min, y_min, x_max, y_max), their labels
  (class ids, or names where a grader compares names), and for predictions their confidences; an image without
  boxes is a record with N = 0 (a negative, kept).
- Readers: vinbigdata's one-row-per-box table (several radiologists a image, "No finding" with no box),
  siim-covid19's image-level table (a Python-literal list of x/y/width/height dicts, or nothing) and its study-level
  one-hot table, kuzushiji's `U+XXXX x y w h` sequences.
The submission strings are kit.data.box_strings'; several readers' boxes fused: kit.data.box_fusion.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kit.data.box_strings import parse_groups
from kit.errors import KitError


@dataclass(frozen=True)
class ImageBoxes:
    image_id: str
    boxes: np.ndarray  # (N, 4) float32 corners: x_min, y_min, x_max, y_max, in pixels
    labels: np.ndarray  # (N,) int64 class ids, or names (str) where the grader compares names
    scores: np.ndarray | None = None  # (N,) float32 confidences (predictions); None for training labels
    readers: np.ndarray | None = None  # (N,) who drew each box (vinbigdata's rad_id), for fusion; None if one did
    group: str = ""  # the image's group for folds (siim's study)

    def __post_init__(self) -> None:
        if self.boxes.shape != (len(self.labels), 4):
            raise ValueError(f"{self.image_id}: boxes {self.boxes.shape} for {len(self.labels)} labels")


@dataclass(frozen=True)
class Labels:
    images: list[ImageBoxes]  # one record per training image, in the table's order of first appearance
    classes: tuple[str, ...]  # class id -> its name (what a submission string writes)


def corners(xywh: np.ndarray) -> np.ndarray:
    """(N, 4) x, y, width, height -> (N, 4) float32 corners."""
    xywh = np.asarray(xywh, np.float64).reshape(-1, 4)
    return np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1).astype(np.float32)


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise KitError(f"{what} lacks the column(s) {', '.join(missing)} (it has {', '.join(map(str, frame.columns))})")


def read_vinbigdata(frame: pd.DataFrame, no_finding: int = 14) -> Labels:
    """vinbigdata's train.csv: image_id, class_name, class_id, rad_id, x_min, y_min, x_max, y_max, one row a box;
    `no_finding`'s rows have no box: an image with only those is a negative. Every radiologist's box is kept with
    its reader (fuse them with kit.data.box_fusion)."""
    _require(frame, ("image_id", "class_name", "class_id", "rad_id", "x_min", "y_min", "x_max", "y_max"), "train.csv")
    coords = frame[["x_min", "y_min", "x_max", "y_max"]].to_numpy(np.float64)
    finding = frame["class_id"].to_numpy() != no_finding
    unboxed = finding & np.isnan(coords).any(axis=1)
    if unboxed.any():
        row = int(np.flatnonzero(unboxed)[0])
        raise KitError(f"train.csv row {row + 2}: class {frame['class_id'].iloc[row]} has no box (x_min..y_max empty); "
                       f"only class {no_finding} (No finding) may")
    names = frame[finding].drop_duplicates("class_id").set_index("class_id")["class_name"]
    classes = tuple(str(names.get(k, k)) for k in range(int(names.index.max()) + 1 if len(names) else 0))
    boxed = frame[finding]
    by_image = {k: v for k, v in boxed.groupby("image_id", sort=False)}
    images = []
    for image_id in pd.unique(frame["image_id"]):
        rows = by_image.get(image_id)
        if rows is None:
            images.append(_empty(str(image_id), readers=True))
            continue
        images.append(ImageBoxes(str(image_id), rows[["x_min", "y_min", "x_max", "y_max"]].to_numpy(np.float32),
                                 rows["class_id"].to_numpy(np.int64), readers=rows["rad_id"].astype(str).to_numpy()))
    return Labels(images, classes)


def read_siim_images(frame: pd.DataFrame) -> Labels:
    """siim-covid19's train_image_level.csv: id, boxes (a Python-literal list of {'x', 'y', 'width', 'height'}, or
    empty for an image without opacity), label, StudyInstanceUID. One class, "opacity"."""
    _require(frame, ("id", "boxes", "StudyInstanceUID"), "train_image_level.csv")
    images = []
    for row, (image_id, text, study) in enumerate(zip(frame["id"], frame["boxes"], frame["StudyInstanceUID"])):
        if not isinstance(text, str) or not text.strip():
            images.append(_empty(str(image_id), group=str(study)))
            continue
        try:
            found = ast.literal_eval(text)
            xywh = np.array([[b["x"], b["y"], b["width"], b["height"]] for b in found], np.float64)
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            raise KitError(f"train_image_level.csv row {row + 2}, column boxes: not a list of {{'x', 'y', 'width', "
                           f"'height'}} ({type(e).__name__}: {e})") from None
        images.append(ImageBoxes(str(image_id), corners(xywh), np.zeros(len(xywh), np.int64), group=str(study)))
    return Labels(images, ("opacity",))


def read_siim_studies(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """siim-covid19's train_study_level.csv (id, then one 0/1 column a class) -> the study ids, each study's class
    and the names a submission writes ("negative", "typical", "indeterminate", "atypical": each column's first word,
    lower-cased). A row that is not one-hot is refused."""
    _require(frame, ("id",), "train_study_level.csv")
    columns = [c for c in frame.columns if c != "id"]
    onehot = frame[columns].to_numpy()
    bad = ~np.isin(onehot, (0, 1)).all(axis=1) | (onehot.sum(axis=1) != 1)
    if not columns or bad.any():
        row = int(np.flatnonzero(bad)[0]) + 2 if columns else 1
        raise KitError(f"train_study_level.csv row {row}: the class columns must hold one 1 and the rest 0")
    names = tuple(str(c).split()[0].lower() for c in columns)
    return frame["id"].astype(str).to_numpy(), onehot.argmax(axis=1), names


def read_kuzushiji(frame: pd.DataFrame) -> Labels:
    """kuzushiji's train.csv: image_id, labels ("U+XXXX x y w h ..." with x, y the box's top left, or empty for a page
    without characters). Class ids index the sorted codes."""
    _require(frame, ("image_id", "labels"), "train.csv")
    parsed = [parse_groups(text, 5, row + 2, "labels", "train.csv") for row, text in enumerate(frame["labels"])]
    classes = tuple(sorted({c for codes, _ in parsed for c in codes}))
    index = {c: k for k, c in enumerate(classes)}
    images = [ImageBoxes(str(image_id), corners(numbers), np.array([index[c] for c in codes], np.int64))
              for image_id, (codes, numbers) in zip(frame["image_id"], parsed)]
    return Labels(images, classes)


def _empty(image_id: str, readers: bool = False, group: str = "") -> ImageBoxes:
    return ImageBoxes(image_id, np.zeros((0, 4), np.float32), np.zeros(0, np.int64),
                      readers=np.zeros(0, str) if readers else None, group=group)
