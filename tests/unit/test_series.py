"""Series tables (volcano's segment CSVs) as the audio template's clips (kit.data.series): a column a channel, nulls
and empty sensors 0, a file without a column named bad, cached once and cropped alike across channels."""
import numpy as np
import pandas as pd
import pytest

from kit.data import series, waves
from kit.errors import KitError

COLUMNS = ["sensor_1", "sensor_2", "sensor_3"]


def segment(path, steps: int, seed: int = 0, columns=COLUMNS) -> np.ndarray:
    values = np.random.default_rng(seed).normal(0, 500, (steps, len(columns))).round()
    values[3, 0] = np.nan  # a stray null
    values[:, 2] = np.nan  # a sensor that recorded nothing
    pd.DataFrame(values, columns=columns).to_csv(path, index=False, float_format="%.0f")
    return values


def test_a_file_is_its_columns_as_int16_channels_a_null_zero(tmp_path):
    values = segment(tmp_path / "1.csv", 50)
    x = series.read(str(tmp_path / "1.csv"), ["sensor_2", "sensor_1", "sensor_3"])  # the order asked, not the file's
    assert x.shape == (50, 3) and x.dtype == np.int16
    np.testing.assert_array_equal(x[:, 0], values[:, 1])
    assert x[3, 1] == 0 and (x[:, 2] == 0).all()
    assert series.read(str(tmp_path / "1.csv"), COLUMNS, max_frames=20).shape == (20, 3)
    assert series.columns_of([tmp_path / "1.csv"]) == COLUMNS
    assert series.probe(str(tmp_path / "1.csv"), 3).frames == 50  # the lines, no value parsed


def test_a_long_file_is_probed_from_its_first_bytes(tmp_path, monkeypatch):
    segment(tmp_path / "long.csv", 3000)
    monkeypatch.setattr(series, "PROBE_BYTES", 4096)  # the file is ~14x that: its lines estimated from the first 4 KB
    assert abs(series.probe(str(tmp_path / "long.csv"), 3).frames - 3000) <= 0.05 * 3000
    with open(tmp_path / "long.csv", "ab") as f:  # 60 KB more without a line break: read whole, still ~3000 lines
        f.write(b"1" * 60_000)
    assert series.probe(str(tmp_path / "long.csv"), 3).frames > 4000  # the first 4 KB's line length, extrapolated
    pd.DataFrame({"a": [70000.0, -70000.0]}).to_csv(tmp_path / "loud.csv", index=False)
    assert series.read(str(tmp_path / "loud.csv"), ["a"]).tolist() == [[32767], [-32768]]  # clipped, not wrapped


def test_the_cache_holds_each_file_as_channels_and_names_a_bad_one(tmp_path):
    segment(tmp_path / "0.csv", 120, seed=0)
    segment(tmp_path / "1.csv", 80, seed=1)
    segment(tmp_path / "short.csv", 60, seed=2, columns=["sensor_1", "sensor_2", "other"])
    paths = [tmp_path / "0.csv", tmp_path / "short.csv", tmp_path / "missing.csv", tmp_path / "1.csv"]
    cache = series.build_cache(paths, COLUMNS, 100, tmp_path / "cache", workers=1, log=lambda m: None)
    assert cache.channels == 3 and cache.count == 4 and cache.lengths().tolist() == [120, 0, 0, 80]
    assert cache.bad == {1: "no column 'sensor_3' of the 3 the first training file holds", 2: "file not found"}
    np.testing.assert_array_equal(cache.clip(3), series.read(str(tmp_path / "1.csv"), COLUMNS))
    lines = []
    again = series.build_cache(paths, COLUMNS, 100, tmp_path / "cache", workers=1, log=lines.append)
    assert again.path == cache.path and again.bad == cache.bad and "reusing the series cache" in lines[0]
    wave = waves.WaveRows(cache, np.array([0, 3]), 100, train=True, seed=1).__getitems__([0, 1])["wave"]
    assert wave.shape == (2, 3, 100)  # (B, channels, length): a crop of the same steps in every channel
    clip = cache.clip(0)
    assert any(np.array_equal(clip[s:s + 100].T, wave[0].numpy()) for s in range(0, 21))


def test_the_columns_come_from_the_first_file_that_reads_and_none_reading_is_one_line(tmp_path):
    segment(tmp_path / "1.csv", 50)
    (tmp_path / "empty.csv").write_bytes(b"")  # one unreadable first file is a bad clip later, not the layout
    assert series.columns_of([tmp_path / "missing.csv", tmp_path / "empty.csv", tmp_path / "1.csv"]) == COLUMNS
    with pytest.raises(KitError, match=r"^missing.csv: cannot read its header .*; none of the first 2 files' headers "
                                       r"reads: check the series files$"):
        series.columns_of([tmp_path / "missing.csv", tmp_path / "empty.csv"])
