"""Images and their masks decoded once into uint8 caches on one canvas per split: no epoch decodes a PNG again.

A segmentation model must see every pixel the metric scores, so nothing is resized or centre-cropped (as the
classification cache does): each image keeps its pixels, at the top left of a canvas as large as the split's
largest image (and one tile at least), the rest of the canvas its mirror image (what the model sees beyond a
border, as TGS's winners padded 101 px to 128). Masks lie on a canvas of their own, mirrored the same way, as
their files hold them (class indices, 0/255, one channel per class, a clean page) or, from run-length codes,
one 0/1 channel per class; the values found are kept, and the pipeline reads them through a lookup table.
Each row's own height and width are kept: validation and prediction score and write only those pixels.
"""
from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

import kit
from kit import files
from kit.data import images, rle, stitch, tiles, tissue
from kit.errors import KitError
from kit.runtime import progress

CACHE_FORMAT = 1  # bump when what `_decode_row` writes changes
MISSING = images.MISSING
CHUNK_ROWS = 32  # rows a decoding job takes at a time: a split of more decodes in a pool
PAD_ROWS = 512  # rows of a canvas written at a time where an image is mirrored onto it
THUMB_SIDE = 512  # the longest side of an image as the sample and prediction grids show it
WITHOUT_ALPHA = {"RGBA": "RGB", "CMYK": "RGB", "LA": "L", "PA": "P", "RGBX": "RGB"}


class Reader(Protocol):
    """What turns a row's path into its image where it is not an image file (kit.data.bands: a record's folder of
    band arrays): its (height, width, channels) header, and its (height, width, channels) uint8 pixels; a bad
    record is a KitError. Picklable, and its repr stamps the cache. `image_channels`, where it has one, is what
    every image holds (3 otherwise: kit.data.layers reads a slab of layers, one a channel)."""

    def header(self, path: str) -> tuple[int, int, int]: ...

    def read(self, path: str) -> np.ndarray: ...


@dataclass(frozen=True)
class Masks:
    """Where each row's mask comes from: a mask image file per row (`paths`), or run-length codes (`codes`: per
    row, (channel, code) pairs), into `channels` channels."""

    paths: tuple[str, ...] = ()
    codes: tuple[tuple[tuple[int, str], ...], ...] = ()
    channels: int = 1
    names: tuple[str, ...] = ()  # each row's name in messages (its file, or its table row)
    order: str = "column"  # the codes' pixel order (kit.data.rle)


