"""A row's series file as a row of features (kit.data.signal_features): volcano's segments, 10 sensors x 60,001 steps."""
import numpy as np
import pandas as pd
import pytest

from kit.build import plan
from kit.data import signal_features as sf
from kit.errors import KitError
from kit.spec import Spec

SENSORS = [f"sensor_{k}" for k in range(1, 11)]
STEPS = 60_001


@pytest.fixture(scope="module")
def segment(tmp_path_factory):
    """A full-size segment as Kaggle writes it: int16-range integers, nulls as empty cells, sensor_4 empty."""
    rng = np.random.default_rng(0)
    t = np.arange(STEPS) / 100.0
    values = rng.normal(0, 300, (STEPS, 10)) + 500 * np.sin(2 * np.pi * 3.0 * t)[:, None]
    values = values.round().astype(np.float32)
    values[1000:1100, 1] = np.nan  # a gap in sensor_2
    values[:, 3] = np.nan  # sensor_4 recorded nothing
    path = tmp_path_factory.mktemp("train") / "1136037770.csv"
    pd.DataFrame(values, columns=SENSORS).to_csv(path, index=False, float_format="%.0f")  # whole numbers, nulls empty
    return path, values


def expected(x: np.ndarray) -> dict[str, float]:
    """One sensor's features written out with numpy."""
    v = x[~np.isnan(x)].astype(np.float64)
    c = v - v.mean()
    out = {"missing": np.isnan(x).mean(), "mean": v.mean(), "std": v.std(), "min": v.min(), "max": v.max(),
           "abs_max": np.abs(v).max(), "q01": np.quantile(v, 0.01), "q50": np.median(v), "q99": np.quantile(v, 0.99),
           "zero_cross": np.sum(np.sign(c[1:]) != np.sign(c[:-1])) / (len(v) - 1)}
    spectrum = np.abs(np.fft.rfft(np.nan_to_num(x - v.mean(), nan=0.0))) ** 2 / len(x)  # 30,001 bins
    nyquist = len(spectrum) - 1
    out["band0"] = np.log1p(spectrum[0:round(nyquist / 256)].mean())  # below 1/256 of the Nyquist frequency
    out["band7"] = np.log1p(spectrum[round(nyquist / 4):round(nyquist / 2)].mean())  # 12.5 to 25 Hz
    out["band8"] = np.log1p(spectrum[round(nyquist / 2):nyquist].mean())  # its upper half
    windows = v[: len(v) // 60 * 60].reshape(60, -1)  # 60 windows of 10 s
    out["win_std_max"] = windows.std(1).max()
    out["win_mean_std"] = windows.mean(1).std()
    return out


def test_a_full_segment_gives_each_sensor_the_features_numpy_gives(segment):
    path, values = segment
    got = sf.row(sf.read(path, SENSORS))
    names = sf.names(SENSORS)
    assert got.dtype == np.float32 and len(got) == len(names) == 10 * len(sf.SENSOR_STATS)
    for sensor in ("sensor_1", "sensor_2"):  # whole, and with a gap of 100 steps
        for stat, value in expected(values[:, SENSORS.index(sensor)]).items():
            assert got[names.index(f"{sensor}_{stat}")] == pytest.approx(value, rel=2e-4, abs=1e-6), f"{sensor}_{stat}"
    assert got[names.index("sensor_2_missing")] == pytest.approx(100 / STEPS)
    # the 3 Hz tremor's band (1/32 to 1/16 of 50 Hz: 1.6 to 3.1 Hz) holds more power than the band above it
    assert got[names.index("sensor_1_band4")] > got[names.index("sensor_1_band5")] + 2


def test_an_empty_sensor_gives_missing_features_and_its_missing_share(segment):
    got = sf.row(sf.read(segment[0], SENSORS))
    names = sf.names(SENSORS)
    empty = np.array([got[names.index(f"sensor_4_{s}")] for s in sf.SENSOR_STATS])
    assert empty[0] == 1.0 and np.isnan(empty[1:]).all()
    assert not np.isnan(got[[names.index(f"sensor_5_{s}") for s in sf.SENSOR_STATS]]).any()


def test_the_table_is_cached_by_the_files_and_read_back(segment, tmp_path):
    path, _ = segment
    said = []
    first = sf.table_of([path, path], SENSORS, tmp_path, workers=2, log=said.append)
    again = sf.table_of([path, path], SENSORS, tmp_path, workers=1, log=said.append)
    assert first.shape == (2, 270) and np.array_equal(first, again, equal_nan=True)
    assert "reusing" in said[-1] and "reusing" not in said[0]
    assert len(list(tmp_path.glob("*.npy"))) == 1


@pytest.mark.parametrize("text, match", [
    (None, "no such file; every row needs its series file"),
    ("", "the file is empty"),
    ("sensor_1,sensor_2\n", "a header and no rows"),
    ("sensor_1,sensor_3\n1,2\n", r"no column 'sensor_2' \(1 of the 2 series columns missing; it has sensor_1, sensor_3\)"),
    ("sensor_1,sensor_2\n1,x\n", "cannot read it as a CSV of numbers"),
])
def test_a_series_file_kit_cannot_read_is_one_line(tmp_path, text, match):
    path = tmp_path / "7.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(KitError, match=match) as caught:
        sf.read(path, ["sensor_1", "sensor_2"])
    assert "\n" not in str(caught.value)
    if text is None:  # the table's check, before any worker starts
        with pytest.raises(KitError, match=match):
            sf.table_of([path], ["sensor_1"], tmp_path / "cache", workers=2)


VOLCANO = {"slug": "predict-volcanic-eruptions-ingv-oe", "template": "tabular", "metric": "mae", "id_column": "segment_id",
           "target_column": "time_to_eruption", "test": "", "train_series": "train", "test_series": "test"}


@pytest.mark.parametrize("change, match", [
    ({"test_series": ""}, "train_series and test_series go together"),
    ({"train_series": "", "test_series": "", "series_columns": ["sensor_1"]}, "series_columns names the columns of series"),
    ({"template": "cnn", "metric": "mae"}, "train_series is not read by the cnn template"),
])
def test_a_series_declaration_that_cannot_be_read_is_one_line_at_the_config(change, match):
    Spec.from_dict(VOLCANO)
    with pytest.raises(KitError, match=rf"^competition: .*{match}"):
        Spec.from_dict({**VOLCANO, **change})


def test_the_plan_counts_the_feature_step_and_its_cache():
    """volcano at its real size: 4,431 files of 60,001 x 10 values, about 10 GB as float32, streamed on 4 vCPUs."""
    lines = []
    made = plan.plan("predict-volcanic-eruptions-ingv-oe", log=lines.append)
    assert made.before_s == pytest.approx(4431 * 600_010 / 1e6 * 0.3 / 4)  # 199 s
    assert made.totals()["before_s"] == made.before_s and made.tail_s < made.before_s
    cache = next(n for n in made.needs if n.what == "the series files' features, cached")
    assert cache.place == "scratch" and cache.amount == 4431 * 270 * 4
    assert "computing the series' features" in lines[0] and "9.9 GB as float32" in lines[0] and "data s" in lines[0]
