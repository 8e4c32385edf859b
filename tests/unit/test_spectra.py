"""The device's spectrograms against references written out in numpy (torchaudio cannot be installed beside this
torch): the mel filterbank triangle by triangle, the log-mel frame by frame; and the training augments."""
import numpy as np
import pytest
import torch

from kit.data.spectra import LEVEL_DB, AudioTransform, Augment, Frontend, LogMel, gain_and_shift, masks, mel_filterbank


def reference_filterbank(rate, n_fft, n_mels, fmin, fmax):
    """HTK mels; band m rises from edge m to its centre m+1 and falls to edge m+2, 0 elsewhere, peak 1."""
    mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)  # noqa: E731
    edges = [hz(mel(fmin) + k * (mel(fmax) - mel(fmin)) / (n_mels + 1)) for k in range(n_mels + 2)]
    out = np.zeros((n_fft // 2 + 1, n_mels))
    for m in range(n_mels):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        for b in range(n_fft // 2 + 1):
            f = b * rate / n_fft
            if lo <= f <= mid:
                out[b, m] = (f - lo) / (mid - lo)
            elif mid < f <= hi:
                out[b, m] = (hi - f) / (hi - mid)
    return out


@pytest.mark.parametrize("rate,n_fft,n_mels,fmin,fmax", [(16000, 512, 40, 0.0, 8000.0), (2000, 256, 32, 20.0, 1000.0),
                                                         (44100, 1024, 128, 50.0, 14000.0)])
def test_the_filterbank_is_htk_triangles(rate, n_fft, n_mels, fmin, fmax):
    np.testing.assert_allclose(mel_filterbank(rate, n_fft, n_mels, fmin, fmax),
                               reference_filterbank(rate, n_fft, n_mels, fmin, fmax), atol=1e-6)


def reference_logmel(x, f: Frontend):
    """Frames of the reflect-padded clip under a periodic Hann window, their power spectra through the filterbank,
    decibels clipped top_db below the clip's peak, then each clip normalised."""
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(f.n_fft) / f.n_fft)
    fb = reference_filterbank(f.rate, f.n_fft, f.n_mels, f.fmin, f.fmax)
    out = []
    for clip in x.astype(np.float64):
        padded = np.pad(clip, f.n_fft // 2, mode="reflect")
        frames = [padded[s:s + f.n_fft] * window for s in range(0, len(padded) - f.n_fft + 1, f.hop)]
        power = np.abs(np.fft.rfft(np.array(frames), axis=1)) ** 2  # (frames, bins)
        db = 10 * np.log10(np.maximum(power @ fb, 1e-10)).T  # (n_mels, frames)
        db = np.maximum(db, db.max() - f.top_db)
        out.append((db - db.mean()) / (db.std(ddof=1) + 1e-5))
    return np.array(out)


def test_the_log_mel_matches_the_numpy_reference():
    f = Frontend(rate=8000, length=4000, n_fft=256, hop=64, n_mels=48, fmin=0.0, fmax=4000.0, top_db=60.0)
    rng = np.random.default_rng(0)
    t = np.arange(f.length) / f.rate
    x = np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.01 * rng.standard_normal(f.length)]).astype(np.float32)
    got = LogMel(f)(torch.from_numpy(x)).numpy()
    assert got.shape == (2, 48, f.frames) == (2, 48, 63)
    np.testing.assert_allclose(got, reference_logmel(x, f), atol=2e-3)


def test_the_log_mel_stays_float32_under_half_autocast():
    f = Frontend(8000, 2048, 256, 64, 32, 0.0, 4000.0, 80.0)
    x = torch.randn(2, f.length)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = LogMel(f)(x)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), LogMel(f)(x).numpy(), atol=1e-5)


def test_transform_makes_one_channel_images_in_the_precision_in_force():
    f = Frontend(8000, 2048, 256, 64, 32, 0.0, 4000.0, 80.0)

    class Half:
        dtype = torch.bfloat16

    wave = (torch.randn(4, f.length) * 3000).to(torch.int16)
    plain = AudioTransform(f, torch.device("cpu"), precision=Half(), channels_last=False)
    out = plain(wave)
    assert out.shape == (4, 1, 32, f.frames) and out.dtype == torch.bfloat16
    assert torch.equal(out, plain(wave))  # no augmentation out of training
    trained = AudioTransform(f, torch.device("cpu"), train=True, augment=Augment(freq_masks=2, freq_width=0.2), seed=1)
    masked = trained(wave)[:, 0]
    zero_bands = (masked == 0).all(dim=2).sum(dim=1)  # (B,): mel bands masked whole
    assert (zero_bands <= 2 * int(0.2 * 32)).all() and zero_bands.sum() > 0


def test_masks_and_shift_and_gain():
    g = torch.Generator().manual_seed(0)
    spec = torch.ones(8, 20, 50)
    out = masks(spec, 1, 0.1, 2, g)  # one time mask of at most 5 frames
    masked = (out == 0).all(dim=1)  # (B, frames)
    assert (masked.sum(1) <= 5).all() and masked.sum() > 0
    for row in masked:  # one contiguous span
        where = torch.nonzero(row).flatten()
        assert len(where) == 0 or where[-1] - where[0] + 1 == len(where)
    x = torch.arange(10.0).repeat(4, 1)
    rolled = gain_and_shift(x, 0.0, 0.3, g)
    for row in rolled:  # a circular shift of 0..10 by at most 3
        k = int(torch.nonzero(row == 0)[0])
        assert torch.equal(row, torch.roll(torch.arange(10.0), k)) and min(k, 10 - k) <= 3
    louder = gain_and_shift(torch.ones(1000, 4), 6.0, 0.0, g)
    ratio = louder[:, 0]
    assert (ratio >= 10 ** (-6 / 20) - 1e-6).all() and (ratio <= 10 ** (6 / 20) + 1e-6).all() and ratio.std() > 0.1
    assert torch.allclose(louder, ratio[:, None].expand(-1, 4))


def test_level_keeps_the_loudness_that_the_normalised_log_mel_throws_away():
    rng = np.random.default_rng(0)
    x = torch.from_numpy(0.01 * rng.standard_normal((1, 2048)).astype(np.float32))
    louder = x * 10.0  # 20 dB
    f = Frontend(8000, 2048, 256, 64, 32, 0.0, 4000.0, 200.0)
    np.testing.assert_allclose(LogMel(f)(louder).numpy(), LogMel(f)(x).numpy(), atol=1e-4)  # alike: level gone
    kept = Frontend(8000, 2048, 256, 64, 32, 0.0, 4000.0, 200.0, level=True)
    gap = (LogMel(kept)(louder) - LogMel(kept)(x)).numpy()
    np.testing.assert_allclose(gap, 20.0 / LEVEL_DB, atol=1e-3)  # 20 dB apart on the fixed scale
