"""Arrays as images: .npy files of any channel count, float or uint8, channels first or last, through the same
decode-once cache (float16 or uint8) and the same augmentation, normalised by their own statistics."""
import numpy as np
import pytest
import torch

from kit.data import arrays, images
from kit.data.arrays import Form
from kit.data.augment import ImageTransform


def save(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return path


@pytest.mark.parametrize("shape, channels", [((6, 27, 25), 6), ((25, 27, 2), 2), ((27, 25), 1), ((3, 30, 30), 3)])
def test_channels_first_or_last_are_found(shape, channels):
    assert arrays.channels_last(np.zeros(shape), "x.npy").shape == (*[s for s in shape if s != channels][:2], channels)


def test_npy_files_fill_a_float16_cache_of_their_channels(tmp_path):
    """seti: (6, 273, 256) float16 per file; here (6, 27, 25): shorter side to the cache side, centre crop."""
    rng = np.random.default_rng(0)
    paths = [save(tmp_path / f"{k}.npy", rng.normal(k, 1, (6, 27, 25)).astype(np.float16)) for k in range(3)]
    paths.append(save(tmp_path / "odd.npy", np.zeros((5, 27, 25), np.float16)))  # a channel short
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    paths += [tmp_path / "junk.npy", tmp_path / "gone.npy"]
    form = arrays.probe(paths)
    assert form == Form(6, "float16") and not form.photo
    cache = images.build_cache(paths, 20, tmp_path / "cache", workers=1, log=lambda line: None, form=form)
    got = cache.read(np.arange(3))
    assert got.shape == (3, 20, 20, 6) and got.dtype == np.float16
    assert np.allclose(got.astype(np.float32).mean((1, 2, 3)), [0, 1, 2], atol=0.3)  # each file's own values
    assert cache.bad == {3: "5 channels, not the 6 of the first file", 4: cache.bad[4], 5: images.MISSING}
    streamed = images.streaming(paths, 20, workers=1, form=form)
    assert sorted(streamed.bad) == [4, 5] and np.array_equal(streamed.read(np.arange(3)), got)
    assert images.bytes_to_build(paths, 20, tmp_path / "cache", form) == 0  # complete: reused, not rebuilt


def test_uint8_arrays_stay_bytes(tmp_path):
    path = save(tmp_path / "a.npy", np.full((16, 16, 4), 200, np.uint8))
    form = arrays.probe([path])
    assert form == Form(4, "uint8")
    assert (images.decode(path, 8, form) == 200).all() and images.decode(path, 8, form).shape == (8, 8, 4)


def test_per_row_arrays_resize_into_a_float16_cache(tmp_path):
    rng = np.random.default_rng(1)
    bands = rng.normal(-20, 5, (4, 12, 12, 2)).astype(np.float32)
    cache = images.pixel_cache(bands, 12, tmp_path, log=lambda line: None)
    assert cache.form == Form(2, "float16") and cache.read(np.arange(4)).shape == (4, 12, 12, 2)
    assert np.allclose(cache.read(np.array([2]))[0], bands[2], atol=0.02)
    assert images.pixel_bytes_to_build(bands, 12, tmp_path) == 0


def test_channel_statistics_are_the_training_images_own():
    rng = np.random.default_rng(2)
    x = np.stack([rng.normal(-20, 5, (50, 8, 8)), rng.normal(3, 0.5, (50, 8, 8))], -1).astype(np.float16)
    mean, std = arrays.channel_stats(lambda rows: x[rows], np.arange(50))
    assert np.allclose(mean, x.astype(np.float64).mean((0, 1, 2)), rtol=1e-6)
    assert np.allclose(std, x.astype(np.float64).std((0, 1, 2)), rtol=1e-6)


def test_the_device_transform_takes_any_channel_count_in_its_own_units():
    rng = np.random.default_rng(3)
    x = torch.from_numpy(np.stack([rng.normal(-20, 5, (8, 24, 24)), rng.normal(3, 0.5, (8, 24, 24))], -1).astype(np.float16))
    for train in (True, False):  # training crops resample (and smooth) the noise: its std shrinks, its mean stays
        out = ImageTransform(16, (-20.0, 3.0), (5.0, 0.5), train=train, unit=1.0)(x)
        assert out.shape == (8, 2, 16, 16) and np.allclose(out.mean((0, 2, 3)).numpy(), 0, atol=0.15)
    assert np.allclose(out.std((0, 2, 3)).numpy(), 1, atol=0.1)  # the centre crop: normalised per channel
    rgb = ImageTransform(16, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25), train=False)(torch.full((2, 16, 16, 3), 255, dtype=torch.uint8))
    assert torch.allclose(rgb, torch.full_like(rgb, 2.0))  # bytes as before: (1 - 0.5) / 0.25