@dataclass
class Canvas:
    """A split's decoded images (count, height, width, channels) and masks (count, height, width, mask_channels) in
    memory-mapped uint8 files; `sizes` each row's own (height, width); bad rows (no image) are listed."""

    path: Path
    count: int
    height: int
    width: int
    sizes: np.ndarray  # (count, 2)
    mask_channels: int = 0  # 0: no masks (a test split)
    bad: dict[int, str] = field(default_factory=dict)
    values: list[int] = field(default_factory=list)  # the distinct values the masks hold
    equal_channels: bool = True  # every mask file's channels are alike (a grey mask saved as RGB)
    channels: int = 3  # each image's (RGB; a reader's own, such as a slab of layers)

    @property
    def mask_path(self) -> Path:
        return self.path.with_suffix(".masks.u8")

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        # opened once per process (and per loader worker) rather than pickled: a pickled memmap is a full copy
        if getattr(self, "_arrays", None) is None:
            image = np.memmap(self.path, np.uint8, "r", shape=(self.count, self.height, self.width, self.channels))
            mask = (np.memmap(self.mask_path, np.uint8, "r", shape=(self.count, self.height, self.width, self.mask_channels))
                    if self.mask_channels else None)
            self._arrays = (image, mask)
        return self._arrays

    def read(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Whole canvases of `rows`: images (n, H, W, channels) and masks (n, H, W, M) or None."""
        image, mask = self.arrays()
        return np.ascontiguousarray(image[rows]), None if mask is None else np.ascontiguousarray(mask[rows])

    def thumbnails(self, rows: np.ndarray, side: int = THUMB_SIDE) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        """Each row's image (and mask) at its own size, every k-th pixel (`thumbnail_cut`): at most `side` px a side,
        read without its canvas (a vesuvius fragment's slab is 2.3 GB, its thumbnail a few MB)."""
        image, mask = self.arrays()
        cuts = [(r, thumbnail_cut(h, w, side)) for r, (h, w) in zip(np.asarray(rows).tolist(), self.sizes[rows].tolist())]
        pictures = [np.ascontiguousarray(image[(r, *cut)]) for r, cut in cuts]
        return pictures, None if mask is None else [np.ascontiguousarray(mask[(r, *cut)]) for r, cut in cuts]

    def tiles(self, rows: np.ndarray, places: np.ndarray, tile: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(n, tile, tile, channels) images and masks of each row at its (top, left) in `places`: only those pixels read."""
        image, mask = self.arrays()
        cut = [(slice(y, y + tile), slice(x, x + tile)) for y, x in places.tolist()]
        pictures = np.stack([image[r, ys, xs] for r, (ys, xs) in zip(rows.tolist(), cut)])
        return pictures, None if mask is None else np.stack([mask[r, ys, xs] for r, (ys, xs) in zip(rows.tolist(), cut)])

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_arrays"}


def thumbnail_cut(height: int, width: int, side: int = THUMB_SIDE) -> tuple[slice, slice]:
    """The pixels shown of an image of (height, width): every k-th, its longest side at most `side`."""
    k = max(1, -(-max(height, width) // side))
    return slice(0, height, k), slice(0, width, k)


def header(path: str, reader: Reader | None = None) -> tuple[int, int, int] | str:
    """(height, width, bands) of an image file from its header, or why it cannot be read (a record `reader` reads:
    its header, or a KitError for a bad record)."""
    if reader is not None:
        return reader.header(path)
    try:
        with Image.open(path) as im:
            return im.size[1], im.size[0], len(im.getbands())
    except FileNotFoundError:
        return MISSING
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        return " ".join(str(e).split()) or type(e).__name__


def headers(paths: Sequence[str], workers: int, reader: Reader | None = None) -> list[tuple[int, int, int] | str]:
    if workers > 1 and len(paths) > 256:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(functools.partial(header, reader=reader), paths, chunksize=256)
    return [header(p, reader) for p in paths]


def build(paths: Sequence[str], masks: Masks | None, sizes: np.ndarray, canvas: tuple[int, int], cache_dir: Path,
          workers: int, desc: str = "decode", log: Callable[[str], None] = print, reader: Reader | None = None) -> Canvas:
    """Decode every image of `paths` (and its mask) onto a canvas of (height, width) in a cache under `cache_dir`,
    reused when the files, codes and canvas are unchanged. `sizes`: each image's (height, width) from its header
    (0, 0 for a file that cannot be read: a bad row). A mask whose size differs from its image's, a run-length code
    past its image's end, or a mask of values a byte cannot hold is one KitError."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    channels = masks.channels if masks is not None else 0
    path = cache_dir / f"{key(paths, masks, canvas, reader)}.u8"
    meta = path.with_suffix(".json")
    out = Canvas(path, len(paths), canvas[0], canvas[1], np.asarray(sizes, np.int64).reshape(-1, 2), channels,
                 channels=getattr(reader, "image_channels", 3))
    image_bytes = out.count * canvas[0] * canvas[1] * out.channels
    mask_bytes = out.count * canvas[0] * canvas[1] * channels
    if images.complete(path, meta, image_bytes) and (not channels or images.complete(out.mask_path, meta, mask_bytes)):
        saved = json.loads(meta.read_text())
        out.bad, out.values, out.equal_channels = ({int(k): v for k, v in saved["bad"].items()}, saved["values"],
                                                   saved["equal_channels"])
        log(f"{desc}: reusing the decoded cache {path} ({(image_bytes + mask_bytes) / 2**20:.0f} MB)")
        return out
    refusal = images.cache_refusal(image_bytes + mask_bytes, cache_dir)
    if refusal:
        raise KitError(f"{desc}: the decoded images do not fit ({refusal}); the segmentation template keeps every pixel, "
                       "so free space or use a machine with more")
    np.memmap(path, np.uint8, "w+", shape=(out.count, *canvas, out.channels)).flush()
    if channels:
        np.memmap(out.mask_path, np.uint8, "w+", shape=(out.count, *canvas, channels)).flush()
    job = _DecodeJob(list(paths), masks, str(path), canvas, out.count, reader, out.channels)
    chunks = [list(range(i, min(i + CHUNK_ROWS, out.count))) for i in range(0, out.count, CHUNK_ROWS)]
    bar = progress.bar(total=out.count, desc=desc, unit="img")
    values: set[int] = set()
    problems: list[str] = []
    with (multiprocessing.get_context("fork").Pool(workers, initializer=images._one_thread)
          if workers > 1 and len(chunks) > 1 else _Serial()) as pool:
        for n, bad, found, equal, problem in pool.imap_unordered(job, chunks):
            out.bad.update(bad)
            values.update(found)
            out.equal_channels &= equal
            problems += problem
            bar.update(n)
    bar.close()
    if problems:
        raise KitError(sorted(problems)[0])
    out.values = sorted(values)
    files.write_text(meta, json.dumps({"bad": out.bad, "values": out.values, "equal_channels": out.equal_channels},
                                      sort_keys=True))
    log(f"{desc}: decoded {out.count - len(out.bad)} of {out.count} images{' and their masks' if channels else ''} onto "
        f"{canvas[0]} x {canvas[1]} canvases in {path} ({(image_bytes + mask_bytes) / 2**20:.0f} MB)")
    return out


def key(paths: Sequence[str], masks: Masks | None, canvas: tuple[int, int], reader: Reader | None = None) -> str:
    h = hashlib.sha256(f"kit-canvas/{CACHE_FORMAT}/{kit.__version__}/{canvas}/{reader!r}".encode())
    stamped = list(paths) + (list(masks.paths) if masks is not None else [])
    for p in stamped:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    if masks is not None:
        h.update(json.dumps([masks.codes, masks.channels, masks.order]).encode())  # "1 4" is a column or a row
    return h.hexdigest()[:20]


class _Serial:
    """A pool's imap_unordered in this process (one worker, or one chunk)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap_unordered(self, job, chunks):
        return map(job, chunks)


def mirrored(size: int, n: int) -> np.ndarray:
    """Indices 0 .. size - 1 of an axis of n values mirrored beyond its end (np.pad's "symmetric": 0 1 2 2 1 0 0 ..)."""
    i = np.arange(size) % (2 * n)
    return np.where(i < n, i, 2 * n - 1 - i)


def mirrored_bands(array: np.ndarray, height: int, width: int) -> Iterator[tuple[int, np.ndarray]]:
    """(h, w, c) on a canvas of (height, width, c) PAD_ROWS rows at a time, each band's first row and pixels: the
    array at the top left, mirrored beyond its edges (np.pad's "symmetric"), with no canvas-sized copy beside the
    image (a 16-layer slab of vesuvius' largest fragment is 2.3 GB)."""
    h, w = array.shape[:2]
    rows, cols = mirrored(height, h), mirrored(width, w) if width > w else slice(None)
    for top in range(0, height, PAD_ROWS):
        band = array[top:top + PAD_ROWS] if top + PAD_ROWS <= h else array[rows[top:top + PAD_ROWS]]
        yield top, np.ascontiguousarray(band[:, cols], np.uint8)


class CanvasFile:
    """A canvas file's rows (count, height, width, channels), each image written a band at a time through the file
    rather than a memory map: the pages written are the page cache's, not this process's resident memory (a
    memory map's count in it until it is closed: hubmap's canvases are 6 GB)."""

    def __init__(self, path: str | Path, height: int, width: int, channels: int):
        self.height, self.width, self.channels = height, width, channels
        self.file = open(path, "r+b")  # noqa: SIM115 (closed by close(), after every row of a chunk)

    def put(self, i: int, array: np.ndarray):
        if array.ndim != 3 or array.shape[2] != self.channels or array.shape[0] > self.height or array.shape[1] > self.width:
            raise ValueError(f"an image of {array.shape} on a canvas of {(self.height, self.width, self.channels)}")
        row = self.height * self.width * self.channels
        for top, band in mirrored_bands(array, self.height, self.width):
            self.file.seek(i * row + top * self.width * self.channels)
            self.file.write(band.data)

    def close(self):
        self.file.close()


def as_bytes(array: np.ndarray, where: str) -> np.ndarray:
    """A mask's values as uint8: 16-bit and float masks of two values (0 and one other) as 0 and 255."""
    if array.dtype == np.uint8:
        return array
    if array.dtype == bool:
        return array.astype(np.uint8)
    found = np.unique(array)
    if found.min() >= 0 and found.max() <= 255 and np.all(found == np.round(found)):
        return array.astype(np.uint8)
    if len(found) <= 2:
        return ((array > found.min()) * 255).astype(np.uint8) if found.min() == 0 else np.full(array.shape, 255, np.uint8)
    raise KitError(f"{where}: the mask holds {len(found)} values from {found.min()} to {found.max()}, which are not "
                   "classes of 0 to 255; save masks as 8-bit class indices or 0/255")


class _DecodeJob:
    """Decode a chunk of rows straight into the canvases' files (picklable for the pool)."""

    def __init__(self, paths: list[str], masks: Masks | None, path: str, canvas: tuple[int, int], count: int,
                 reader: Reader | None = None, channels: int = 3):
        self.paths, self.masks, self.path, self.canvas, self.count = paths, masks, path, canvas, count
        self.reader, self.channels = reader, channels

    def _picture(self, i: int) -> np.ndarray:
        if self.reader is not None:
            return self.reader.read(self.paths[i])
        with Image.open(self.paths[i]) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8)

    def __call__(self, rows: list[int]):
        image = CanvasFile(self.path, *self.canvas, self.channels)
        channels = self.masks.channels if self.masks is not None else 0
        mask = CanvasFile(Path(self.path).with_suffix(".masks.u8"), *self.canvas, channels) if channels else None
        bad, values, equal, problems = {}, set(), True, []
        try:
            for i in rows:
                try:
                    picture = self._picture(i)
                except KitError as e:  # a record the reader refuses: the whole run stops on it
                    problems.append(str(e))
                    continue
                except FileNotFoundError:
                    bad[i] = MISSING
                    continue
                except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
                    bad[i] = " ".join(str(e).split()) or type(e).__name__
                    continue
                image.put(i, picture)
                if mask is None:
                    continue
                try:
                    found, alike = self._mask(i, picture.shape[:2], mask)
                except KitError as e:
                    problems.append(str(e))
                    continue
                values |= found
                equal &= alike
        finally:
            image.close()
            if mask is not None:
                mask.close()
        return len(rows), bad, values, equal, problems

    def _mask(self, i: int, size: tuple[int, int], out: CanvasFile) -> tuple[set[int], bool]:
        m, (h, w) = self.masks, size
        where = m.names[i] if m.names else m.paths[i] if m.paths else self.paths[i]  # a mask file's fault names it
        reduce = getattr(self.reader, "reduce", 1)  # a gigapixel reader's images are 1/reduce of their masks' size
        full = self.reader.full_size(self.paths[i]) if reduce > 1 else (h, w)
        if m.codes:
            planes = np.zeros((h, w, m.channels), np.uint8)
            for channel, code in m.codes[i]:
                planes[..., channel] |= (stitch.decode_reduced(code, *full, reduce, where, m.order) if reduce > 1 else
                                         rle.decode(code, h, w, where, m.order))
            out.put(i, planes)
            return {0, 1}, True
        try:
            if m.paths[i].endswith(".npy"):  # contrails' human_pixel_masks.npy: (height, width, 1) of 0 and 1
                array = np.load(m.paths[i])
            else:
                with Image.open(m.paths[i]) as im:
                    # a palette's indices are the classes (as VOC's masks hold them); alpha and CMYK are dropped
                    array = np.asarray(im.convert(WITHOUT_ALPHA[im.mode]) if im.mode in WITHOUT_ALPHA else im)
        except (OSError, ValueError, SyntaxError) as e:
            raise KitError(f"{where}: the mask cannot be read ({' '.join(str(e).split())})") from None
        if array.shape[:2] != full:
            raise KitError(f"{where}: the mask is {array.shape[1]} x {array.shape[0]} px and its image {full[1]} x "
                           f"{full[0]}; a mask must have its image's size")
        array = array[::reduce, ::reduce]  # each block's top left pixel, as decode_reduced reads codes
        array = as_bytes(array, where)
        array = array[..., None] if array.ndim == 2 else array[..., :3]
        alike = bool(array.shape[-1] == 1 or (np.all(array == array[..., :1])))
        if array.shape[-1] != m.channels:  # a grey mask among colour ones: the same value in every channel
            array = np.repeat(array[..., :1], m.channels, axis=-1)
        out.put(i, array)
        return set(np.unique(array).tolist()), alike


class CanvasRows(Dataset):
    """Rows of a canvas for a loader, read a batch at a time: a random tile of `tile` px of each (training), or
    whole canvases with each image's own size (`tile` 0) and the tiles to predict at a time (`step`). Tissue
    filtering (kit.data.tissue): `kept` each row's training tile places to draw from; `keep` (count, tiles) each
    canvas's prediction tiles, sent as the batch's "keep"."""

    def __init__(self, canvas: Canvas, rows: np.ndarray, tile: int = 0, kept: dict[int, np.ndarray] | None = None,
                 keep: np.ndarray | None = None, step: int = 0):
        self.canvas, self.rows, self.tile, self.kept, self.keep = canvas, np.asarray(rows), tile, kept, keep
        self.step = step  # whole canvases: the tiles the model sees at a time, sent as the batch's "step" (0: all)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitems__(self, items: list[int]) -> dict[str, torch.Tensor]:
        rows = self.rows[np.asarray(items, dtype=np.int64)]
        sizes = self.canvas.sizes[rows]
        c, t = self.canvas, self.tile
        if t and (c.height > t or c.width > t):
            # the process's torch generator: a loader worker's is seeded by the loader, epoch by epoch
            if self.kept is None:
                places = tiles.places(sizes, t, torch.rand(len(rows), 2).numpy())
            else:
                draws = torch.rand(len(rows), 3).numpy()
                places = np.stack([tissue.draw(self.kept[r], sz, t, d) for r, sz, d in zip(rows.tolist(), sizes, draws)])
            pictures, masks = c.tiles(rows, places, t)
        else:
            pictures, masks = c.read(rows)
        batch = {"image": torch.from_numpy(pictures), "row": torch.from_numpy(rows)}
        if not t:
            batch["size"] = torch.from_numpy(sizes)
            batch["step"] = torch.full((len(rows),), self.step, dtype=torch.int64)
            if self.keep is not None:
                batch["keep"] = torch.from_numpy(self.keep[rows])
        if masks is not None:
            batch["mask"] = torch.from_numpy(masks)
        return batch

    def __getitem__(self, item: int) -> dict[str, torch.Tensor]:
        return self.__getitems__([item])
