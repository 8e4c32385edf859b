"""The audio template's data path: kit's AIFF reader against the stdlib's aifc, the readers' refusals, the wave
cache's writing, reuse and keying, and the crops and prediction windows."""
import os
import warnings

import numpy as np
import pytest

from kit.data import audio, waves
from kit.errors import KitError
from kit.smoke.audio import write_aiff, write_wav


def stdlib_aifc():
    """The stdlib's aifc, the oracle on 3.11 and 3.12; removed in Python 3.13, where only the tests that compare
    with it skip (imported here, not at the module's top, which would skip every audio test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pytest.importorskip("aifc")


def aifc_samples(path, bits):
    """The samples the stdlib reads, as (frames, channels) integers: big-endian bytes unpacked by hand."""
    with stdlib_aifc().open(str(path), "rb") as f:
        channels, width, rate, frames = f.getnchannels(), f.getsampwidth(), f.getframerate(), f.getnframes()
        raw = np.frombuffer(f.readframes(frames), np.uint8).reshape(-1, width)
    assert width * 8 == bits
    value = np.zeros(len(raw), np.int64)
    for k in range(width):
        value = (value << 8) | raw[:, k]
    value = np.where(value >= 1 << (bits - 1), value - (1 << bits), value)
    return rate, value.reshape(frames, channels)


def aifc_write(path, samples, rate, bits):
    with stdlib_aifc().open(str(path), "wb") as f:
        f.setnchannels(samples.shape[1])
        f.setsampwidth(bits // 8)
        f.setframerate(rate)
        big = samples.astype(">i4").view(np.uint8).reshape(*samples.shape, 4)[..., 4 - bits // 8:]
        f.writeframes(big.tobytes())


@pytest.mark.parametrize("bits", [8, 16, 24, 32])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("writer", ["aifc", "kit"])
def test_aiff_reader_reads_what_aifc_reads(tmp_path, bits, channels, writer):
    rng = np.random.default_rng(bits + channels)
    samples = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (301, channels))  # an odd frame count: padded chunks
    path = tmp_path / "x.aif"
    if writer == "aifc":
        aifc_write(path, samples, 22050, bits)
    else:  # kit's writer takes 24-bit samples in an int32's top bytes
        write_aiff(path, (samples << 8).astype(np.int32) if bits == 24 else samples.astype(f"i{max(bits // 8, 1)}"),
                   22050, bits)
    rate, x = audio.read(path)
    oracle_rate, oracle = aifc_samples(path, bits)
    assert rate == oracle_rate == 22050 and x.shape == (301, channels)
    scale = 256 if bits == 24 else 1  # 24-bit samples are read into an int32's top bytes, as scipy reads 24-bit wav
    np.testing.assert_array_equal(x.astype(np.int64), oracle * scale)
    np.testing.assert_array_equal(oracle, samples)
    assert audio.probe(path) == audio.Header(22050, channels, 301)


def test_odd_sample_rates_survive_the_80_bit_float(tmp_path):
    for rate in (2000, 11025, 44100, 48000, 96000):
        write_aiff(tmp_path / f"{rate}.aif", np.zeros(4, np.int16), rate)
        assert audio.read(tmp_path / f"{rate}.aif")[0] == rate


def test_a_bad_header_is_one_line(tmp_path):
    (tmp_path / "bad.aif").write_bytes(b"RIFF\0\0\0\0WAVEjunk")
    with pytest.raises(audio.SoundError, match="^not an AIFF file") as e:
        audio.read(tmp_path / "bad.aif")
    assert "\n" not in str(e.value)
    write_aiff(tmp_path / "cut.aif", np.ones(1000, np.int16), 8000)
    (tmp_path / "cut.aif").write_bytes((tmp_path / "cut.aif").read_bytes()[:600])
    with pytest.raises(audio.SoundError, match="truncated"):
        audio.read(tmp_path / "cut.aif")


def test_suffixes_kit_cannot_read_are_refused_in_one_line(monkeypatch):
    with pytest.raises(KitError, match=r"^clip\.xyz: kit reads sound files ending in \.wav") as e:
        audio.check_suffix("dir/clip.xyz")
    assert "\n" not in str(e.value)
    monkeypatch.setattr(audio, "find_spec", lambda name: None)
    assert audio.refusal(".flac") == ".flac files need the soundfile package: add soundfile to [kernel] packages"
    assert audio.refusal(".WAV") == ""


def test_mono_int16_scales_every_width_and_resamples_once():
    x16 = np.array([[1000, 3000], [-2000, -4000]], np.int16)
    np.testing.assert_array_equal(audio.mono_int16(x16, 8000, 8000), [2000, -3000])
    np.testing.assert_array_equal(audio.mono_int16(np.array([[1000 << 16]], np.int32), 0, 0), [1000])
    np.testing.assert_array_equal(audio.mono_int16(np.array([[0], [255]], np.uint8), 0, 0), [-32768, 32512])
    np.testing.assert_array_equal(audio.mono_int16(np.array([[0.5], [np.nan]], np.float32), 0, 0), [16384, 0])
    tone = (np.sin(np.arange(16000) * 2 * np.pi * 100 / 16000) * 10000).astype(np.int16)[:, None]
    down = audio.mono_int16(tone, 16000, 2000)
    assert len(down) == 2000 == audio.frames_at(audio.Header(16000, 1, 16000), 2000)
    assert abs(np.abs(down[100:-100]).max() - 10000) < 300  # 100 Hz passes the 1 kHz filter


def clips(folder, lengths, rate=8000):
    paths = []
    for k, n in enumerate(lengths):
        paths.append(write_wav(folder / f"c{k}.wav", np.full(n, (k + 1) / 100, np.float32), rate))
    return paths


def test_the_cache_is_written_once_then_reused(tmp_path):
    paths = clips(tmp_path / "in", [100, 0, 250])
    (tmp_path / "in" / "bad.wav").write_bytes(b"not a wav")
    paths.insert(1, tmp_path / "in" / "bad.wav")
    said = []
    cache = waves.build_cache(paths, 8000, tmp_path / "cache", workers=1, log=said.append)
    assert cache.count == 4 and list(cache.lengths()) == [100, 0, 0, 250] and list(cache.bad) == [1]
    np.testing.assert_array_equal(cache.clip(3), np.full(250, 983, np.int16))  # 0.03 x 32767
    data, off, meta = waves.cache_files(paths, 8000, tmp_path / "cache")
    assert data.stat().st_size == 2 * 350 and meta.exists() and not list((tmp_path / "cache").glob(".*part"))
    stamp = data.stat().st_mtime_ns
    again = waves.build_cache(paths, 8000, tmp_path / "cache", workers=1, log=said.append)
    assert "reusing the decoded cache" in said[-1] and data.stat().st_mtime_ns == stamp
    assert again.bad == {1: cache.bad[1]} and list(again.offsets) == list(cache.offsets)


def test_the_cache_is_rebuilt_without_its_metadata_written_last(tmp_path):
    paths = clips(tmp_path / "in", [100, 200])
    waves.build_cache(paths, 8000, tmp_path / "cache", workers=1, log=print)
    _, _, meta = waves.cache_files(paths, 8000, tmp_path / "cache")
    meta.unlink()  # a build that died before its last write
    said = []
    waves.build_cache(paths, 8000, tmp_path / "cache", workers=1, log=said.append)
    assert said[-1].startswith("decode: decoded 2 of 2 clips")


def test_the_cache_key_changes_with_a_file_and_the_rate(tmp_path):
    paths = clips(tmp_path, [100, 200])
    key = waves.cache_key(paths, 8000)
    assert waves.cache_key(paths, 16000) != key
    write_wav(paths[1], np.zeros(201, np.float32), 8000)  # another size
    assert waves.cache_key(paths, 8000) != key
    key = waves.cache_key(paths, 8000)
    os.utime(paths[0], ns=(1, 1))  # the same size, another time
    assert waves.cache_key(paths, 8000) != key


def test_windows_cover_a_clip_the_last_flush_with_its_end():
    np.testing.assert_array_equal(waves.windows(100, 100, 50), [0])
    np.testing.assert_array_equal(waves.windows(40, 100, 50), [0])
    np.testing.assert_array_equal(waves.windows(250, 100, 50), [0, 50, 100, 150])
    np.testing.assert_array_equal(waves.windows(260, 100, 50), [0, 50, 100, 150, 160])
    rows, starts = waves.window_rows(np.array([40, 260, 100]), np.array([2, 1, 0]), 100, 50)
    np.testing.assert_array_equal(rows, [2, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(starts, [0, 0, 50, 100, 150, 160, 0])


def test_crops_random_in_training_fixed_otherwise():
    clip = np.arange(1, 11, dtype=np.int16)
    np.testing.assert_array_equal(waves.crop(clip, 4, None), [4, 5, 6, 7])  # centred
    np.testing.assert_array_equal(waves.crop(clip[:3], 5, None), [1, 2, 3, 0, 0])  # short: at the start, in zeros
    rng = np.random.default_rng(0)
    starts = {int(waves.crop(clip, 4, rng)[0]) for _ in range(200)}
    assert starts == set(range(1, 8))  # every window of the clip drawn
    placed = {int(np.argmax(waves.crop(clip[:3], 5, rng) == 1)) for _ in range(200)}
    assert placed == {0, 1, 2}


def test_wave_rows_batch_windows_at_their_starts(tmp_path):
    cache = waves.build_cache(clips(tmp_path / "in", [300, 50]), 8000, tmp_path / "cache", workers=1, log=print)
    rows = waves.WaveRows(cache, np.array([0, 0, 1]), 100, starts=np.array([0, 200, 0]))
    batch = rows.__getitems__([0, 1, 2])
    assert batch["wave"].shape == (3, 100) and batch["row"].tolist() == [0, 0, 1]
    assert (batch["wave"][2, 50:] == 0).all() and (batch["wave"][2, :50] == 655).all()
    train = waves.WaveRows(cache, np.array([0, 1]), 100, targets=np.array([1, 0]), train=True)
    assert train.__getitems__([0, 1])["target"].tolist() == [1, 0]


def frontend(headers, **values):
    """The audio pipeline's frontend for these training clips' headers under these parameters."""
    from types import SimpleNamespace

    from kit.params import AudioParams
    from kit.pipelines.audio import AudioPipeline

    session = SimpleNamespace(params=AudioParams(**values), spec=None)
    return AudioPipeline(session).frontend(headers, [f"c{k}.wav" for k in range(len(headers))])


def test_auto_settles_the_spectrogram_from_the_clips_headers():
    clips16k = [audio.Header(16000, 1, 16000), audio.Header(16000, 1, 16000), audio.Header(8000, 2, 8000), None]
    f = frontend(clips16k)
    assert (f.rate, f.length, f.n_fft, f.hop, f.fmax, f.frames) == (16000, 16000, 512, 128, 8000.0, 126)
    f = frontend([audio.Header(2000, 1, 4000)] * 3, n_fft=256, hop=32, fmax=1000.0)
    assert (f.rate, f.length, f.n_fft, f.hop, f.fmax, f.frames) == (2000, 4000, 256, 32, 1000.0, 126)
    long = frontend([audio.Header(44100, 1, 44100 * 60)], sample_rate=32000, window_s=5.0)
    assert (long.rate, long.length, long.n_fft) == (32000, 160000, 1024)
    assert frontend([audio.Header(44100, 1, 44100 * 60)]).length == 441000  # auto: at most 10 s
    with pytest.raises(KitError, match="none of the 1 training clips could be read"):
        frontend([None])
    with pytest.raises(KitError, match=r"^\[params\] fmin = 9000 Hz is not below fmax \(8000 Hz at 16000 Hz\)"):
        frontend(clips16k, fmin=9000.0)


def test_a_wav_header_is_probed_without_reading_its_samples(tmp_path, monkeypatch):
    path = write_wav(tmp_path / "x.wav", np.zeros(12345, np.float32), 16000)
    monkeypatch.setattr(audio, "read", lambda p: pytest.fail("the samples were read"))
    assert audio.probe(path) == audio.Header(16000, 1, 12345)
    with pytest.raises(audio.SoundError, match="file not found"):
        audio.probe(tmp_path / "none.wav")


def test_training_crops_follow_the_seed(tmp_path):
    noise = write_wav(tmp_path / "n.wav", np.random.default_rng(0).uniform(-1, 1, 4000).astype(np.float32), 8000)
    cache = waves.build_cache([noise], 8000, tmp_path / "cache", workers=1, log=print)

    def epochs(seed):
        rows = waves.WaveRows(cache, np.zeros(4, np.int64), 100, train=True, seed=seed)
        return [rows.__getitems__([0, 1, 2, 3])["wave"] for _ in range(3)]

    a, b, c = epochs(1), epochs(1), epochs(2)
    assert all(x.equal(y) for x, y in zip(a, b)) and not a[0].equal(c[0]) and not a[0].equal(a[1])
