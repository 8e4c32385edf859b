"""make bench's audio row: training clips per second delivered to the device as log-mel spectrograms, on the same
synthetic wav clips (tones in noise, `seconds` long at `rate` Hz, 16-bit mono), side by side in one run:

  (a) CPU mel   what a competitor's Dataset does each epoch: read the wav (scipy), cut a random window, a numpy/scipy
                STFT (Hann window, the same n_fft and hop) and mel filterbank, log, normalised, on the DataLoader's
                workers; the batch then copied to the device. librosa is not installed here: this is the honest
                stand-in for librosa.feature.melspectrogram on the CPU (the same arithmetic, numpy's FFT).
  (b) kit first epoch: every clip decoded once into the int16 wave cache (kit.data.waves, all cores), then the epoch
  (c) kit cached epochs: random windows cut from the memory-mapped cache (WaveRows), the int16 batch copied to the
                device, the log-mel made there (kit.data.spectra.AudioTransform: torch.stft, the same filterbank)
Each rate is clips / s over whole epochs, the device synchronised before the clock stops.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch

RATE, SECONDS, WINDOW_S, N_FFT, HOP, N_MELS = 32000, 5.0, 2.0, 1024, 320, 128


def make_clips(folder: Path, count: int, seconds: float = SECONDS, rate: int = RATE) -> list[Path]:
    from kit.smoke.audio import noise, tone, write

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        path = folder / f"clip{k:05d}.wav"
        if not path.exists():
            write(path, noise(rng, seconds, rate, 0.05) + tone(rng, seconds, rate, 300.0 + 40.0 * (k % 50), 0.3), rate)
        paths.append(path)
    return paths


class CpuMel(torch.utils.data.Dataset):
    """A clip read and its log-mel made on the CPU, every epoch: the plain way."""

    def __init__(self, paths: list[Path], length: int):
        from kit.data.spectra import mel_filterbank

        self.paths, self.length = paths, length
        self.fbank = mel_filterbank(RATE, N_FFT, N_MELS, 0.0, RATE / 2).T.astype(np.float32)  # (n_mels, bins)
        self.window = np.hanning(N_FFT + 1)[:-1].astype(np.float32)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        from scipy.io import wavfile

        _, x = wavfile.read(self.paths[i])
        x = x.astype(np.float32) / 32768.0
        start = np.random.randint(0, max(1, len(x) - self.length + 1))
        x = np.pad(x[start:start + self.length], (N_FFT // 2, N_FFT // 2), mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP] * self.window
        power = np.abs(np.fft.rfft(frames, axis=1)) ** 2  # (frames, bins)
        db = 10.0 * np.log10(np.maximum(self.fbank @ power.T, 1e-10))
        db = np.maximum(db, db.max() - 80.0)
        return torch.from_numpy(((db - db.mean()) / (db.std() + 1e-5)).astype(np.float32))[None]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_audio(device: torch.device, count: int = 512, workers: int = 0, batch: int = 32, epochs: int = 2,
                root: Path | None = None) -> dict:
    from kit.data import waves
    from kit.data.loaders import host_loader
    from kit.data.spectra import AudioTransform, Frontend

    root = root or Path(".bench")
    paths = make_clips(root / "clips", count)
    length = int(WINDOW_S * RATE)
    pin = device.type == "cuda"

    def cpu_epoch() -> int:
        loader = torch.utils.data.DataLoader(CpuMel(paths, length), batch_size=batch, shuffle=True, num_workers=workers,
                                             pin_memory=pin)
        n = 0
        for x in loader:
            n += len(x.to(device, non_blocking=True))
        _sync(device)
        return n

    frontend = Frontend(RATE, length, N_FFT, HOP, N_MELS, 0.0, RATE / 2, 80.0)
    transform = AudioTransform(frontend, device, channels_last=device.type == "cuda")

    def kit_epoch(cache) -> int:
        rows = waves.WaveRows(cache, np.arange(cache.count), length, train=True, seed=0)
        n = 0
        for b in host_loader(rows, batch, shuffle=True, workers=workers, pin=pin):
            n += len(transform(b["wave"].to(device, non_blocking=True)))
        _sync(device)
        return n

    def rate(run) -> float:
        started = time.perf_counter()
        n = run()
        return n / (time.perf_counter() - started)

    cache_dir = root / "wave-cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    cpu = float(np.median([rate(cpu_epoch) for _ in range(epochs)]))
    started = time.perf_counter()
    cache = waves.build_cache(paths, RATE, cache_dir, os.cpu_count() or 1, log=lambda m: None)
    first = kit_epoch(cache) / (time.perf_counter() - started)
    cached = float(np.median([rate(lambda: kit_epoch(cache)) for _ in range(epochs)]))
    shutil.rmtree(cache_dir, ignore_errors=True)
    return {"device": device.type, "clips": count, "seconds": SECONDS, "rate": RATE, "window_s": WINDOW_S,
            "batch": batch, "workers": workers, "n_fft": N_FFT, "hop": HOP, "n_mels": N_MELS,
            "cpu_mel_cps": cpu, "kit_first_epoch_cps": first, "kit_cached_cps": cached}


def print_audio(au: dict) -> None:
    print(f"\naudio: {au['clips']} wav clips of {au['seconds']:g} s at {au['rate']} Hz, {au['window_s']:g} s windows, "
          f"{au['n_mels']} mels, batch {au['batch']}, {au['workers']} workers, on {au['device']}")
    print(f"{'clips/s delivered as log-mels':<38}{'':>10}{'vs CPU mel':>12}")
    for label, key in (("(a) wav + numpy STFT/mel on the CPU", "cpu_mel_cps"),
                       ("(b) kit first epoch (decode + cache)", "kit_first_epoch_cps"),
                       (f"(c) kit cache + mel on {au['device']}", "kit_cached_cps")):
        print(f"{label:<38}{au[key]:>10.0f}{au[key] / au['cpu_mel_cps']:>11.1f}x")
