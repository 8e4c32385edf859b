"""Sound files read by suffix: .wav by scipy, .aif/.aiff by kit's own parser (the stdlib's aifc is gone from
Python 3.13), .flac/.ogg/.mp3 by soundfile where it is installed, .npy as an array of samples. Every reader
gives (rate, samples) with samples (frames, channels) in their stored integer or float type; `mono_int16`
makes the one form the wave cache holds, resampled once (scipy's polyphase filter) to the run's rate.
`probe` reads headers only (kit init's and the data step's checks)."""
from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from fractions import Fraction
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from kit.errors import KitError

SUFFIXES = (".wav", ".aif", ".aiff", ".aifc", ".flac", ".ogg", ".mp3", ".npy")
SOUNDFILE = (".flac", ".ogg", ".mp3")  # decoded by soundfile (libsndfile) only, which Kaggle's image may lack


class SoundError(ValueError):
    """A file that is missing, truncated or not the sound its suffix says."""


@dataclass(frozen=True)
class Header:
    rate: int
    channels: int
    frames: int


def refusal(suffix: str) -> str:
    """Why files ending in `suffix` cannot be read here ("" when they can)."""
    suffix = suffix.lower()
    if suffix not in SUFFIXES:
        return f"kit reads sound files ending in {', '.join(SUFFIXES)}, not '{suffix or '(none)'}'"
    if suffix in SOUNDFILE and find_spec("soundfile") is None:
        return f"{suffix} files need the soundfile package: add soundfile to [kernel] packages"
    return ""


def check_suffix(path: Path | str) -> None:
    why = refusal(Path(path).suffix)
    if why:
        raise KitError(f"{Path(path).name}: {why}")


def read(path: Path | str) -> tuple[int, np.ndarray]:
    """(rate, samples (frames, channels)) of a sound file, by its suffix; SoundError for a bad file."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".wav":
            from scipy.io import wavfile

            rate, x = wavfile.read(path, mmap=False)
            return int(rate), frames(x)
        if suffix in (".aif", ".aiff", ".aifc"):
            return read_aiff(path)
        if suffix == ".npy":
            x = np.load(path, allow_pickle=False)
            return 0, frames(x)
        if suffix in SOUNDFILE and find_spec("soundfile") is not None:
            import soundfile

            x, rate = soundfile.read(path, dtype="int16", always_2d=True)
            return int(rate), x
    except FileNotFoundError:
        raise SoundError("file not found") from None
    except (OSError, ValueError, EOFError, struct.error) as e:
        raise SoundError(" ".join(str(e).split()) or type(e).__name__) from None
    raise SoundError(refusal(suffix))


def frames(x: np.ndarray) -> np.ndarray:
    """(frames, channels): a mono array's one column (an empty clip too)."""
    return x[:, None] if x.ndim == 1 else x.reshape(x.shape[0], -1)


