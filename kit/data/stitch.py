"""A gigapixel image's mask at a reduced resolution and its run-length code at the full one, without the
full-resolution mask (segmentation: hubmap's slides, vesuvius' fragments, read at 1/reduce by kit.data.tiffs).

At reduce 4 a 30,000 x 40,000 px slide is a 7,500 x 10,000 canvas (kit.data.canvas holds it, and kit.data.tiles
blends its tiles' predictions over it), where the full-resolution mask alone would take 1.2 GB. The submission's
code is counted over the full-resolution mask (each reduced pixel a block of reduce x reduce), built a band of
columns (or rows) at a time, runs that cross a band's edge joined; the training codes are read the other way, a
sampled column at a time.
"""
from __future__ import annotations

import numpy as np

from kit.data import rle
from kit.errors import KitError

BAND_BYTES = 2**26  # full-resolution mask bytes built at a time by `encode_reduced` (64 MB)


def encode_reduced(small: np.ndarray, reduce: int, height: int, width: int, order: str = "column") -> str:
    """The run-length code (kit.data.rle's: 1-indexed "start length" pairs, counted in `order`) of the height x
    width mask whose pixel (y, x) is small[y // reduce, x // reduce], built a band at a time."""
    small = np.asarray(small) != 0
    if small.shape != (-(-height // reduce), -(-width // reduce)):
        raise KitError(f"a mask of {small.shape} at reduce {reduce} is not a {height} x {width} image's "
                       f"({-(-height // reduce)}, {-(-width // reduce)})")
    if order == "row":  # counting along rows is counting down the columns of the transpose
        return encode_reduced(small.T, reduce, width, height, "column")
    band = max(reduce, BAND_BYTES // max(height, 1) // reduce * reduce)  # full-resolution columns at a time
    starts, ends = [], []
    for c0 in range(0, width, band):
        c1 = min(width, c0 + band)
        cols = small[:, c0 // reduce:-(-c1 // reduce)]
        full = np.repeat(np.repeat(cols, reduce, 0)[:height], reduce, 1)[:, :c1 - c0]  # (height, c1 - c0)
        flat = np.concatenate([[False], full.T.ravel(), [False]]).astype(np.int8)
        edges = np.flatnonzero(flat[1:] != flat[:-1]) + c0 * height  # starts then ends, 0-based, exclusive
        starts.append(edges[0::2])
        ends.append(edges[1::2])
    s, e = np.concatenate(starts), np.concatenate(ends)
    if not len(s):
        return ""
    apart = s[1:] != e[:-1]  # a run ending where the next starts crossed a band's edge: one run
    s, e = s[np.concatenate([[True], apart])], e[np.concatenate([apart, [True]])]
    return " ".join(f"{a + 1} {b - a}" for a, b in zip(s.tolist(), e.tolist()))


def decode_reduced(code, height: int, width: int, reduce: int, where: str, order: str = "column") -> np.ndarray:
    """The (ceil(height / reduce), ceil(width / reduce)) bool mask of a full-resolution code (kit.data.rle's), each
    pixel the code's at the top left of its block: read a sampled column at a time, never the full mask."""
    if order == "row":
        return decode_reduced(code, width, height, reduce, where, "column").T
    values = rle.numbers(code, where)
    starts, ends = values[0::2] - 1, values[0::2] - 1 + values[1::2]
    if len(starts) and (starts.min() < 0 or values[1::2].min() < 1 or ends.max() > height * width):
        rle.decode(code, height, width, where, order)  # its one-line refusal, on the same runs
    if len(starts) and np.any(starts[1:] < starts[:-1]):
        order_ = np.argsort(starts, kind="stable")
        starts, ends = starts[order_], ends[order_]
    reach = np.maximum.accumulate(ends) if len(ends) else ends  # overlapping runs read as their union
    rows = np.arange(0, height, reduce)
    out = np.zeros((len(rows), -(-width // reduce)), bool)
    for j, column in enumerate(range(0, width, reduce)):
        pixels = column * height + rows
        run = np.searchsorted(starts, pixels, side="right") - 1  # the last run starting at or before each pixel
        out[:, j] = (run >= 0) & (pixels < reach[np.maximum(run, 0)]) if len(starts) else False
    return out
