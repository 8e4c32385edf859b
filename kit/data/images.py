"""Decode every image once into a uint8 cache; epochs then read rows instead of JPEGs.

A GPU session has 4 vCPUs. Decoding and resizing a ~500x375 JPEG costs ~1.5 ms on a fast core, so decoding
every epoch starves a T4 on small models. The cache holds each image as a `side x side x 3` uint8 square
(shorter side resized to `side`, centre-cropped), a little larger than the training size so random crops have
room; augmentation and normalisation happen on the GPU (`kit.data.augment`).
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from kit import files
from kit.errors import KitError
from kit.runtime import progress

CACHE_FORMAT = 1  # bump when `decode` changes what it writes, so stale caches are not reused
CROP_PCT = 0.875  # evaluation sees the centre image_size / side of the cached square, as timm's crop_pct does


def cache_side(image_size: int) -> int:
    return int(round(image_size / CROP_PCT))


class DecodeError(ValueError):
    pass


def decode(path: str | os.PathLike, side: int) -> np.ndarray:
    """`side x side x 3` uint8 RGB: EXIF-rotated, grayscale/CMYK/palette converted, shorter side resized to
    `side`, centre-cropped. Raises DecodeError for a missing, truncated or non-image file."""
    try:
        with Image.open(path) as im:
            # JPEG only: let libjpeg decode at 1/2, 1/4 or 1/8 scale when that still covers `side`.
            im.draft("RGB", (side, side))
            im = ImageOps.exif_transpose(im)
            if im.mode != "RGB":
                im = im.convert("RGB")
            w, h = im.size
            scale = side / min(w, h)
            nw, nh = max(side, round(w * scale)), max(side, round(h * scale))
            im = im.resize((nw, nh), Image.Resampling.BILINEAR)
            left, top = (nw - side) // 2, (nh - side) // 2
            return np.asarray(im.crop((left, top, left + side, top + side)), dtype=np.uint8)
    except FileNotFoundError:
        raise DecodeError("file not found") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise DecodeError(" ".join(str(e).split()) or type(e).__name__) from None


@dataclass
class ImageCache:
    """Decoded images in a memory-mapped uint8 file, row i = paths[i]; failed rows are zero and listed."""

    path: Path
    count: int
    side: int
    bad: dict[int, str] = field(default_factory=dict)  # row -> why it could not be decoded

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.count, self.side, self.side, 3)

    @property
    def nbytes(self) -> int:
        return self.count * self.side * self.side * 3

    def array(self) -> np.ndarray:
        # Opened per process (and per loader worker) rather than pickled: a pickled memmap is a full copy.
        return np.memmap(self.path, dtype=np.uint8, mode="r", shape=self.shape)


def cache_key(paths: Sequence[Path], side: int) -> str:
    h = hashlib.sha256(f"kit-image-cache/{CACHE_FORMAT}/{side}".encode())
    for p in paths:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    return h.hexdigest()[:20]


def default_cache_dir() -> Path:
    # Not under /kaggle/working: Kaggle saves that folder as the kernel's output.
    return Path(os.environ.get("KIT_CACHE_DIR") or Path(tempfile.gettempdir()) / "kit-cache")


def build_cache(
    paths: Sequence[Path],
    side: int,
    cache_dir: Path,
    workers: int,
    desc: str = "decode",
    log: Callable[[str], None] = print,
) -> ImageCache:
    """Decode `paths` into a cache under `cache_dir` (reused when the files, size and code are unchanged)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    key = cache_key(paths, side)
    data_path, meta_path = cache_dir / f"{key}.u8", cache_dir / f"{key}.json"
    cache = ImageCache(data_path, len(paths), side)
    if meta_path.exists() and data_path.exists() and data_path.stat().st_size == cache.nbytes:
        cache.bad = {int(k): v for k, v in json.loads(meta_path.read_text())["bad"].items()}
        log(f"{desc}: reusing the decoded cache {data_path} ({cache.nbytes / 2**20:.0f} MB)")
        return cache
    free = shutil.disk_usage(cache_dir).free
    if cache.nbytes > free * 0.9:
        raise KitError(
            f"{desc}: the decoded cache needs {cache.nbytes / 2**30:.1f} GB but {cache_dir} has "
            f"{free / 2**30:.1f} GB free; lower image_size or free disk space"
        )
    np.memmap(data_path, dtype=np.uint8, mode="w+", shape=cache.shape).flush()
    chunks = [list(range(i, min(i + 64, len(paths)))) for i in range(0, len(paths), 64)]
    job = _DecodeJob([str(p) for p in paths], str(data_path), side)
    bar = progress.bar(total=len(paths), desc=desc, unit="img")
    if workers > 1 and len(chunks) > 1:
        # fork: the children only run PIL and numpy, never CUDA, so forking after CUDA init is safe.
        with multiprocessing.get_context("fork").Pool(workers) as pool:
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


class _DecodeJob:
    """Decode a chunk of rows straight into the memory-mapped cache (picklable for the pool)."""

    def __init__(self, paths: list[str], data_path: str, side: int):
        self.paths, self.data_path, self.side = paths, data_path, side

    def __call__(self, rows: list[int]) -> tuple[int, dict[int, str]]:
        out = np.memmap(self.data_path, dtype=np.uint8, mode="r+", shape=(len(self.paths), self.side, self.side, 3))
        bad = {}
        for i in rows:
            try:
                out[i] = decode(self.paths[i], self.side)
            except DecodeError as e:
                bad[i] = str(e)
        out.flush()
        del out
        return len(rows), bad


def check_bad(
    cache: ImageCache, names: Sequence[str], what: str, outcome: str, max_share: float, log: Callable[[str], None]
) -> None:
    """Warn, naming them, about images that could not be decoded; stop if more than `max_share` failed."""
    if not cache.bad:
        return
    rows = sorted(cache.bad)
    listed = "; ".join(f"{names[i]}: {cache.bad[i]}" for i in rows[:5]) + ("; ..." if len(rows) > 5 else "")
    share = len(rows) / max(cache.count, 1)
    if share > max_share:
        raise KitError(
            f"{len(rows)} of {cache.count} {what} images could not be decoded ({share:.1%}, more than "
            f"{max_share:.0%}): {listed}; replace or remove those files"
        )
    log(f"WARNING: {len(rows)} of {cache.count} {what} images could not be decoded and {outcome}: {listed}")
