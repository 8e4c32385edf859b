"""Gigapixel TIFFs read a region at a time (segmentation: hubmap's kidney slides, vesuvius' layers), never whole.

A slide of 30,000 x 40,000 px is 3.6 GB of RGB: more than a session can hold a few of. `Tiff` opens the file once
and reads any region of it by decoding only the strips or tiles that region touches (tifffile's page segments, for
every compression tifffile decodes; no zarr). Its layout is normalised to (height, width, channels): the files come
as (H, W, 3), channel-first (3, H, W), with extra leading axes of one ((1, 1, 3, H, W): a page per channel), or
one channel (H, W). A pyramid's smaller levels (SubIFDs or further series levels, as tifffile finds them) serve a
reduced read where one divides the reduce factor; the rest of the reduction is the mean of each block.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit.errors import KitError

SPATIAL = ("Y", "X")
MAX_CHANNELS = 4  # an image has at most RGBA; more (a stack of layers) is not one image
BLOCK_ROWS = 2048  # full-resolution rows read at a time by `reduced`: about 250 MB of a 40,000 px wide RGB slide


@dataclass(frozen=True)
class Level:
    """One resolution of the image: its pages (one per channel plane, or one for all), its size, and how many
    full-resolution pixels one of its pixels spans."""
    pages: tuple
    height: int
    width: int
    factor: int


def _tifffile():
    try:
        import tifffile
    except ImportError:  # pragma: no cover - Kaggle's image and the dev extras have it
        raise KitError("reading TIFF images needs the tifffile package (on Kaggle's image; pip install tifffile)") from None
    return tifffile


def layout(shape: tuple[int, ...], axes: str, where: str) -> tuple[int, int, int]:
    """(height, width, channels) of a series of `shape` and tifffile's `axes`: the axes of size one dropped, one
    axis left beside Y and X (the samples, or planes of a channel-first file) as the channels. Anything else (two
    extra axes, more than MAX_CHANNELS channels, no Y or X) is one KitError naming `where`."""
    if "Y" not in axes or "X" not in axes or len(axes) != len(shape):
        raise KitError(f"{where}: TIFF of shape {tuple(shape)} (axes {axes}) has no height and width axes; expected an "
                       "image of height x width (x channels)")
    extra = [(a, n) for a, n in zip(axes, shape) if a not in SPATIAL and n != 1]
    channels = extra[0][1] if len(extra) == 1 else 1
    if len(extra) > 1 or channels > MAX_CHANNELS:
        raise KitError(f"{where}: TIFF of shape {tuple(shape)} (axes {axes}) is not one image of height x width x up to "
                       f"{MAX_CHANNELS} channels; write each layer as its own image or name the layers")
    return int(shape[axes.index("Y")]), int(shape[axes.index("X")]), int(channels)


class Tiff:
    """One TIFF file held open: its size as (height, width, channels), its pyramid levels, and `region` and
    `reduced` reads that decode only the segments they need."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        tifffile = _tifffile()
        try:
            self._file = tifffile.TiffFile(self.path)
        except FileNotFoundError:
            raise KitError(f"{self.path}: no such TIFF file") from None
        except Exception as e:  # tifffile's own error types and struct errors for a file that is not a TIFF
            raise KitError(f"{self.path}: not a readable TIFF ({str(e).splitlines()[0][:100]})") from None
        series = self._file.series[0]
        self.height, self.width, self.channels = layout(series.shape, series.axes, str(self.path))
        self.dtype = np.dtype(series.dtype)
        self.levels = self._levels(series)

    def _levels(self, series) -> list[Level]:
        levels = []
        for level in series.levels:
            pages = tuple(level.pages)
            h, w, c = layout(level.shape, level.axes, str(self.path))
            if c != self.channels or sum(self._page_channels(p) for p in pages) != c:
                continue  # a level tifffile pairs differently (a thumbnail, a label image): not read
            factor = round(self.height / h)
            if factor >= 1 and round(self.width / w) == factor:
                levels.append(Level(pages, h, w, factor))
        return levels

    @staticmethod
    def _page_channels(page) -> int:
        separate, _depth, _h, _w, contig = page.shaped
        return separate * contig

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Tiff:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reads ------------------------------------------------------------------------------------------
    def _page_region(self, page, top: int, left: int, height: int, width: int) -> np.ndarray:
        """(height, width, channels of the page) of one page, from the segments the region touches."""
        separate, _depth, page_h, page_w, contig = page.shaped
        out = np.zeros((separate, height, width, contig), page.dtype)
        if page.is_tiled:
            seg_h, seg_w = page.tilelength, page.tilewidth
        else:
            seg_h, seg_w = min(page.rowsperstrip or page_h, page_h), page_w
        across, down = -(-page_w // seg_w), -(-page_h // seg_h)
        fh = self._file.filehandle
        for plane in range(separate):
            for row in range(top // seg_h, (top + height - 1) // seg_h + 1):
                for col in range(left // seg_w, (left + width - 1) // seg_w + 1):
                    index = plane * across * down + row * across + col
                    fh.seek(page.dataoffsets[index])
                    data = fh.read(page.databytecounts[index]) if page.databytecounts[index] else None
                    segment, _where, _shape = page.decode(data, index, jpegtables=page.jpegtables)
                    if segment is None:
                        continue  # an empty segment reads as zeros
                    y0, x0 = row * seg_h, col * seg_w
                    ys, xs = max(top, y0), max(left, x0)
                    ye, xe = min(top + height, y0 + seg_h, page_h), min(left + width, x0 + seg_w, page_w)
                    out[plane, ys - top:ye - top, xs - left:xe - left] = segment[0, ys - y0:ye - y0, xs - x0:xe - x0]
        return np.moveaxis(out, 0, -2).reshape(height, width, separate * contig)  # (h, w, separate x contig)

    def _level_region(self, level: Level, top: int, left: int, height: int, width: int) -> np.ndarray:
        """(height, width, channels) of one level, the region clipped to the level and the rest zero."""
        out = np.zeros((height, width, self.channels), self.dtype)
        h, w = min(height, level.height - top), min(width, level.width - left)
        if h <= 0 or w <= 0:
            return out
        out[:h, :w] = np.concatenate([self._page_region(p, top, left, h, w) for p in level.pages], -1)
        return out

    def region(self, top: int, left: int, height: int, width: int, reduce: int = 1) -> np.ndarray:
        """(height, width, channels) of the image at 1/`reduce` of its resolution, its top left at (top, left) in
        reduced pixels: read from the largest pyramid level whose factor divides `reduce`, then each block of the
        rest of the reduction averaged. Past the image's edge: zeros."""
        if reduce < 1 or top < 0 or left < 0 or height < 1 or width < 1:
            raise KitError(f"{self.path}: region ({top}, {left}, {height}, {width}) at reduce {reduce} is not a region "
                           "of the image; reduce and the size must be at least 1, the corner not negative")
        level = max((lv for lv in self.levels if reduce % lv.factor == 0), key=lambda lv: lv.factor)
        rest = reduce // level.factor
        block = self._level_region(level, top * rest, left * rest, height * rest, width * rest)
        if rest == 1:
            return block
        means = block.reshape(height, rest, width, rest, self.channels).mean((1, 3))  # (h, w, C)
        return means.round().astype(self.dtype) if self.dtype.kind in "ui" else means.astype(self.dtype)

    def reduced(self, reduce: int) -> np.ndarray:
        """The whole image at 1/`reduce` of its resolution, (ceil(H / reduce), ceil(W / reduce), channels), read in
        blocks of about BLOCK_ROWS full-resolution rows (never the whole image at full size)."""
        height, width = -(-self.height // reduce), -(-self.width // reduce)
        out = np.empty((height, width, self.channels), self.dtype)
        step = max(1, BLOCK_ROWS // reduce)
        for top in range(0, height, step):
            rows = min(step, height - top)
            out[top:top + rows] = self.region(top, 0, rows, width, reduce)
        return out


def as_bytes(image: np.ndarray) -> np.ndarray:
    """(h, w, 3) uint8 of a region: 16-bit scaled to bytes (/ 257), floats over [0, 1], grey repeated, alpha dropped."""
    if image.dtype == np.uint16:
        image = (image // 257).astype(np.uint8)
    elif image.dtype.kind == "f":
        image = np.rint(np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)
    image = image.astype(np.uint8, copy=False)
    return np.repeat(image, 3, -1) if image.shape[-1] == 1 else image[..., :3]


@dataclass(frozen=True)
class Slides:
    """The canvas reader (kit.data.canvas.Reader) of gigapixel TIFF images (hubmap's slides): each read whole at
    1/`reduce` of its resolution, a block of rows at a time, as (h, w, 3) uint8; `full_size` is its own."""

    reduce: int

    def header(self, path: str) -> tuple[int, int, int]:
        with Tiff(path) as image:
            return -(-image.height // self.reduce), -(-image.width // self.reduce), 3

    def full_size(self, path: str) -> tuple[int, int]:
        with Tiff(path) as image:
            return image.height, image.width

    def read(self, path: str) -> np.ndarray:
        with Tiff(path) as image:
            return as_bytes(image.reduced(self.reduce))
