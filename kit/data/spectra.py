"""Spectrograms on the device: int16 windows in, log-mel images out, augmented there in training.

The mel filterbank is built once in numpy (HTK's mel scale, triangles without area normalisation: what
torchaudio's MelSpectrogram makes by default), the STFT is torch's, in float32 with autocast off (cuFFT's half
precision wants power-of-two sizes, and the power's range overflows float16). Each spectrogram is then scaled
to decibels, clipped `top_db` below its peak and normalised to zero mean and unit variance: clips recorded at
any level look alike to the model, and no dataset statistic has to travel with it. Where the loudness is the
signal (a volcano's tremor grows as the eruption nears), `level` keeps it: decibels on a fixed scale instead.

In training, before the STFT: a random gain and a circular time shift per clip; after it: SpecAugment's
frequency and time masks (set to the spectrogram's mean, 0 after normalisation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_filterbank(rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """(n_fft // 2 + 1, n_mels) float32: triangles over the STFT's bins, spaced evenly in mels from fmin to fmax."""
    freqs = np.linspace(0.0, rate / 2, n_fft // 2 + 1)
    points = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))  # (n_mels + 2,) edges and centres
    widths = np.diff(points)
    slopes = points[None, :] - freqs[:, None]  # (freqs, n_mels + 2)
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    return np.maximum(0.0, np.minimum(down, up)).astype(np.float32)


# level = true: decibels become (dB + 50) / 50 on a fixed scale. The STFT's power is not divided by the window's, so
# full scale is not 0 dB: a full-scale sine comes to about +35 dB (1.71) at the audio template's n_fft, one 100 dB
# fainter to about -0.29; the same signal maps to the same values in every clip, which is what `level` keeps
LEVEL_DB = 50.0


@dataclass(frozen=True)
class Frontend:
    """How a window of samples becomes a log-mel image: settled once from the parameters and the data's rate, and
    kept in the recipe, so prediction reads the test clips as training read its own."""

    rate: int
    length: int  # samples per window
    n_fft: int
    hop: int
    n_mels: int
    fmin: float
    fmax: float
    top_db: float
    level: bool = False  # keep each spectrogram's loudness (decibels on a fixed scale), not normalised away

    @property
    def frames(self) -> int:
        return self.length // self.hop + 1  # torch.stft's with center=True

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class LogMel(torch.nn.Module):
    """(B, T) float32 samples -> (B, n_mels, frames) normalised log-mel, in float32 whatever autocast says; (B, C, T)
    (several channels: an EEG montage) -> (B, C, n_mels, frames), each channel its own."""

    def __init__(self, f: Frontend):
        super().__init__()
        self.f = f
        self.register_buffer("fbank", torch.from_numpy(mel_filterbank(f.rate, f.n_fft, f.n_mels, f.fmin, f.fmax)),
                             persistent=False)
        self.register_buffer("window", torch.hann_window(f.n_fft), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            b, c, t = x.shape
            out = self.forward(x.reshape(b * c, t))
            return out.reshape(b, c, *out.shape[1:])
        with torch.autocast(x.device.type, enabled=False):
            spec = torch.stft(x.float(), self.f.n_fft, self.f.hop, window=self.window, center=True, pad_mode="reflect",
                              return_complex=True)  # (B, F, frames)
            power = spec.real ** 2 + spec.imag ** 2
            mel = torch.matmul(power.transpose(1, 2), self.fbank).transpose(1, 2)  # (B, n_mels, frames)
            db = 10.0 * torch.log10(mel.clamp_min(1e-10))
            db = torch.maximum(db, db.amax(dim=(1, 2), keepdim=True) - self.f.top_db)
            if self.f.level:  # decibels on LEVEL_DB's fixed scale: the loudness kept
                return (db + LEVEL_DB) / LEVEL_DB
            mean = db.mean(dim=(1, 2), keepdim=True)
            std = db.std(dim=(1, 2), keepdim=True)
            return (db - mean) / (std + 1e-5)


def gain_and_shift(x: torch.Tensor, gain_db: float, shift: float, generator: torch.Generator) -> torch.Tensor:
    """(B, T) or (B, C, T): each clip scaled by a gain drawn in ±gain_db, and rolled in time by up to `shift` of its
    length (a clip's channels alike)."""
    b, t = x.shape[0], x.shape[-1]
    ones = (1,) * (x.dim() - 2)
    if gain_db:
        db = (torch.rand(b, 1, generator=generator, device=x.device) * 2 - 1) * gain_db
        x = x * 10.0 ** (db.view(b, *ones, 1) / 20.0)
    if shift:
        most = int(shift * t)
        offsets = torch.randint(-most, most + 1, (b, 1), generator=generator, device=x.device)
        index = (torch.arange(t, device=x.device)[None, :] - offsets) % t
        x = torch.gather(x, -1, index.view(b, *ones, t).expand_as(x))
    return x


def masks(spec: torch.Tensor, count: int, width: float, dim: int, generator: torch.Generator) -> torch.Tensor:
    """SpecAugment: `count` bands per clip along `dim` (1: mel bands, 2: frames), each up to `width` of it, set to 0
    (spec (B, n_mels, frames), or (B, C, n_mels, frames): a clip's channels masked alike)."""
    if not count or not width:
        return spec
    ones = (1,) * (spec.dim() - 3)
    dim = dim + len(ones)
    b, size = spec.shape[0], spec.shape[dim]
    most = max(1, int(width * size))
    keep = torch.ones(b, size, dtype=torch.bool, device=spec.device)
    positions = torch.arange(size, device=spec.device)[None, :]
    for _ in range(count):
        w = torch.randint(0, most + 1, (b, 1), generator=generator, device=spec.device)
        start = (torch.rand(b, 1, generator=generator, device=spec.device) * (size - w + 1)).long()
        keep &= ~((positions >= start) & (positions < start + w))
    shape = (b, *ones, size, 1) if dim == 1 + len(ones) else (b, *ones, 1, size)
    return spec * keep.view(shape)


@dataclass(frozen=True)
class Augment:
    gain_db: float = 0.0
    shift: float = 0.0
    freq_masks: int = 0
    freq_width: float = 0.0
    time_masks: int = 0
    time_width: float = 0.0


class AudioTransform:
    """int16 (B, T) windows -> (B, 1, n_mels, frames) log-mel images in the precision in force (channels_last
    unless asked not to), augmented when `train`; (B, C, T) windows of C channels -> (B, C, n_mels, frames)."""

    def __init__(self, frontend: Frontend, device: torch.device, train: bool = False, augment: Augment = Augment(),
                 seed: int = 0, precision=None, channels_last: bool = True):
        self.logmel = LogMel(frontend).to(device)
        self.train, self.augment, self.precision = train, augment, precision
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format

    def __call__(self, wave: torch.Tensor) -> torch.Tensor:
        a = self.augment
        x = wave.float() / 32768.0  # (B, T) or (B, C, T)
        if self.train:
            x = gain_and_shift(x, a.gain_db, a.shift, self.generator)
        spec = self.logmel(x)  # (B, n_mels, frames) float32
        if self.train:
            spec = masks(spec, a.freq_masks, a.freq_width, 1, self.generator)
            spec = masks(spec, a.time_masks, a.time_width, 2, self.generator)
        dtype = self.precision.dtype if self.precision is not None else torch.float32
        spec = spec[:, None] if spec.dim() == 3 else spec  # (B, 1 or C, n_mels, frames)
        return spec.to(dtype).contiguous(memory_format=self.memory_format)
