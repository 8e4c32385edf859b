"""Kaggle's run-length codes: masks as "start length" pairs, space-separated, 1-indexed, in column-major pixel
order (down the first column, then the next: pixel p is row p % height, column p // height), as TGS, Severstal
and MLE-bench's graders (mlebench.competitions.utils.rle_decode) read them; `order="row"` counts along each row
instead (Carvana's). An empty code is an empty mask; so is "-" where the sample submission writes it so
(contrails': its grader reads "-" as no mask, and a blank cell, read back as NaN, is not text it decodes).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError


def encode(mask: np.ndarray, order: str = "column") -> str:
    """The code of a (height, width) mask (nonzero: in the mask), counted in `order`: runs sorted, none touching
    another, "" when empty."""
    flat = np.asarray(mask) != 0
    pixels = np.concatenate([[0], (flat.T if order == "column" else flat).ravel().astype(np.int8), [0]])
    edges = np.flatnonzero(pixels[1:] != pixels[:-1])  # where a run starts, then where it ends (0-based, exclusive)
    starts, ends = edges[0::2], edges[1::2]
    return " ".join(f"{s + 1} {e - s}" for s, e in zip(starts.tolist(), ends.tolist()))


EMPTY_MARK = "-"


def empty_code(sample: pd.Series) -> str:
    """How the sample writes an empty mask: "-" where some of its cells are "-", else ""."""
    return EMPTY_MARK if (sample.astype(str).str.strip() == EMPTY_MARK).any() else ""


def numbers(code, where: str) -> np.ndarray:
    """The integers of a code (empty for "", whitespace or a missing cell); a KitError naming `where` for text that
    is not pairs of whole numbers."""
    if code is None or (isinstance(code, float) and math.isnan(code)):
        return np.zeros(0, np.int64)
    text = str(code).strip()
    if not text:
        return np.zeros(0, np.int64)
    try:
        values = np.array([int(v) for v in text.split()], dtype=np.int64)
    except ValueError:
        raise KitError(f"{where}: run-length code '{text[:40]}' is not whole numbers; write 'start length' pairs, "
                       "space-separated (an empty cell is an empty mask)") from None
    if len(values) % 2:
        raise KitError(f"{where}: run-length code '{text[:40]}' has an odd count of numbers ({len(values)}); it must be "
                       "'start length' pairs")
    return values


def decode(code, height: int, width: int, where: str, order: str = "column") -> np.ndarray:
    """The (height, width) bool mask of `code`, counted in `order`. A start below 1, a length below 1, or a run past
    the image's last pixel is one KitError naming `where` (overlapping or unsorted runs are read as their union)."""
    values = numbers(code, where)
    starts, lengths = values[0::2] - 1, values[1::2]
    flat = np.zeros(height * width + 1, np.int32)
    if len(starts):
        if starts.min() < 0 or lengths.min() < 1:
            bad = int(np.flatnonzero((starts < 0) | (lengths < 1))[0])
            raise KitError(f"{where}: run-length pair {bad + 1} ('{starts[bad] + 1} {lengths[bad]}') has a start below 1 or "
                           "a length below 1; starts count pixels from 1")
        ends = starts + lengths
        if ends.max() > height * width:
            bad = int(np.argmax(ends))
            raise KitError(f"{where}: run-length code runs past the image's end (pair {bad + 1}, '{starts[bad] + 1} "
                           f"{lengths[bad]}', reaches pixel {ends[bad]} of {height * width} in a {height} x {width} image); "
                           f"check that the code belongs to this image and counts {order} by {order} from 1 ([data] "
                           "rle_order)")
        np.add.at(flat, starts, 1)
        np.add.at(flat, ends, -1)
    pixels = np.cumsum(flat[:-1]) > 0
    return pixels.reshape(width, height).T if order == "column" else pixels.reshape(height, width)


def problem(code) -> str:
    """Why `code` is not one a grader accepts, without the image's size ("" when it is): numbers in pairs, starts
    and lengths of at least 1, starts increasing, runs apart (MLE-bench's rle_decode asserts the same)."""
    if not isinstance(code, str):
        return f"{code!r} is not text"
    try:
        values = numbers(code, "code")
    except KitError as e:
        return str(e).split(": ", 1)[1].removeprefix("run-length code ")  # the caller says what it is
    starts, lengths = values[0::2], values[1::2]
    if len(starts) and (starts.min() < 1 or lengths.min() < 1):
        return f"'{code[:40]}' has a start or length below 1"
    if np.any(starts[1:] < starts[:-1] + lengths[:-1]):
        return f"'{code[:40]}' has runs out of order or overlapping"
    return ""


def check_submission(cells: pd.Series, sample: pd.Series, folder: Path | None) -> None:
    """A submission's column of run-length codes (kit.pipelines.base.validate): each one a grader decodes (an
    empty cell is no mask; so is "-" where the sample writes it, and there a blank cell is refused)."""
    mark = empty_code(sample)
    for row, code in enumerate(cells.fillna("").tolist()):
        why = ("" if code == mark else f"'{code}' is blank where the sample writes an empty mask as '{mark}'"
               if mark and not str(code).strip() else problem(code))
        if why:
            raise KitError(f"submission row {row + 2}: run-length code {why}")
