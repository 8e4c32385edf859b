"""Series tables (a CSV file a row: predict-volcanic-eruptions-ingv-oe's segments, ten sensors x 60,001 steps) as the
wave cache's clips: each file's columns one channel each, read once into one int16 file for the audio template.

A file is a header of column names and a line a step; every file holds the same columns (the first training file's,
kept in the recipe so prediction reads the test files alike). Values are stored as whole numbers clipped to the int16
range, as seismic counts are (a series of small floats must be scaled to it first); a null, or a column of nulls (a
sensor that recorded nothing), is 0. The files say no sample rate: [params] sample_rate says it. A file that cannot be
read, or lacks a column, is an empty clip listed in the cache's `bad`, as a sound file that cannot be decoded.
"""
from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import kit
from kit.data import waves
from kit.data.audio import Header
from kit.data.images import in_chunks
from kit.errors import KitError

SUFFIX = ".csv"
CACHE_FORMAT = 1  # bump when what `read` writes changes
CHUNK = 16  # files per reading task (a volcano segment is 0.6 M values)
PROBE_BYTES = 1 << 20  # what probe reads of a file at most


def columns_of(paths: Sequence[Path | str]) -> list[str]:
    """The column names of the first series file whose header line reads: one unreadable file is left out later as
    a bad clip, not taken for the layout; KitError only where none of the first 20 reads."""
    why = ""
    for path in paths[:20]:
        try:
            return _header(path)
        except (OSError, ValueError) as e:
            why = why or f"{Path(path).name}: cannot read its header ({' '.join(str(e).split())[:200]})"
    raise KitError(f"{why}; none of the first {min(len(paths), 20)} files' headers reads: check the series files") from None


def _header(path: Path | str) -> list[str]:
    return [str(c) for c in pd.read_csv(path, nrows=0).columns]


def read(path: str, columns: Sequence[str], max_frames: int = 0) -> np.ndarray:
    """(frames, channels) int16 of `columns`, its first `max_frames` steps (0: all); ValueError for a missing column."""
    have = _header(path)
    absent = [c for c in columns if c not in have]
    if absent:
        raise ValueError(f"no column '{absent[0]}' of the {len(columns)} the first training file holds")
    x = pd.read_csv(path, usecols=list(columns), dtype=np.float32, nrows=max_frames or None)[list(columns)].to_numpy()
    return np.clip(np.rint(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)), -32768, 32767).astype(np.int16)


def probe(path: str, channels: int) -> Header:
    """A file's header for planning: its lines less the header line (no value parsed; rate 0: unknown). A file over
    PROBE_BYTES is not read whole: its lines are its size over the mean line length of its first PROBE_BYTES, so
    planning reads at most that much of each file (the plan's frames, not the cache's, which reads every value)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        block = f.read(PROBE_BYTES)
    lines = block.count(b"\n") + (block[-1:] not in (b"\n", b""))
    if size > len(block) and block:
        lines = round(block.count(b"\n") * size / len(block))
    return Header(0, channels, max(0, lines - 1))


def _probe(paths: list[str], channels: int) -> list[Header | str]:
    out = []
    for p in paths:
        try:
            out.append(probe(p, channels))
        except FileNotFoundError:
            out.append("file not found")
        except OSError as e:
            out.append(str(e) or type(e).__name__)
    return out


def headers(paths: Sequence[Path], channels: int, workers: int = 1) -> tuple[list[Header | None], dict[int, str]]:
    """Each file's header (None where it cannot be read) and why the bad ones are bad (waves.headers' shape)."""
    found = [h for part in in_chunks(functools.partial(_probe, channels=channels), [str(p) for p in paths], workers)
             for h in part]
    return [h if isinstance(h, Header) else None for h in found], {i: h for i, h in enumerate(found) if isinstance(h, str)}


def cache_files(paths: Sequence[Path], columns: Sequence[str], rate: int, cache_dir: Path,
                max_frames: int = 0) -> tuple[Path, Path, Path]:
    h = hashlib.sha256(f"kit-series-cache/{CACHE_FORMAT}/{kit.__version__}/{rate}/{'|'.join(columns)}/{max_frames}".encode())
    for p in paths:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    key = h.hexdigest()[:20]
    return cache_dir / f"{key}.ser16", cache_dir / f"{key}.off", cache_dir / f"{key}.json"


def complete(paths: Sequence[Path], columns: Sequence[str], rate: int, cache_dir: Path, max_frames: int = 0) -> bool:
    return all(f.exists() for f in cache_files(paths, columns, rate, cache_dir, max_frames))


def build_cache(paths: Sequence[Path], columns: Sequence[str], rate: int, cache_dir: Path, workers: int,
                desc: str = "read", log: Callable[[str], None] = print, max_frames: int = 0) -> waves.WaveCache:
    """Every file's `columns` into a cache of len(columns) channels under `cache_dir` (reused when the files, columns
    and code are unchanged), each its first `max_frames` steps (0: whole)."""
    columns = list(columns)
    reader = functools.partial(read, columns=columns, max_frames=max_frames)
    cache, built = waves.fill([str(p) for p in paths], reader, (OSError, ValueError),
                              cache_files(paths, columns, rate, cache_dir, max_frames), rate, len(columns), workers, desc,
                              log, "series", {"format": "series int16", "rate": rate, "channels": len(columns)}, CHUNK)
    if built:
        total = cache.offsets[-1] // len(columns)
        log(f"{desc}: read {cache.count - len(cache.bad)} of {cache.count} series files ({len(columns)} columns, "
            f"{total / max(rate, 1) / 3600:.2f} h at {rate} Hz) into {cache.path} ({cache.offsets[-1] * 2 / 2**20:.0f} MB)")
    return cache
