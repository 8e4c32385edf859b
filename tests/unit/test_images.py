"""Decoding awkward files, the cache's keying and reuse, and the bad-image policy."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parents[1] / "functional"))
import dogs  # noqa: E402

from kit.data import images  # noqa: E402
from kit.errors import KitError  # noqa: E402
from kit.runtime import hardware, paths  # noqa: E402


@pytest.mark.parametrize("kind", range(6))
def test_decode_awkward_files_to_rgb_squares(tmp_path, kind):
    path = tmp_path / "x.jpg"
    dogs.save_awkward(dogs.photo(np.random.default_rng(0), 2, 300, 200), path, kind)
    out = images.decode(path, 73)
    assert out.shape == (73, 73, 3) and out.dtype == np.uint8 and out.std() > 1


def test_exif_rotation_is_applied(tmp_path):
    ramp = np.tile(np.linspace(0, 255, 300, dtype=np.uint8)[None, :, None], (200, 1, 3))  # dark left, bright right
    exif = Image.Exif()
    exif[0x0112] = 6  # shown rotated 90 degrees clockwise: dark top, bright bottom
    Image.fromarray(ramp).save(tmp_path / "r.jpg", exif=exif.tobytes())
    rows = images.decode(tmp_path / "r.jpg", 32).astype(float).mean(axis=(1, 2))
    cols = images.decode(tmp_path / "r.jpg", 32).astype(float).mean(axis=(0, 2))
    assert rows[-1] - rows[0] > 50 and abs(cols[-1] - cols[0]) < 10


def test_small_images_are_upscaled_and_corrupt_ones_named(tmp_path):
    Image.new("RGB", (10, 7), (9, 9, 9)).save(tmp_path / "small.jpg")
    assert images.decode(tmp_path / "small.jpg", 64).shape == (64, 64, 3)
    (tmp_path / "bad.jpg").write_bytes(b"nope")
    with pytest.raises(images.DecodeError, match="cannot identify image file"):
        images.decode(tmp_path / "bad.jpg", 64)
    with pytest.raises(images.DecodeError, match="file not found"):
        images.decode(tmp_path / "missing.jpg", 64)


def make_files(folder: Path, n: int) -> list[Path]:
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    paths = []
    for i in range(n):
        p = folder / f"{i}.jpg"
        dogs.photo(rng, i, 120 + i, 90).save(p)
        paths.append(p)
    return paths


def test_cache_matches_decode_and_is_reused(tmp_path):
    paths = make_files(tmp_path / "img", 70)
    logs = []
    cache = images.build_cache(paths, 40, tmp_path / "cache", workers=2, log=logs.append)
    array = cache.array()
    assert array.shape == (70, 40, 40, 3)
    assert np.array_equal(array[65], images.decode(paths[65], 40))
    again = images.build_cache(paths, 40, tmp_path / "cache", workers=2, log=logs.append)
    assert again.path == cache.path and "reusing" in logs[-1]
    assert images.build_cache(paths, 48, tmp_path / "cache", workers=1, log=logs.append).path != cache.path


def test_cache_key_changes_when_a_file_changes(tmp_path):
    paths = make_files(tmp_path / "img", 3)
    key = images.cache_key(paths, 40)
    assert images.cache_key(paths, 40) == key
    os.utime(paths[1], ns=(1, 1))
    assert images.cache_key(paths, 40) != key
    assert images.cache_key(paths[:2], 40) != key


def test_bad_images_warn_below_the_share_and_stop_above(tmp_path):
    paths = make_files(tmp_path / "img", 10)
    dogs.corrupt(paths[3])
    cache = images.build_cache(paths, 32, tmp_path / "cache", workers=1, log=lambda m: None)
    assert list(cache.bad) == [3] and not cache.array()[3].any()
    logs = []
    images.check_bad(cache, [p.name for p in paths], "train", "are left out", 0.2, logs.append)
    assert len(logs) == 1 and logs[0].startswith("WARNING: 1 of 10 train images could not be decoded and are left out: 3.jpg: ")
    with pytest.raises(KitError, match=r"1 of 10 train images could not be decoded \(10.0%, more than 5%\): 3.jpg"):
        images.check_bad(cache, [p.name for p in paths], "train", "are left out", 0.05, logs.append)


@pytest.mark.parametrize(
    "make, outcome",
    [
        (lambda p: Image.new("L", (300, 200), 90).save(p, "JPEG"), "converted"),  # grayscale
        (lambda p: Image.new("CMYK", (300, 200), (10, 200, 30, 0)).save(p, "JPEG"), "converted"),
        (lambda p: Image.new("RGB", (300, 200), (1, 2, 3)).save(p, "PNG"), "converted"),  # PNG bytes behind .jpg
        (lambda p: Image.new("RGBA", (300, 200), (1, 2, 3, 4)).save(p, "PNG"), "converted"),
        (lambda p: Image.new("P", (300, 200), 7).save(p, "GIF"), "converted"),
        (lambda p: Image.new("I;16", (300, 200), 300).save(p, "PNG"), "converted"),  # 16-bit grayscale
        (lambda p: p.write_bytes(b""), "empty"),
        (lambda p: p.write_bytes(b"GIF89a garbage"), "cannot identify"),
        (lambda p: p.write_bytes(dogs.to_bytes(Image.new("RGB", (300, 200), 5))[:200]), "truncated"),
        (lambda p: None, "file not found"),
    ],
    ids=["gray", "cmyk", "png", "rgba", "gif-palette", "png16", "empty", "garbage", "truncated", "missing"],
)
def test_awkward_and_broken_files(tmp_path, make, outcome):
    path = tmp_path / "x.jpg"
    make(path)
    if outcome == "converted":
        out = images.decode(path, 32)
        assert out.shape == (32, 32, 3) and out.dtype == np.uint8
    else:
        with pytest.raises(images.DecodeError) as e:
            images.decode(path, 32)
        assert outcome in str(e.value).lower() or (outcome == "empty" and "cannot identify" in str(e.value))


def test_cache_key_follows_the_code_version(tmp_path, monkeypatch):
    import kit

    paths = make_files(tmp_path / "img", 2)
    key = images.cache_key(paths, 40)
    monkeypatch.setattr(kit, "__version__", "9.9.9")
    assert images.cache_key(paths, 40) != key


def test_streaming_reads_the_same_rows_as_the_cache(tmp_path):
    paths = make_files(tmp_path / "img", 12)
    dogs.corrupt(paths[4], "garbage")
    cache = images.build_cache(paths, 36, tmp_path / "cache", workers=1, log=lambda m: None)
    files = images.streaming(paths, 36, workers=2)
    assert files.bad.keys() == cache.bad.keys() == {4}
    rows = np.array([11, 0, 4, 7])
    assert np.array_equal(files.read(rows), cache.read(rows))


def test_cache_refusal_reasons(tmp_path, monkeypatch):
    assert images.cache_refusal(10**6, tmp_path) == ""
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda p: type("U", (), {"free": 5 * 2**30})())
    assert images.cache_refusal(8 * 2**30, tmp_path) == (f"it needs 8.0 GB and {tmp_path} has 5.0 GB free (kit keeps a "
                                                          "tenth of it free)")
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 2 * 2**30)
    assert images.cache_refusal(2 * 2**30, tmp_path) == "it needs 2.0 GB, more than the 2.0 GB of RAM available can hold"


def test_fast_jpeg_path_agrees_with_pillow_and_honours_exif(tmp_path):
    path = tmp_path / "p.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6
    dogs.photo(np.random.default_rng(3), 1, 300, 200).save(path, quality=92, exif=exif.tobytes())
    fast = images._decode_jpeg(path, 128)
    with Image.open(path) as im:
        slow = images._decode_pillow(im, 128)
    assert fast is not None and fast.shape == slow.shape == (128, 128, 3)
    assert np.abs(fast.astype(int) - slow.astype(int)).mean() < 2.0  # same picture, same orientation
    assert np.array_equal(images.decode(path, 128), fast)  # decode takes the fast path for this size
