"""Every clip decoded once into one flat int16 file; epochs then read crops of it instead of decoding sound.

The cache is three files under scratch, keyed by the clips' paths, sizes and times and the rate:
`<key>.wav16` (all clips' samples end to end, mono int16 at the run's rate, memory-mapped), `<key>.off` (int64
offsets, rows + 1: clip i is samples off[i]:off[i+1]) and `<key>.json`, written last (a cache without it is
rebuilt). Where the disk or RAM has no room (`images.cache_refusal`), `WaveFiles` decodes each clip when read.

`WaveRows` cuts a window of `length` samples from each clip on the host: a random one in training (clips
shorter than the window are placed at random in zeros), fixed ones in prediction (`windows`: starts every
`hop` samples, the last one flush with the clip's end), whose predictions the pipeline averages per clip.
"""
from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

import kit
from kit import files
from kit.data import audio
from kit.data.batch import Batch
from kit.data.images import in_chunks
from kit.runtime import progress

CACHE_FORMAT = 1  # bump when `audio.mono_int16` changes what it writes
CHUNK = 64  # clips per decoding task


def cache_key(paths: Sequence[Path], rate: int, max_frames: int = 0) -> str:
    cut = f"/{max_frames}" if max_frames else ""
    h = hashlib.sha256(f"kit-wave-cache/mono/{CACHE_FORMAT}/{kit.__version__}/{rate}/1/int16{cut}".encode())
    for p in paths:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    return h.hexdigest()[:20]


def cache_files(paths: Sequence[Path], rate: int, cache_dir: Path, max_frames: int = 0) -> tuple[Path, Path, Path]:
    key = cache_key(paths, rate, max_frames)
    return cache_dir / f"{key}.wav16", cache_dir / f"{key}.off", cache_dir / f"{key}.json"


@dataclass
class WaveCache:
    """Clips end to end in a memory-mapped int16 file; a bad clip is empty (no samples) and listed. A cache of
    several channels (kit.data.eeg's montages) holds each clip's frames interleaved: `clip` is then (frames, channels)."""

    path: Path
    offsets: np.ndarray  # int64, count + 1, in int16 values (frames x channels)
    rate: int
    bad: dict[int, str] = field(default_factory=dict)
    channels: int = 1

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        """Each clip's frames."""
        return np.diff(self.offsets) // self.channels

    def clip(self, row: int) -> np.ndarray:
        if getattr(self, "_array", None) is None:  # opened per process: a pickled memmap is a full copy
            self._array = np.memmap(self.path, dtype=np.int16, mode="r") if self.offsets[-1] else np.zeros(0, np.int16)
        values = self._array[self.offsets[row]:self.offsets[row + 1]]
        return values if self.channels == 1 else values.reshape(-1, self.channels)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_array"}


@dataclass
class WaveFiles:
    """The streaming fallback: each clip decoded (and resampled) when read."""

    paths: list[str]
    rate: int
    bad: dict[int, str] = field(default_factory=dict)
    frames: np.ndarray | None = None  # each clip's length at `rate`, from its header (at most max_frames)
    max_frames: int = 0  # each clip's first this many samples; 0: whole clips

    @property
    def count(self) -> int:
        return len(self.paths)

    def lengths(self) -> np.ndarray:
        return self.frames

    def clip(self, row: int) -> np.ndarray:
        if row in self.bad:
            return np.zeros(0, np.int16)
        try:
            rate, x = audio.read(self.paths[row])
            return cut(audio.mono_int16(x, rate, self.rate), self.max_frames)
        except audio.SoundError:
            return np.zeros(0, np.int16)


def headers(paths: Sequence[Path], workers: int = 1) -> tuple[list[audio.Header | None], dict[int, str]]:
    """Each clip's header (None where it cannot be read) and why the bad ones are bad."""
    parts = in_chunks(_probe, [str(p) for p in paths], workers)
    found = [h for part in parts for h in part]
    return [h if isinstance(h, audio.Header) else None for h in found], \
        {i: h for i, h in enumerate(found) if isinstance(h, str)}


def _probe(paths: list[str]) -> list[audio.Header | str]:
    out = []
    for p in paths:
        try:
            out.append(audio.probe(p))
        except FileNotFoundError:
            out.append("file not found")
        except (audio.SoundError, OSError, ValueError) as e:
            out.append(str(e) or type(e).__name__)
    return out


def cut(y: np.ndarray, max_frames: int) -> np.ndarray:
    """A clip's first `max_frames` samples (all of it for 0)."""
    return y[:max_frames] if max_frames else y


def frames_of(header: audio.Header | None, rate: int, max_frames: int = 0) -> int:
    """What the cache holds of a clip: its frames at `rate`, at most `max_frames` (0: no limit)."""
    if header is None:
        return 0
    n = audio.frames_at(header, rate)
    return min(n, max_frames) if max_frames else n


