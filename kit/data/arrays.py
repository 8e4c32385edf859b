"""Arrays as images: .npy files (seti's 6 x 273 x 256 float16) and per-row arrays in a table (statoil's
band_1 and band_2, 75 x 75 floats each), any channel count, float or uint8.

They go through the same decode-once cache as photos (kit.data.images), as `side x side x channels` squares:
uint8 where the arrays are uint8, else float16 (half the bytes of float32, and the GPU computes in half
precision anyway); and through the same augmentation on the device. What differs is the normalisation:
photos use the pretrained model's (ImageNet's) statistics, arrays their own, per channel, measured on the
training images (`channel_stats`), and a channel count other than 3 gives the timm model that many input
channels (`in_chans`: timm adapts the pretrained first convolution).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from kit.errors import KitError

MAX_CHANNELS = 64  # a dimension this small, beside two larger ones, is the channels
STAT_ROWS = 1024  # training images the per-channel statistics are measured on
FLOAT16_MAX = 65504.0


@dataclass(frozen=True)
class Form:
    """What one cached image is: its channels and their type."""

    channels: int = 3
    dtype: str = "uint8"  # or "float16"

    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def photo(self) -> bool:
        """RGB bytes: normalised as the pretrained model expects, not by the data's own statistics."""
        return self.channels == 3 and self.dtype == "uint8"


def form_of(images: np.ndarray) -> Form:
    """The form of in-memory images: (N, H, W) grayscale bytes are shown as RGB (pixel tables); (N, H, W, C)
    keep their C channels."""
    if images.ndim == 3:
        return Form(3, "uint8")
    return Form(images.shape[-1], "uint8" if images.dtype == np.uint8 else "float16")


def channels_last(array: np.ndarray, where: str) -> np.ndarray:
    """(H, W, C) from (H, W), (C, H, W) or (H, W, C): the channels are the dimension much smaller than the
    other two (channels first when both ends are)."""
    if array.ndim == 2:
        return array[..., None]
    if array.ndim != 3:
        raise ValueError(f"{where}: shape {tuple(array.shape)} is not an image (2 or 3 dimensions)")
    first, last = array.shape[0], array.shape[2]
    if first <= MAX_CHANNELS and first < min(array.shape[1:]):
        return np.moveaxis(array, 0, -1)
    if last <= MAX_CHANNELS and last < min(array.shape[:2]):
        return array
    raise ValueError(f"{where}: shape {tuple(array.shape)} has no channel dimension smaller than the other two")


def header(path: str | Path) -> tuple[tuple[int, ...], np.dtype]:
    """A .npy file's shape and type, from its header alone."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
    return shape, dtype


def probe(paths: Sequence[Path]) -> Form:
    """The form of .npy images: the first existing file's channels, uint8 or float."""
    for path in paths[:20]:
        if Path(path).is_file():
            try:
                shape, dtype = header(path)
                probe_shape = channels_last(np.empty(shape, np.uint8), str(path)).shape if len(shape) in (2, 3) else shape
            except (OSError, ValueError) as e:
                raise KitError(f"{Path(path).name}: not a .npy image ({' '.join(str(e).split())})") from None
            return Form(probe_shape[-1], "uint8" if dtype == np.uint8 else "float16")
    return Form(1, "float16")  # none there: the missing files are reported by the decode, naming them


def decode_npy(path: str | Path, side: int, form: Form) -> np.ndarray:
    """`side x side x channels` in `form`'s type: the shorter side resized to `side`, centre-cropped, as
    photos are. Raises ValueError for a file that is not such an array."""
    array = np.load(path, allow_pickle=False)
    image = channels_last(np.asarray(array), Path(path).name)
    if image.shape[-1] != form.channels:
        raise ValueError(f"{image.shape[-1]} channels, not the {form.channels} of the first file")
    return resize(image[None], side, form)[0]


