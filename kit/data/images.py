"""Decode every image once into a uint8 cache; epochs then read rows instead of JPEGs.

A GPU session has 4 vCPUs. Decoding and resizing a ~500x375 JPEG costs ~1.5 ms on a fast core, so decoding
every epoch starves a T4 on small models. The cache holds each image as a `side x side x 3` uint8 square
(shorter side resized to `side`, centre-cropped), a little larger than the training size so random crops have
room; augmentation and normalisation happen on the GPU (`kit.data.augment`).

Where the cache would not fit on disk or in RAM, `ImageFiles` streams instead: the same squares, decoded
when asked for. Both answer `read(rows)` with a (n, side, side, 3) uint8 array.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
from PIL import Image, ImageOps

import kit
from kit import files
from kit.data import arrays
from kit.data.arrays import Form
from kit.errors import KitError
from kit.runtime import hardware, paths, progress

CACHE_FORMAT = 3  # bump when `decode` changes what it writes, so stale caches are not reused
MISSING = "file not found"  # why a row is bad when its file does not exist
CROP_PCT = 0.875  # evaluation sees the centre image_size / side of the cached square, as timm's crop_pct does


def cache_side(image_size: int) -> int:
    return int(round(image_size / CROP_PCT))


class DecodeError(ValueError):
    pass


def decode(path: str | os.PathLike, side: int, form: Form = Form()) -> np.ndarray:
    """`side x side x 3` uint8 RGB: EXIF-rotated, grayscale/CMYK/palette converted, shorter side resized to
    `side`, centre-cropped. Raises DecodeError for a missing, truncated or non-image file. A .npy file is
    an array in `form` (kit.data.arrays), resized and cropped the same way.

    JPEGs less than twice the size go through libjpeg-turbo in torchvision and a uint8 antialiased resize
    (about 1.5x faster than Pillow's resize); larger ones through Pillow, whose draft mode decodes them at
    1/2, 1/4 or 1/8 scale; anything else, or anything the fast path refuses, through Pillow too."""
    try:
        if str(path).endswith(".npy"):
            return arrays.decode_npy(path, side, form)
        with Image.open(path) as im:
            if im.format == "JPEG" and min(im.size) < 2 * side:
                fast = _decode_jpeg(path, side)
                if fast is not None:
                    return fast
            return _decode_pillow(im, side)
    except FileNotFoundError:
        raise DecodeError(MISSING) from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise DecodeError(" ".join(str(e).split()) or type(e).__name__) from None


def _decode_pillow(im: Image.Image, side: int) -> np.ndarray:
    im.draft("RGB", (side, side))  # JPEG only: libjpeg decodes at 1/2, 1/4 or 1/8 scale when that covers `side`
    im = ImageOps.exif_transpose(im)
    if im.mode != "RGB":
        im = im.convert("RGB")
    w, h = im.size
    scale = side / min(w, h)
    nw, nh = max(side, round(w * scale)), max(side, round(h * scale))
    im = im.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = (nw - side) // 2, (nh - side) // 2
    return np.asarray(im.crop((left, top, left + side, top + side)), dtype=np.uint8)


def _decode_jpeg(path: str | os.PathLike, side: int) -> np.ndarray | None:
    try:
        import torch
        import torch.nn.functional as F
        from torchvision.io import ImageReadMode, decode_jpeg, read_file

        # torchvision 0.29 deprecates its decoders for TorchCodec; when they go, this path returns None
        warnings.filterwarnings("ignore", message="The image decoding and encoding capabilities of TorchVision")

        x = decode_jpeg(read_file(str(path)), mode=ImageReadMode.RGB, apply_exif_orientation=True)  # (3, H, W)
    except Exception:  # an older torchvision, CMYK, a truncated file: Pillow decides
        return None
    if x.dtype != torch.uint8 or x.shape[0] != 3:
        return None
    h, w = x.shape[1:]
    scale = side / min(h, w)
    nh, nw = max(side, round(h * scale)), max(side, round(w * scale))
    x = F.interpolate(x[None], size=(nh, nw), mode="bilinear", antialias=True)[0]
    top, left = (nh - side) // 2, (nw - side) // 2
    return x[:, top : top + side, left : left + side].permute(1, 2, 0).contiguous().numpy()  # (side, side, 3)


@dataclass
class ImageCache:
    """Decoded images in a memory-mapped uint8 file, row i = paths[i]; failed rows are zero and listed."""

    path: Path
    count: int
    side: int
    bad: dict[int, str] = field(default_factory=dict)  # row -> why it could not be decoded
    form: Form = Form()

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.count, self.side, self.side, self.form.channels)

    @property
    def nbytes(self) -> int:
        return self.count * self.side * self.side * self.form.channels * self.form.itemsize()

    def array(self) -> np.ndarray:
        # Opened per process (and per loader worker) rather than pickled: a pickled memmap is a full copy.
        return np.memmap(self.path, dtype=self.form.dtype, mode="r", shape=self.shape)

    def read(self, rows: np.ndarray) -> np.ndarray:
        if getattr(self, "_array", None) is None:
            self._array = self.array()
        return np.ascontiguousarray(self._array[rows])

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_array"}


@dataclass
class ImageFiles:
    """The streaming fallback: each image decoded when it is read (every epoch decodes it again)."""

    paths: list[str]
    side: int
    bad: dict[int, str] = field(default_factory=dict)  # rows whose file is missing or not an image
    form: Form = Form()

    @property
    def count(self) -> int:
        return len(self.paths)

    def read(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros((len(rows), self.side, self.side, self.form.channels), self.form.dtype)
        for i, row in enumerate(rows):
            if row not in self.bad:
                try:
                    out[i] = decode(self.paths[row], self.side, self.form)
                except DecodeError:
                    pass  # truncated data found late: a black image, as the cache stores for bad files
        return out


@dataclass
class PixelImages:
    """Images given as pixels (a table's rows), resized to `side` when read: the cache's source, and the
    fallback where the cache has no room."""

    pixels: np.ndarray  # (n, h, w) uint8 grayscale, or (n, h, w, channels) arrays (kit.data.arrays)
    side: int
    bad: dict[int, str] = field(default_factory=dict)  # always empty: every row is an image

    @property
    def count(self) -> int:
        return len(self.pixels)

    @property
    def form(self) -> Form:
        return arrays.form_of(self.pixels)

    def read(self, rows: np.ndarray) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        if self.pixels.ndim == 4:
            return arrays.resize(self.pixels[rows], self.side, self.form)
        x = torch.from_numpy(np.ascontiguousarray(self.pixels[rows]))[:, None].float()  # (n, 1, h, w)
        if x.shape[-1] != self.side:
            x = F.interpolate(x, size=(self.side, self.side), mode="bilinear", align_corners=False, antialias=True)
        x = x.round().clamp(0, 255).to(torch.uint8)[:, 0, :, :, None].expand(-1, -1, -1, 3)
        return np.ascontiguousarray(x.numpy())  # (n, side, side, 3), gray in every channel


def pixel_cache(pixels: np.ndarray, side: int, cache_dir: Path, desc: str = "resize",
                log: Callable[[str], None] = print) -> ImageCache:
    """The images of `pixels` resized once into a cache under `cache_dir` (reused for the same pixels)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    data_path, meta_path = pixel_cache_files(pixels, side, cache_dir)
    source = PixelImages(pixels, side)
    cache = ImageCache(data_path, len(pixels), side, form=source.form)
    if complete(data_path, meta_path, cache.nbytes):
        log(f"{desc}: reusing the decoded cache {data_path} ({cache.nbytes / 2**20:.0f} MB)")
        return cache
    out = np.memmap(data_path, dtype=cache.form.dtype, mode="w+", shape=cache.shape)
    for start in range(0, len(pixels), 1024):
        rows = np.arange(start, min(start + 1024, len(pixels)))
        out[rows] = source.read(rows)
    out.flush()
    del out
    files.write_text(meta_path, json.dumps({"side": side, "count": len(pixels), "bad": {}}, sort_keys=True))
    log(f"{desc}: {len(pixels)} images of {pixels.shape[1]} x {pixels.shape[2]} pixels resized into {data_path} "
        f"({cache.nbytes / 2**20:.0f} MB)")
    return cache


def pixel_bytes_to_build(pixels: np.ndarray, side: int, cache_dir: Path) -> int:
    """Disk a cache of `pixels` still needs: 0 when a complete one is there to reuse (a worker's load)."""
    nbytes = ImageCache(Path(), len(pixels), side, form=arrays.form_of(pixels)).nbytes
    return 0 if complete(*pixel_cache_files(pixels, side, cache_dir), nbytes) else nbytes


def pixel_cache_files(pixels: np.ndarray, side: int, cache_dir: Path) -> tuple[Path, Path]:
    h = hashlib.sha256(f"kit-pixel-cache/{CACHE_FORMAT}/{kit.__version__}/{side}/{pixels.shape}".encode())
    h.update(np.ascontiguousarray(pixels).tobytes())
    key = h.hexdigest()[:20]
    return cache_dir / f"{key}.u8", cache_dir / f"{key}.json"


def streaming(paths: Sequence[Path], side: int, workers: int, form: Form = Form()) -> ImageFiles:
    """ImageFiles for `paths`, with files that are missing or not images found now (headers only)."""
    names = [str(p) for p in paths]
    found = in_chunks(_check_headers, names, workers)
    bad = {i * CHUNK + j: why for i, part in enumerate(found) for j, why in part.items()}
    return ImageFiles(names, side, bad, form)


CHUNK = 256  # file names one task of a header pool reads
T = TypeVar("T")


def in_chunks(read: Callable[[list[str]], T], names: list[str], workers: int, size: int = CHUNK) -> list[T]:
    """`read` of each run of `size` names, in order: in a fork pool of `workers` where there is more than one run
    (headers only: a pool's start costs more than a few hundred files' headers)."""
    chunks = [names[i : i + size] for i in range(0, len(names), size)]
    if workers > 1 and len(chunks) > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(read, chunks)
    return [read(c) for c in chunks]


def _check_headers(paths: list[str]) -> dict[int, str]:
    bad = {}
    for j, path in enumerate(paths):
        try:
            if path.endswith(".npy"):
                arrays.header(path)
                continue
            with Image.open(path) as im:
                im.size  # noqa: B018 - opening reads and checks the header only
        except FileNotFoundError:
            bad[j] = MISSING
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
            bad[j] = " ".join(str(e).split()) or type(e).__name__
    return bad


def cache_refusal(nbytes: int, cache_dir: Path) -> str:
    """Why a cache of `nbytes` should not be built under `cache_dir` ("" if it fits): it must leave a tenth
    of the disk free, and fit in a fifth less than the RAM available (or every epoch reads it from disk)."""
    refusal = paths.disk_refusal(nbytes, cache_dir)
    if refusal:
        return refusal
    available = hardware.available_ram_bytes()
    if available and nbytes > 0.8 * available:
        return f"it needs {nbytes / 2**30:.1f} GB, more than the {available / 2**30:.1f} GB of RAM available can hold"
    return ""


def cache_files(paths: Sequence[Path], side: int, cache_dir: Path, form: Form = Form()) -> tuple[Path, Path]:
    key = cache_key(paths, side, form)
    return cache_dir / f"{key}.u8", cache_dir / f"{key}.json"


def bytes_to_build(paths: Sequence[Path], side: int, cache_dir: Path, form: Form = Form()) -> int:
    """Disk a cache of `paths` still needs: 0 when a complete one is there to reuse."""
    nbytes = ImageCache(Path(), len(paths), side, form=form).nbytes
    return 0 if complete(*cache_files(paths, side, cache_dir, form), nbytes) else nbytes


def complete(data_path: Path, meta_path: Path, nbytes: int) -> bool:
    """Whether a cache is there to reuse: its data file whole and its metadata (written last) present."""
    return meta_path.exists() and data_path.exists() and data_path.stat().st_size == nbytes


def cache_key(paths: Sequence[Path], side: int, form: Form = Form()) -> str:
    h = hashlib.sha256(f"kit-image-cache/{CACHE_FORMAT}/{kit.__version__}/{side}/{form.channels}/{form.dtype}".encode())
    for p in paths:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    return h.hexdigest()[:20]


def build_cache(
    paths: Sequence[Path],
    side: int,
    cache_dir: Path,
    workers: int,
    desc: str = "decode",
    log: Callable[[str], None] = print,
    form: Form = Form(),
) -> ImageCache:
    """Decode `paths` into a cache under `cache_dir` (reused when the files, size and code are unchanged)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    data_path, meta_path = cache_files(paths, side, cache_dir, form)
    cache = ImageCache(data_path, len(paths), side, form=form)
    if complete(data_path, meta_path, cache.nbytes):
        cache.bad = {int(k): v for k, v in json.loads(meta_path.read_text())["bad"].items()}
        log(f"{desc}: reusing the decoded cache {data_path} ({cache.nbytes / 2**20:.0f} MB)")
        return cache
    np.memmap(data_path, dtype=form.dtype, mode="w+", shape=cache.shape).flush()
    chunks = [list(range(i, min(i + 64, len(paths)))) for i in range(0, len(paths), 64)]
    job = _DecodeJob([str(p) for p in paths], str(data_path), side, form)
    bar = progress.bar(total=len(paths), desc=desc, unit="img")
    if workers > 1 and len(chunks) > 1:
        # fork: the children only run PIL and numpy, never CUDA, so forking after CUDA init is safe.
        with multiprocessing.get_context("fork").Pool(workers, initializer=_one_thread) as pool:
            for n, bad in pool.imap_unordered(job, chunks):
                cache.bad.update(bad)
                bar.update(n)
    else:
        for chunk in chunks:
            n, bad = job(chunk)
            cache.bad.update(bad)
            bar.update(n)
    bar.close()
    files.write_text(meta_path, json.dumps({"side": side, "count": len(paths), "bad": cache.bad}, sort_keys=True))
    log(f"{desc}: decoded {len(paths) - len(cache.bad)} of {len(paths)} images into {data_path} ({cache.nbytes / 2**20:.0f} MB)")
    return cache


def _one_thread() -> None:
    # the pool already has a process per core: torch's resize must not start threads of its own on top
    import torch

    torch.set_num_threads(1)


class _DecodeJob:
    """Decode a chunk of rows straight into the memory-mapped cache (picklable for the pool)."""

    def __init__(self, paths: list[str], data_path: str, side: int, form: Form):
        self.paths, self.data_path, self.side, self.form = paths, data_path, side, form

    def __call__(self, rows: list[int]) -> tuple[int, dict[int, str]]:
        shape = (len(self.paths), self.side, self.side, self.form.channels)
        out = np.memmap(self.data_path, dtype=self.form.dtype, mode="r+", shape=shape)
        bad = {}
        for i in rows:
            try:
                out[i] = decode(self.paths[i], self.side, self.form)
            except DecodeError as e:
                bad[i] = str(e)
        out.flush()
        del out
        return len(rows), bad


def check_bad(
    cache: ImageCache | ImageFiles, names: Sequence[str], what: str, outcome: str, max_share: float, log: Callable[[str], None]
) -> None:
    """Warn, naming them, about images that could not be decoded; stop if more than `max_share` failed."""
    if not cache.bad:
        return
    rows = sorted(cache.bad)
    listed = "; ".join(f"{names[i]}: {cache.bad[i]}" for i in rows[:5]) + ("; ..." if len(rows) > 5 else "")
    share = len(rows) / max(cache.count, 1)
    if share > max_share:
        missing = sum(cache.bad[i] == MISSING for i in rows)
        # Files that are not there at all point at the names the config builds, not at the files.
        fix = (f"{missing} of them do not exist: check image_ext and the {what} image folder in [data]"
               if missing > len(rows) / 2 else "replace or remove those files")
        raise KitError(
            f"{len(rows)} of {cache.count} {what} images could not be decoded ({share:.1%}, more than "
            f"{max_share:.0%}): {listed}; {fix}"
        )
    log(f"WARNING: {len(rows)} of {cache.count} {what} images could not be decoded and {outcome}: {listed}")