def probe(path: Path | str) -> Header:
    """The header of a sound file (rate, channels, frames), without its samples where the format allows."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".aif", ".aiff", ".aifc"):
        with open(path, "rb") as f:
            comm, _ = _aiff_chunks(f, want_data=False)
        return Header(comm.rate, comm.channels, comm.frames)
    if suffix == ".wav":  # the samples memory-mapped, not read (scipy maps all but 24-bit PCM)
        from scipy.io import wavfile

        try:
            rate, x = wavfile.read(path, mmap=True)
            return Header(int(rate), frames(x).shape[1], len(x))
        except FileNotFoundError:
            raise SoundError("file not found") from None
        except (OSError, ValueError, EOFError, struct.error):
            pass  # 24-bit samples, or a bad file: read whole below, which says why
    rate, x = read(path)
    return Header(rate, x.shape[1], len(x))


# -- AIFF / AIFC ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Comm:
    channels: int
    frames: int
    bits: int
    rate: int
    little: bool  # AIFC 'sowt': little-endian PCM


def _extended(b: bytes) -> float:
    """An 80-bit IEEE 754 extended float (AIFF's sample rate)."""
    exponent, mantissa = struct.unpack(">HQ", b)
    sign = -1 if exponent & 0x8000 else 1
    exponent &= 0x7FFF
    if exponent == 0 and mantissa == 0:
        return 0.0
    return sign * mantissa * 2.0 ** (exponent - 16383 - 63)


def _aiff_chunks(f, want_data: bool = True) -> tuple[_Comm, bytes | None]:
    head = f.read(12)
    if len(head) < 12 or head[:4] != b"FORM" or head[8:12] not in (b"AIFF", b"AIFC"):
        raise SoundError("not an AIFF file (no FORM/AIFF header)")
    aifc = head[8:12] == b"AIFC"
    comm, data = None, None
    while True:
        chunk = f.read(8)
        if len(chunk) < 8:
            break
        name, size = chunk[:4], struct.unpack(">I", chunk[4:])[0]
        if name == b"COMM":
            body = f.read(size)
            if len(body) < 18:
                raise SoundError("truncated COMM chunk")
            channels, frames, bits = struct.unpack(">hIh", body[:8])
            kind = body[18:22] if aifc and len(body) >= 22 else b"NONE"
            if kind not in (b"NONE", b"sowt", b"twos"):
                raise SoundError(f"compressed AIFC ('{kind.decode('latin-1')}'); kit reads uncompressed PCM only")
            comm = _Comm(channels, frames, bits, int(round(_extended(body[8:18]))), kind == b"sowt")
        elif name == b"SSND" and want_data:
            offset, _ = struct.unpack(">II", f.read(8))
            f.read(offset)
            data = f.read(size - 8 - offset)
        else:
            f.seek(size, os.SEEK_CUR)
        if size % 2:
            f.seek(1, os.SEEK_CUR)
        if comm is not None and (data is not None or not want_data):
            break
    if comm is None:
        raise SoundError("no COMM chunk")
    if comm.channels < 1 or comm.bits not in (8, 16, 24, 32):
        raise SoundError(f"{comm.channels} channels of {comm.bits} bits: not PCM kit reads")
    if want_data and data is None:
        raise SoundError("no SSND chunk")
    return comm, data


def read_aiff(path: Path | str) -> tuple[int, np.ndarray]:
    """(rate, samples (frames, channels)) of an uncompressed AIFF/AIFC file: int8, int16 or int32 (24-bit
    samples in the top bytes of int32, as scipy reads 24-bit wav)."""
    with open(path, "rb") as f:
        comm, data = _aiff_chunks(f)
    width = comm.bits // 8
    n = comm.frames * comm.channels
    if len(data) < n * width:
        raise SoundError(f"truncated: {len(data) // max(width * comm.channels, 1)} of {comm.frames} frames")
    raw = np.frombuffer(data[: n * width], np.uint8)
    order = "<" if comm.little else ">"
    if width == 3:  # no 24-bit numpy type: each sample into the top three bytes of an int32
        b = raw.reshape(n, 3)
        b = b[:, ::-1] if comm.little else b
        x = (b[:, 0].astype(np.int32) << 24) | (b[:, 1].astype(np.int32) << 16) | (b[:, 2].astype(np.int32) << 8)
    else:
        x = raw.view(f"{order}i{width}").astype(f"i{width}")
    return comm.rate, x.reshape(comm.frames, comm.channels)


# -- one form for the cache ------------------------------------------------------------------------------------
def mono_int16(x: np.ndarray, rate: int, to_rate: int) -> np.ndarray:
    """(frames,) int16: channels averaged, integer samples scaled to 16 bits (floats from [-1, 1]), resampled
    from `rate` to `to_rate` once (a polyphase filter: exact ratios, no FFT of the whole clip)."""
    if x.dtype.kind == "f":
        y = np.nan_to_num(x.astype(np.float32)).mean(1) * 32767.0
    elif x.dtype == np.uint8:  # 8-bit wav is unsigned
        y = (x.astype(np.float32) - 128.0).mean(1) * 256.0
    else:
        y = x.astype(np.float32).mean(1) * (2.0 ** (16 - 8 * x.dtype.itemsize))
    if rate and to_rate and rate != to_rate:
        from scipy.signal import resample_poly

        ratio = Fraction(to_rate, rate).limit_denominator(1000)
        y = resample_poly(y, ratio.numerator, ratio.denominator)
    return np.clip(np.rint(y), -32768, 32767).astype(np.int16)


def frames_at(header: Header, rate: int) -> int:
    """Frames a clip has once resampled to `rate` (what the cache holds of it)."""
    if not header.rate or header.rate == rate:
        return header.frames
    ratio = Fraction(rate, header.rate).limit_denominator(1000)
    return math.ceil(header.frames * ratio.numerator / ratio.denominator)
