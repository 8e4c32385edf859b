"""EEG recordings (hms-harmful-brain-activity-classification's parquet files) as the wave cache's clips: each
recording's window read once, as the double-banana montage's 16 bipolar channels, into one int16 file.

A recording is a parquet table of 20 columns at 200 Hz: the 10-20 system's 19 electrodes (Fp1 ... O2) and EKG. The
montage is the differences of neighbouring electrodes along four chains, left and right, lateral and parasagittal
(LL: Fp1-F7, F7-T3, T3-T5, T5-O1; LP: Fp1-F3, F3-C3, C3-P3, P3-O1; RP: Fp2-F4, F4-C4, C4-P4, P4-O2; RL: Fp2-F8,
F8-T4, T4-T6, T6-O2): what the experts who voted read. Each channel is kept (a chain's four are not summed: their
sum telescopes to its two ends). Microvolts are stored as int16 at SCALE a microvolt (±3,277 µV; a missing sample,
NaN, is 0), frames interleaved (`waves.WaveCache` with 16 channels), keyed by the files, the windows and the rate.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import kit
from kit.data import waves
from kit.data.waves import WaveCache

RATE = 200  # Hz: every recording, train and test (the competition's data page)
CHAINS = {"LL": ("Fp1", "F7", "T3", "T5", "O1"), "LP": ("Fp1", "F3", "C3", "P3", "O1"),
          "RP": ("Fp2", "F4", "C4", "P4", "O2"), "RL": ("Fp2", "F8", "T4", "T6", "O2")}
PAIRS = tuple((a, b) for chain in CHAINS.values() for a, b in zip(chain, chain[1:]))  # 16 bipolar channels
ELECTRODES = tuple(dict.fromkeys(e for pair in PAIRS for e in pair))
SCALE = 10.0  # int16 units a microvolt
CACHE_FORMAT = 1  # bump when what `montage` writes changes
CHUNK = 32  # recordings per decoding task


@dataclass(frozen=True)
class Window:
    """`frames` frames of a recording from frame `start` (0 frames: to its end)."""

    path: str
    start: int = 0
    frames: int = 0


def frames(path: Path | str) -> int:
    """A recording's frames, from its parquet footer (no sample read)."""
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def montage(path: Path | str, start: int = 0, count: int = 0) -> np.ndarray:
    """(frames, 16) float32 microvolts: the bipolar channels of frames start .. start + count (0: to the end)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=list(ELECTRODES))
    end = table.num_rows if not count else min(table.num_rows, start + count)
    part = table.slice(start, max(0, end - start))
    columns = {name: part.column(name).to_numpy(zero_copy_only=False).astype(np.float32) for name in ELECTRODES}
    x = np.stack([columns[a] - columns[b] for a, b in PAIRS], axis=1) if part.num_rows else np.zeros((0, len(PAIRS)))
    return np.nan_to_num(x.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)


def to_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x * SCALE), -32768, 32767).astype(np.int16)


def cache_files(windows: Sequence[Window], rate: int, cache_dir: Path) -> tuple[Path, Path, Path]:
    h = hashlib.sha256(f"kit-eeg-cache/{CACHE_FORMAT}/{kit.__version__}/{rate}/{len(PAIRS)}/int16".encode())
    for w in windows:
        st = os.stat(w.path) if os.path.exists(w.path) else None
        h.update(f"\n{os.path.abspath(w.path)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}|{w.start}|"
                 f"{w.frames}".encode())
    key = h.hexdigest()[:20]
    return cache_dir / f"{key}.eeg16", cache_dir / f"{key}.off", cache_dir / f"{key}.json"


def build_cache(windows: Sequence[Window], cache_dir: Path, workers: int, desc: str = "decode",
                log: Callable[[str], None] = print) -> WaveCache:
    """Every window's montage into a cache under `cache_dir` (reused when the files, windows and code are unchanged);
    a recording that cannot be read is an empty clip, listed in the cache's `bad` with why."""
    channels = len(PAIRS)
    # not parquet, or an electrode's column missing
    cache, built = waves.fill(list(windows), read_window, (OSError, ValueError, KeyError),
                              cache_files(windows, RATE, cache_dir), RATE, channels, workers, desc, log, "montage",
                              {"format": "montage int16", "rate": RATE, "channels": channels}, CHUNK)
    if built:
        total = cache.offsets[-1]
        log(f"{desc}: read {cache.count - len(cache.bad)} of {cache.count} recordings ({total / channels / RATE / 3600:.2f} "
            f"h, {channels} bipolar channels) into {cache.path} ({total * 2 / 2**20:.0f} MB)")
    return cache


def read_window(w: Window) -> np.ndarray:
    """(frames, 16) int16: a window's montage as the cache holds it."""
    return to_int16(montage(w.path, w.start, w.frames))