def bytes_of(found: Sequence[audio.Header | None], rate: int, max_frames: int = 0) -> int:
    """The cache's size: two bytes a sample of every clip at `rate`, each at most `max_frames`."""
    return 2 * sum(frames_of(h, rate, max_frames) for h in found)


def complete(paths: Sequence[Path], rate: int, cache_dir: Path, max_frames: int = 0) -> bool:
    data, off, meta = cache_files(paths, rate, cache_dir, max_frames)
    return meta.exists() and data.exists() and off.exists()


def build_cache(paths: Sequence[Path], rate: int, cache_dir: Path, workers: int, desc: str = "decode",
                log: Callable[[str], None] = print, max_frames: int = 0) -> WaveCache:
    """Decode `paths` into a cache under `cache_dir` (reused when the files, rate, cut and code are unchanged), each
    clip its first `max_frames` samples (0: whole)."""
    read = functools.partial(_decode, rate=rate, max_frames=max_frames)
    cache, built = fill([str(p) for p in paths], read, (audio.SoundError,), cache_files(paths, rate, cache_dir, max_frames),
                        rate, 1, workers, desc, log, "decoded", {"format": "mono int16", "rate": rate})
    if built:
        total = cache.offsets[-1]
        log(f"{desc}: decoded {cache.count - len(cache.bad)} of {cache.count} clips ({total / max(rate, 1) / 3600:.2f} h at "
            f"{rate} Hz) into {cache.path} ({total * 2 / 2**20:.0f} MB)")
    return cache


def _decode(path: str, rate: int, max_frames: int) -> np.ndarray:
    r, x = audio.read(path)
    return cut(audio.mono_int16(x, r, rate), max_frames)


def fill(items: Sequence, read: Callable[[object], np.ndarray], errors: tuple[type[Exception], ...],
         files_: tuple[Path, Path, Path], rate: int, channels: int, workers: int, desc: str, log: Callable[[str], None],
         what: str, meta: dict, chunk: int = CHUNK) -> tuple[WaveCache, bool]:
    """The one way a wave cache is made: each item's `read(item)` (int16, (frames,) or (frames, channels)) end to end
    into `files_` (data, offsets, meta; see the module's doc), `chunk` items a task in a fork pool of `workers`; an
    item whose read raises FileNotFoundError or one of `errors` is an empty clip, listed in `bad` with why. Reused
    when its meta file is there (files_' name keys what it holds); (the cache, whether it was built now)."""
    data_path, off_path, meta_path = files_
    data_path.parent.mkdir(parents=True, exist_ok=True)
    if meta_path.exists() and data_path.exists() and off_path.exists():
        offsets = np.fromfile(off_path, np.int64)
        log(f"{desc}: reusing the {what} cache {data_path} ({offsets[-1] * 2 / 2**20:.0f} MB)")
        bad = {int(k): v for k, v in json.loads(meta_path.read_text())["bad"].items()}
        return WaveCache(data_path, offsets, rate, bad, channels), False
    chunks = [list(range(i, min(i + chunk, len(items)))) for i in range(0, len(items), chunk)]
    job = _PieceJob(list(items), read, errors, str(data_path.parent), data_path.stem)
    parts: dict[int, tuple[np.ndarray, dict[int, str]]] = {}
    bar = progress.bar(total=len(items), desc=desc, unit="clip")
    if workers > 1 and len(chunks) > 1:
        # fork: the children run numpy, scipy and file readers only, never CUDA
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for start, lengths, bad in pool.imap_unordered(job, chunks):
                parts[start] = (lengths, bad)
                bar.update(len(lengths))
    else:
        for c in chunks:
            start, lengths, bad = job(c)
            parts[start] = (lengths, bad)
            bar.update(len(lengths))
    bar.close()
    lengths = np.concatenate([parts[c[0]][0] for c in chunks]) if chunks else np.zeros(0, np.int64)
    bad = {i: why for c in chunks for i, why in parts[c[0]][1].items()}
    offsets = np.concatenate([[0], np.cumsum(lengths * channels)]).astype(np.int64)
    with open(data_path, "wb") as out:  # the chunks' pieces end to end, in row order
        for c in chunks:
            piece = Path(data_path.parent, f".{data_path.stem}.{c[0]}.part")
            out.write(piece.read_bytes())
            piece.unlink()
    offsets.tofile(off_path)
    files.write_text(meta_path, json.dumps({**meta, "count": len(items), "bad": bad}, sort_keys=True))
    return WaveCache(data_path, offsets, rate, bad, channels), True


