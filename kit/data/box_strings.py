"""The detection competitions' strings: parsed with one-line refusals, and written as each grader reads them.

- `label conf x_min y_min x_max y_max ...` (vinbigdata: class ids, "14 1 0 0 1 1" for no finding; siim-covid19:
  "opacity ...", "none 1 0 0 1 1" for an image without opacity, and each study's classes with their probabilities
  on a dummy box, "negative 0.7 0 0 1 1 typical 0.2 0 0 1 1 ...").
- kuzushiji: its training labels `U+XXXX x y w h ...` and its predictions `U+XXXX x y ...` (the character's centre);
  a page without characters is written empty, which a CSV holds as nothing and the grader reads as NaN (an empty
  string itself it refuses).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kit.errors import KitError

NO_BOX = (0.0, 0.0, 1.0, 1.0)  # the dummy box of a row that is a class and a confidence only ("none 1 0 0 1 1")


def parse_groups(text: object, width: int, row: int, column: str, table: str = "submission") -> tuple[list[str], np.ndarray]:
    """A string of groups of `width` tokens, a label then numbers -> (labels, (N, width - 1) float64); nothing (NaN,
    None, blank) is no groups. Refused in one line naming the table, row and column."""
    if text is None or (isinstance(text, float) and np.isnan(text)) or (isinstance(text, str) and not text.strip()):
        return [], np.zeros((0, width - 1))
    if not isinstance(text, str):
        raise KitError(f"{table} row {row}, column {column}: expected a string, got {text!r}")
    tokens = text.split()
    if len(tokens) % width:
        raise KitError(f"{table} row {row}, column {column}: {len(tokens)} tokens are not groups of {width} "
                       f"(label and {width - 1} numbers): {text[:60]!r}")
    groups = np.array(tokens, dtype=object).reshape(-1, width)
    try:
        numbers = groups[:, 1:].astype(np.float64)
    except ValueError as e:
        raise KitError(f"{table} row {row}, column {column}: a number that is not one ({e}): {text[:60]!r}") from None
    if not np.isfinite(numbers).all():
        raise KitError(f"{table} row {row}, column {column}: a number that is not finite: {text[:60]!r}")
    return [str(x) for x in groups[:, 0]], numbers


def parse_detections(text: object, row: int, column: str = "PredictionString",
                     table: str = "submission") -> tuple[list[str], np.ndarray, np.ndarray]:
    """`label conf x_min y_min x_max y_max ...` -> (labels, (N,) confidences, (N, 4) float32 corners)."""
    labels, numbers = parse_groups(text, 6, row, column, table)
    return labels, numbers[:, 0], numbers[:, 1:].astype(np.float32)


def parse_points(text: object, row: int, column: str = "labels", table: str = "submission") -> tuple[list[str], np.ndarray]:
    """kuzushiji's `label x y ...` -> (labels, (N, 2) centres)."""
    return parse_groups(text, 3, row, column, table)


def _number(v: float) -> str:
    """Short and exact enough: 6 significant digits (a hundredth of a pixel on a 3000-pixel image)."""
    return f"{float(v):.6g}"


def detections_string(labels: Sequence[object], scores: np.ndarray, boxes: np.ndarray, empty: str = "") -> str:
    """`label conf x_min y_min x_max y_max ...` in the order given, or `empty` where there is no box ("14 1 0 0 1 1",
    "none 1 0 0 1 1")."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    if not len(boxes):
        return empty
    return " ".join(f"{label} {_number(s)} " + " ".join(map(_number, b)) for label, s, b in zip(labels, scores, boxes))


def classes_string(names: Sequence[str], probabilities: np.ndarray) -> str:
    """A row scored as a class (siim's studies): every class with its probability on the dummy box, likeliest first,
    so that each class's precision ranks studies by it."""
    order = np.argsort(-np.asarray(probabilities), kind="stable")
    box = " ".join(map(_number, NO_BOX))
    return " ".join(f"{names[k]} {_number(probabilities[k])} {box}" for k in order)


def points_string(labels: Sequence[str], centres: np.ndarray) -> str:
    """kuzushiji's `label x y ...`; "" (written as an empty field) for a page without characters."""
    centres = np.asarray(centres, np.float64).reshape(-1, 2)
    return " ".join(f"{label} {_number(x)} {_number(y)}" for label, (x, y) in zip(labels, centres))