def resize(images: np.ndarray, side: int, form: Form) -> np.ndarray:
    """(N, H, W, C) -> (N, side, side, C) in `form`'s type: shorter side to `side`, centre crop."""
    x = torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32)).permute(0, 3, 1, 2)  # (N, C, H, W)
    if not torch.isfinite(x).all():
        raise ValueError("holds NaN or infinite values")
    h, w = x.shape[-2:]
    if (h, w) != (side, side):
        scale = side / min(h, w)
        nh, nw = max(side, round(h * scale)), max(side, round(w * scale))
        x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=True)
        top, left = (nh - side) // 2, (nw - side) // 2
        x = x[..., top : top + side, left : left + side]
    if form.dtype == "uint8":
        x = x.round().clamp(0, 255)
    else:
        x = x.clamp(-FLOAT16_MAX, FLOAT16_MAX)
    return np.ascontiguousarray(x.permute(0, 2, 3, 1).numpy().astype(form.dtype))


def row_arrays(table: pd.DataFrame, columns: Sequence[str], where: str) -> np.ndarray:
    """(rows, side, side, channels) float32 from `columns`, each cell a list of side x side numbers (or that
    list as JSON text, as a CSV stores it), row by row."""
    if not columns:
        raise KitError('layout = "arrays" needs array_columns in [data]: the columns holding one image channel each, '
                       'such as ["band_1", "band_2"]')
    missing = [c for c in columns if c not in table.columns]
    if missing:
        listed = ", ".join(map(str, table.columns[:12]))
        raise KitError(f"{where}: no column '{missing[0]}' (it has: {listed}); fix [data] array_columns")
    channels = []
    for column in columns:
        cells = [_numbers(v, where, i, column) for i, v in enumerate(table[column])]
        sizes = {len(c) for c in cells}
        if len(sizes) > 1:
            row = next(i for i, c in enumerate(cells) if len(c) != len(cells[0]))
            raise KitError(f"{where}, row {row + 1}, column '{column}': {len(cells[row])} values, not the {len(cells[0])} "
                           "of the first row; every image must be the same size")
        n = sizes.pop()
        side = int(round(n ** 0.5))
        if side * side != n or n == 0:
            raise KitError(f"{where}, column '{column}': {n} values a row do not make a square image ({side} x {side} is "
                           f"{side * side}); array_columns hold side x side numbers, row by row")
        values = np.asarray(cells, dtype=np.float32)
        bad = ~np.isfinite(values)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise KitError(f"{where}, row {row + 1}, column '{column}': NaN or infinite values ({int(bad.sum())} such "
                           "values); fill them")
        channels.append(values.reshape(len(table), side, side))
    if len({c.shape for c in channels}) > 1:
        raise KitError(f"{where}: the array_columns {', '.join(columns)} hold images of different sizes")
    return np.stack(channels, axis=-1)  # (rows, side, side, channels)


def _numbers(value, where: str, row: int, column: str) -> list:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = value.split()
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    raise KitError(f"{where}, row {row + 1}, column '{column}': {str(value)[:40]!r} is not a list of numbers")


def channel_stats(read: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> tuple[list[float], list[float]]:
    """Per-channel mean and std, in the images' own units, over up to STAT_ROWS of the training `rows`."""
    chosen = rows[np.linspace(0, len(rows) - 1, min(STAT_ROWS, len(rows))).astype(int)] if len(rows) else rows
    total = squares = count = 0.0
    for start in range(0, len(chosen), 128):
        x = read(chosen[start : start + 128]).astype(np.float64)  # (n, S, S, C)
        total = total + x.sum((0, 1, 2))
        squares = squares + (x**2).sum((0, 1, 2))
        count += x.shape[0] * x.shape[1] * x.shape[2]
    if not count:
        return [0.0], [1.0]
    mean = total / count
    std = np.sqrt(np.maximum(squares / count - mean**2, 0.0))
    return mean.tolist(), np.where(std > 1e-6, std, 1.0).tolist()