class _PieceJob:
    """A chunk of items read into a piece file of its own (picklable for the pool: `read` a module's function or a
    partial of one)."""

    def __init__(self, items: list, read: Callable, errors: tuple, cache_dir: str, stem: str):
        self.items, self.read, self.errors, self.cache_dir, self.stem = items, read, errors, cache_dir, stem

    def __call__(self, rows: list[int]) -> tuple[int, np.ndarray, dict[int, str]]:
        lengths, bad = np.zeros(len(rows), np.int64), {}
        with open(Path(self.cache_dir, f".{self.stem}.{rows[0]}.part"), "wb") as out:
            for j, i in enumerate(rows):
                try:
                    y = self.read(self.items[i])
                except FileNotFoundError:
                    bad[i] = "file not found"
                    continue
                except self.errors as e:
                    bad[i] = " ".join(str(e).split())[:200] or type(e).__name__
                    continue
                out.write(np.ascontiguousarray(y, np.int16).tobytes())
                lengths[j] = len(y)
        return rows[0], lengths, bad


# -- crops and windows ------------------------------------------------------------------------------------------
def crop(clip: np.ndarray, length: int, rng: np.random.Generator | None) -> np.ndarray:
    """`length` samples of `clip` (frames first: (frames,) or (frames, channels)): a random window (rng), or the
    centred one; a shorter clip placed in zeros (at random, or at the start)."""
    out = np.zeros((length, *clip.shape[1:]), np.int16)
    n = len(clip)
    if n >= length:
        start = int(rng.integers(0, n - length + 1)) if rng is not None else (n - length) // 2
        out[:] = clip[start:start + length]
    elif n:
        at = int(rng.integers(0, length - n + 1)) if rng is not None else 0
        out[at:at + n] = clip
    return out


def windows(n: int, length: int, hop: int) -> np.ndarray:
    """Starts of the windows prediction reads from a clip of `n` samples: every `hop`, the last flush with the
    end; one window (at 0) for a clip no longer than `length`."""
    if n <= length:
        return np.zeros(1, np.int64)
    starts = np.arange(0, n - length + 1, max(hop, 1), dtype=np.int64)
    return starts if starts[-1] == n - length else np.append(starts, n - length)


def window_rows(lengths: np.ndarray, rows: np.ndarray, length: int, hop: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, start) of every prediction window of `rows`, clip by clip in their order."""
    pairs = [(r, s) for r in rows for s in windows(int(lengths[r]), length, hop)]
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a = np.array(pairs, dtype=np.int64)
    return a[:, 0], a[:, 1]


class WaveRows(Dataset):
    """Windows of clips, read a batch at a time: a random crop of each row in training (a fresh one each epoch),
    else the window at `starts` (the centred one where none is given). Batches hold "wave" (B, length) int16, or
    (B, channels, length) from a cache of several channels."""

    def __init__(self, source: WaveCache | WaveFiles, rows: np.ndarray, length: int, targets: np.ndarray | None = None,
                 train: bool = False, starts: np.ndarray | None = None, seed: int = 0, weights: np.ndarray | None = None):
        self.source, self.rows, self.length, self.targets = source, np.asarray(rows), length, targets
        self.weights = weights  # each row's loss weight (a noisy set's rows weigh less), batched as "weight"
        self.train, self.starts, self.seed, self.draws = train, starts, seed, 0

    def __len__(self) -> int:
        return len(self.rows)

    def __getitems__(self, items: list[int]) -> Batch:
        items = np.asarray(items, dtype=np.int64)
        self.draws += 1  # each batch a fresh generator, each loader worker its own: the same crops for the same seed
        worker = torch.utils.data.get_worker_info()
        rng = np.random.default_rng([self.seed, worker.id if worker else 0, self.draws]) if self.train else None
        waves = np.stack([self._window(int(i), rng) for i in items]) if len(items) else np.zeros((0, self.length), np.int16)
        if waves.ndim == 3:  # (B, length, channels) -> (B, channels, length)
            waves = np.ascontiguousarray(waves.transpose(0, 2, 1))
        batch = {"wave": torch.from_numpy(waves), "row": torch.from_numpy(self.rows[items])}
        if self.targets is not None:
            batch["target"] = torch.from_numpy(np.asarray(self.targets[items]))
        if self.weights is not None:
            batch["weight"] = torch.from_numpy(np.asarray(self.weights[items], np.float32))
        return batch

    def __getitem__(self, item: int) -> Batch:
        return self.__getitems__([item])

    def _window(self, i: int, rng: np.random.Generator | None) -> np.ndarray:
        clip = self.source.clip(int(self.rows[i]))
        if self.starts is None:
            return crop(clip, self.length, rng)
        s = int(self.starts[i])
        return crop(clip[s:s + self.length], self.length, None)
