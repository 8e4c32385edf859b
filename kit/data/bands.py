"""Satellite band stacks as images: a record is a folder of `band_XX.npy` arrays, each (height, width, time steps)
of brightness temperatures in kelvin (contrails' GOES-16 records: bands 08 to 16, 8 steps, the labelled one the
fifth), and its image is three channels of one step, as `[data] bands` names them:

- "ash": the false colour the contrails' labellers looked at (Kulik's ash RGB, as Google's paper draws it): red
  band 15 - band 14 over -4 to 2 K, green band 14 - band 11 over -4 to 5 K, blue band 14 over 243 to 303 K;
- three band numbers ("11 14 15"): each band's temperature over 180 to 320 K, a channel each.

Each channel is scaled to bytes once, as every image kit decodes is (kit.data.canvas), at the step `band_frame`
(0-based: contrails' labelled step is 4). A band file that is missing, not 3-D, of another size than the
record's others, or short of that step is one line naming the file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit.errors import KitError

ASH = (((15, 14), (-4.0, 2.0)), ((14, 11), (-4.0, 5.0)), ((14, None), (243.0, 303.0)))  # (band, minus), (low, high)
RAW = (180.0, 320.0)  # kelvin: the coldest cloud tops to the warmest ground, a raw band's channel range


@dataclass(frozen=True)
class Bands:
    """How a record folder becomes an (height, width, 3) uint8 image: `channels` ("ash" or three band numbers, as
    kit.spec.band_choice keeps them) at time step `frame`."""

    channels: str
    frame: int

    def bands(self) -> tuple[int, ...]:
        if self.channels == "ash":
            return (11, 14, 15)
        return tuple(int(b) for b in self.channels.split())

    def header(self, folder: str) -> tuple[int, int, int]:
        """(height, width, 3) from the bands' headers (memory-mapped, not read); a KitError for a bad stack."""
        shapes = {b: self._array(folder, b).shape for b in self.bands()}
        return (*next(iter(shapes.values()))[:2], 3)

    def read(self, folder: str) -> np.ndarray:
        """The record's (height, width, 3) uint8 image."""
        step = {b: np.asarray(self._array(folder, b)[:, :, self.frame], np.float32) for b in self.bands()}
        if self.channels == "ash":
            planes = [scale(step[a] - (step[b] if b else 0.0), *bounds) for (a, b), bounds in ASH]
        else:
            planes = [scale(step[b], *RAW) for b in self.bands()]
        return np.stack(planes, -1)

    def _array(self, folder: str, band: int) -> np.ndarray:
        path = Path(folder) / f"band_{band:02d}.npy"
        try:
            array = np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise KitError(f"{path}: no such band file; [data] bands = \"{self.channels}\" reads band_XX.npy for bands "
                           f"{', '.join(map(str, self.bands()))} in each record's folder") from None
        except (OSError, ValueError) as e:
            raise KitError(f"{path}: not a .npy array ({' '.join(str(e).split())[:80]})") from None
        if array.ndim != 3 or array.shape[2] <= self.frame or not np.issubdtype(array.dtype, np.number):
            raise KitError(f"{path}: a band is (height, width, time steps) of numbers with step {self.frame} ([data] "
                           f"band_frame) among them, and this one is {array.dtype} {array.shape}")
        first = Path(folder) / f"band_{self.bands()[0]:02d}.npy"
        if band != self.bands()[0]:
            expected = np.load(first, mmap_mode="r").shape[:2]
            if array.shape[:2] != expected:
                raise KitError(f"{path}: {array.shape[0]} x {array.shape[1]} px, where {first.name} is {expected[0]} x "
                               f"{expected[1]}; a record's bands share one size")
        return array


def scale(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Values over [low, high] as bytes 0 to 255, clipped beyond (NaN: 0)."""
    out = np.clip((np.nan_to_num(values, nan=low) - low) / (high - low), 0.0, 1.0)
    return np.rint(out * 255).astype(np.uint8)


def reader(channels: str, frame: int) -> Bands | None:
    """The record reader `[data] bands` asks for, or None where images are files."""
    return Bands(channels, frame) if channels else None
