"""Smoke data for the audio template: synthetic sounds whose class can be heard (a tone's pitch, an upsweep in
noise), written as .wav (scipy) or .aif (kit's own writer: big-endian PCM, any of 8, 16, 24 or 32 bits), in the
layout a config names: a label table and a clip folder (files), class folders (folders), or labels in the file
names (names)."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.spec import Spec

PITCHES = (220.0, 330.0, 440.0, 550.0, 660.0, 880.0, 990.0, 1100.0)  # Hz of each class's tone (below 2 kHz / 2)


def noise(rng: np.random.Generator, seconds: float, rate: int, level: float = 0.1) -> np.ndarray:
    return (rng.standard_normal(int(seconds * rate)) * level).astype(np.float32)


def tone(rng: np.random.Generator, seconds: float, rate: int, hz: float, level: float = 0.3) -> np.ndarray:
    """A tone of `hz` with a random phase and a soft attack, in a little noise: float32 in [-1, 1]."""
    t = np.arange(int(seconds * rate)) / rate
    envelope = np.minimum(1.0, t / 0.05) * np.minimum(1.0, (t[-1] - t) / 0.05 + 1e-3)
    wave = level * envelope * np.sin(2 * np.pi * hz * t + rng.uniform(0, 2 * np.pi))
    return (wave + noise(rng, seconds, rate, 0.05)).astype(np.float32)


def upsweep(rng: np.random.Generator, seconds: float, rate: int, low: float, high: float, level: float = 0.3) -> np.ndarray:
    """A chirp rising from `low` to `high` Hz over a random stretch of the clip (a right whale's up-call), in noise."""
    n = int(seconds * rate)
    out = noise(rng, seconds, rate, 0.08)
    length = int(rng.uniform(0.4, 0.7) * n)
    start = int(rng.integers(0, n - length + 1))
    t = np.arange(length) / rate
    phase = 2 * np.pi * (low * t + (high - low) * t**2 / (2 * t[-1]))
    out[start:start + length] += level * np.hanning(length) * np.sin(phase)
    return out


def to_int16(wave: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(wave * 32767), -32768, 32767).astype(np.int16)


def write_wav(path: Path, wave: np.ndarray, rate: int) -> Path:
    """A float wave as 16-bit PCM .wav (scipy)."""
    from scipy.io import wavfile

    path.parent.mkdir(parents=True, exist_ok=True)
    wavfile.write(path, rate, to_int16(wave))
    return path


def _extended(rate: float) -> bytes:
    """`rate` as an 80-bit IEEE 754 extended float, AIFF's COMM sample rate."""
    if rate <= 0:
        return bytes(10)
    exponent = math.floor(math.log2(rate))
    mantissa = int(rate * 2 ** (63 - exponent))
    return struct.pack(">HQ", exponent + 16383, mantissa)


def write_aiff(path: Path, samples: np.ndarray, rate: int, bits: int = 16) -> Path:
    """Integer samples (frames,) or (frames, channels) as an uncompressed AIFF file of `bits` bits (given as int8,
    int16 or int32, 24-bit ones in an int32's top three bytes)."""
    if bits not in (8, 16, 24, 32):
        raise KitError(f"AIFF holds 8, 16, 24 or 32-bit samples, not {bits}")
    x = np.asarray(samples).reshape(len(samples), -1)
    frames, channels = x.shape
    if bits == 24:
        v = x.astype(">i4").view(np.uint8).reshape(-1, 4)[:, :3]  # big-endian: the top three bytes first
        data = np.ascontiguousarray(v).tobytes()
    else:
        data = x.astype(f">i{bits // 8}").tobytes()
    comm = struct.pack(">hIh", channels, frames, bits) + _extended(rate)
    ssnd = struct.pack(">II", 0, 0) + data
    body = b"AIFF" + b"COMM" + struct.pack(">I", len(comm)) + comm + b"SSND" + struct.pack(">I", len(ssnd)) + ssnd
    if len(ssnd) % 2:
        body += b"\0"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"FORM" + struct.pack(">I", len(body)) + body)
    return path


def write(path: Path, wave: np.ndarray, rate: int) -> Path:
    """A float wave as 16-bit PCM, by `path`'s suffix: .wav or .aif/.aiff."""
    if path.suffix.lower() in (".aif", ".aiff"):
        return write_aiff(path, to_int16(wave), rate)
    return write_wav(path, wave, rate)


def make_dataset(spec: Spec, folder: Path, seed: int = 0, classes: int = 3, per_class: int = 12, test: int = 12,
                 seconds: float = 1.0, rate: int = 8000) -> None:
    """Tones of `classes` pitches, one second at 8 kHz, in the layout `spec` names: a label table (files), class
    folders (folders) or `<class>_<k><ext>` names (names, its label_pattern's first group the class); the test
    clips named by the sample submission's ids, which hold P(the last class) for auc and log_loss, else a class."""
    rng = np.random.default_rng(seed)
    ext = spec.image_ext or ".wav"
    names = [f"class_{k}" for k in range(classes)] if classes > 2 else ["0", "1"]
    labels = rng.permutation(np.repeat(np.arange(classes), per_class))
    train = Path(folder, spec.train_images or "train")
    rows = []
    for i, c in enumerate(labels):
        wave = tone(rng, seconds, rate, PITCHES[c])
        if spec.layout == "folders":
            name = f"{names[c]}/{i:04d}{ext}"
        elif spec.layout == "names":
            name = f"clip{i:04d}_{names[c]}{ext}"
        else:
            name = f"clip{i:04d}{ext}"
        write(train / name, wave, rate)
        rows.append((name[: -len(ext)] if spec.image_ext else name, names[c]))
    if spec.layout == "files":
        pd.DataFrame(rows, columns=[spec.id_column, spec.target_column]).to_csv(Path(folder, spec.train), index=False)
    ids = [f"test{k:04d}{'' if spec.image_ext else ext}" for k in range(test)]
    for k, i in enumerate(ids):
        write(Path(folder, spec.test_images or "test") / f"{i}{spec.image_ext}", tone(rng, seconds, rate,
                                                                                         PITCHES[k % classes]), rate)
    value = 0.5 if spec.metric in ("auc", "log_loss") else names[0]
    pd.DataFrame({spec.id_column: ids, spec.target_column: value}).to_csv(Path(folder, spec.sample_submission), index=False)
