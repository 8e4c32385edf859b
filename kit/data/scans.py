"""MRI scans as images: uw-madison-gi-tract-image-segmentation's slices, each a 16-bit grey PNG at
`<case>/<case>_<day>/scans/slice_<NNNN>_<width>_<height>_<spacing x>_<spacing y>.png`, named in the tables by the id
`<case>_<day>_slice_<NNNN>` (case123_day20_slice_0065). The file's name carries what the id lacks (its size and
pixel spacing), so the slices are found by walking the folder once (`index`), not by a name built from the id.

A slice's image is 2.5-D (`Scans`): three channels of the slices at `offsets` from it in the same scan (-2, 0, 2:
the slices two below and two above; a slice past the scan's end is its last), each read with its 16 bits and
scaled to bytes by the largest value the three hold, so that neighbours keep their relative brightness. A slice
whose file is not a grey PNG of 8 or 16 bits is one line naming it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from kit.errors import KitError

SLICE = re.compile(r"slice_(\d+)_(\d+)_(\d+)_([\d.]+)_([\d.]+)\.png")
ID = re.compile(r"(case\d+)_(day\d+)_slice_(\d+)")
GREY = ("I;16", "I;16B", "I;16L", "I", "L")  # the modes a grey PNG opens in (16-bit ones as I;16 or I)


def index(folder: Path) -> dict[str, str]:
    """Every slice under `folder` (<case>/<case>_<day>/scans/slice_*.png), by its id."""
    found = {}
    for path in sorted(folder.glob("*/*/scans/slice_*.png")):
        match = SLICE.fullmatch(path.name)
        if match:
            found[f"{path.parent.parent.name}_slice_{match.group(1)}"] = str(path)
    return found


def parts(slice_id: str, where: str) -> tuple[str, str, int]:
    """(case, day, slice number) of an id; a KitError naming `where` for one that is not <case>_<day>_slice_<N>."""
    match = ID.fullmatch(slice_id)
    if not match:
        raise KitError(f"{where}: id '{slice_id}' is not <case>_<day>_slice_<number> (such as case123_day20_slice_0065)")
    return match.group(1), match.group(2), int(match.group(3))


def grey(path: str) -> np.ndarray:
    """A slice's pixels as uint16 (every bit kept: PIL's convert("L") would clip values above 255)."""
    try:
        with Image.open(path) as im:
            if im.mode not in GREY:
                raise KitError(f"{path}: a slice is a grey PNG of 8 or 16 bits, and this one is {im.mode}")
            array = np.asarray(im)
    except FileNotFoundError:
        raise KitError(f"{path}: no such slice") from None
    except (OSError, ValueError, SyntaxError) as e:
        raise KitError(f"{path}: the slice cannot be read ({' '.join(str(e).split())[:80]})") from None
    if array.min(initial=0) < 0 or array.max(initial=0) > 65535:
        raise KitError(f"{path}: values from {array.min()} to {array.max()}, beyond 16 bits")
    return array.astype(np.uint16)


@dataclass(frozen=True)
class Scans:
    """How a slice becomes an (height, width, 3) uint8 image: the slices at `offsets` (one or three) from it in
    its scan, a channel each (one offset: the slice in all three)."""

    offsets: tuple[int, ...]
    _numbers: dict = field(default_factory=dict, compare=False, repr=False)  # each scan folder's slices, listed once

    def header(self, path: str) -> tuple[int, int, int]:
        try:
            with Image.open(path) as im:
                if im.mode not in GREY:
                    raise KitError(f"{path}: a slice is a grey PNG of 8 or 16 bits, and this one is {im.mode}")
                return im.size[1], im.size[0], 3
        except FileNotFoundError:
            raise KitError(f"{path}: no such slice") from None
        except (OSError, ValueError, SyntaxError) as e:
            raise KitError(f"{path}: the slice cannot be read ({' '.join(str(e).split())[:80]})") from None

    def read(self, path: str) -> np.ndarray:
        """The slice's (height, width, 3) uint8 image."""
        planes = [grey(p) for p in self.neighbours(path)]
        if len({p.shape for p in planes}) > 1:
            raise KitError(f"{path}: its scan's slices differ in size ({', '.join(str(p.shape) for p in planes)})")
        stack = np.stack(planes if len(planes) == 3 else planes * 3, -1).astype(np.float32)  # (H, W, 3)
        top = stack.max()
        return np.rint(stack / top * 255).astype(np.uint8) if top > 0 else np.zeros(stack.shape, np.uint8)

    def neighbours(self, path: str) -> list[str]:
        """The files of the slices at `offsets` from `path`'s, in its scan folder (past an end: the end slice)."""
        folder, name = Path(path).parent, Path(path).name
        if str(folder) not in self._numbers:
            numbers = {int(m.group(1)): str(folder / p.name) for p in folder.iterdir() if (m := SLICE.fullmatch(p.name))}
            self._numbers[str(folder)] = (sorted(numbers), numbers)
        order, files = self._numbers[str(folder)]
        match = SLICE.fullmatch(name)
        if match is None:
            raise KitError(f"{path}: not slice_<number>_<width>_<height>_<spacing>_<spacing>.png, as a scan's slices are")
        at = int(match.group(1))
        return [files[self._nearest(order, files, at, at + k)] for k in self.offsets]

    @staticmethod
    def _nearest(order: list[int], files: dict, at: int, wanted: int) -> int:
        if wanted in files:
            return wanted
        return order[0] if wanted < order[0] else order[-1] if wanted > order[-1] else at  # past an end, or a gap


def reader(offsets: tuple[int, ...]) -> Scans | None:
    """The slice reader `[data] slices` asks for, or None where images are files."""
    return Scans(tuple(offsets)) if offsets else None
