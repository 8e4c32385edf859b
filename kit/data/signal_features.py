"""Per-row files of sensor series turned into one row of features each, for the tabular template (volcano's segments:
train/<segment_id>.csv, 10 sensors x 60,001 steps, int16-range values with nulls).

A row's file is read once, as float32 (a null is NaN), and each sensor becomes SENSOR_STATS statistics: its share of
missing steps, its moments and quantiles, its zero crossings, the log power of its spectrum in BANDS (fractions of the
Nyquist frequency, so the same bands at any length) and the spread of its windows' levels. A sensor with no value at
all (volcano blanks whole sensors in some segments) gives NaN for all but its missing share, which the boosters read
as missing. Files are read in a process pool, one file a task, so one segment at a time is in a worker's memory
(4,431 of them are about 10 GB as float32), and the table is cached under scratch, keyed by the files' paths, sizes
and times and FORMAT (`cache_key`, as kit.data.images'): a second run reads it back.

Refused in one line: a row with no file, a file that cannot be read as CSV or holds no rows, a file without a column
the features are read from.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

import kit
from kit import files
from kit.errors import KitError
from kit.runtime import paths, progress

FORMAT = 1  # bump when the features change: a cache of another format is computed again
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
# the spectrum's nine bands, as fractions of the Nyquist frequency: volcano's 100 Hz sensors' 0.2-50 Hz in eight
# octaves, and below 0.2 Hz (its tremor's drift)
BANDS = (0.0, 1 / 256, 1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
WINDOWS = 60  # each sensor cut into this many windows (volcano's: 10 s each) for the spread of their levels
SENSOR_STATS = ("missing", "mean", "std", "min", "max", "abs_max", *(f"q{round(q * 100):02d}" for q in QUANTILES),
                "zero_cross", *(f"band{k}" for k in range(len(BANDS) - 1)),
                "win_std_mean", "win_std_min", "win_std_max", "win_mean_std")


def names(columns: Sequence[str]) -> list[str]:
    """The features' names: <column>_<stat> for each column read and each of SENSOR_STATS."""
    return [f"{c}_{s}" for c in columns for s in SENSOR_STATS]


def sensor(x: np.ndarray) -> np.ndarray:
    """(len(SENSOR_STATS),) float32 statistics of one sensor's steps `x` (float32, NaN where missing)."""
    out = np.full(len(SENSOR_STATS), np.nan, np.float32)
    present = ~np.isnan(x)
    out[0] = 1.0 - present.mean() if len(x) else 1.0
    v = x[present].astype(np.float64)  # (valid steps,)
    if len(v) < 2:
        return out
    mean, std = v.mean(), v.std()
    centred = v - mean
    q = np.quantile(v, QUANTILES)
    crossings = np.count_nonzero(np.signbit(centred[1:]) != np.signbit(centred[:-1])) / (len(v) - 1)
    # the spectrum of the whole series, missing steps at the mean: each band's mean power, as log1p
    filled = np.where(present, x - mean, 0.0)
    power = np.abs(np.fft.rfft(filled)) ** 2 / len(x)  # (len(x) // 2 + 1,)
    edges = np.round(np.asarray(BANDS) * (len(power) - 1)).astype(int)
    bands = [np.log1p(power[a:max(b, a + 1)].mean()) for a, b in zip(edges[:-1], edges[1:])]
    width = len(v) // WINDOWS
    if width >= 2:
        windows = v[: width * WINDOWS].reshape(WINDOWS, width)  # (WINDOWS, width)
        w_std, w_mean = windows.std(1), windows.mean(1)
        rolling = [w_std.mean(), w_std.min(), w_std.max(), w_mean.std()]
    else:
        rolling = [np.nan] * 4
    out[1:] = [mean, std, v.min(), v.max(), np.abs(v).max(), *q, crossings, *bands, *rolling]
    return out


def row(values: np.ndarray) -> np.ndarray:
    """(columns x len(SENSOR_STATS),) float32: each column of `values` (steps, columns) as `sensor`'s statistics."""
    return np.concatenate([sensor(values[:, k]) for k in range(values.shape[1])])


def read(path: Path, columns: Sequence[str]) -> np.ndarray:
    """(steps, columns) float32 of the file at `path`, NaN where a value is missing."""
    if not path.is_file():
        raise KitError(f"{path}: no such file; every row needs its series file in {path.parent}")
    try:
        frame = pd.read_csv(path, dtype=np.float32)
    except pd.errors.EmptyDataError:
        raise KitError(f"{path}: the file is empty; every series file holds a header and its steps") from None
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as e:
        raise KitError(f"{path}: cannot read it as a CSV of numbers ({' '.join(str(e).split())[:160]})") from None
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise KitError(f"{path}: no column '{absent[0]}' ({len(absent)} of the {len(columns)} series columns missing; "
                       f"it has {', '.join(map(str, frame.columns[:10]))}); each file needs the same columns")
    if not len(frame):
        raise KitError(f"{path}: a header and no rows; every series file holds its steps")
    return frame[list(columns)].to_numpy(np.float32)


def header(path: Path) -> list[str]:
    """The columns of the file at `path` (its series columns where [data] series_columns names none)."""
    if not path.is_file():
        raise KitError(f"{path}: no such file; every row needs its series file in {path.parent}")
    try:
        return [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except pd.errors.EmptyDataError:
        raise KitError(f"{path}: the file is empty; every series file holds a header and its steps") from None


def cache_key(series: Sequence[Path], columns: Sequence[str]) -> str:
    h = hashlib.sha256(f"kit-series-features/{FORMAT}/{kit.__version__}/{','.join(columns)}".encode())
    for p in series:
        st = os.stat(p) if os.path.exists(p) else None
        h.update(f"\n{os.path.abspath(p)}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1}".encode())
    return h.hexdigest()[:20]


class _Job:
    """One file's features (picklable for the pool)."""

    def __init__(self, paths: list[str], columns: list[str]):
        self.paths, self.columns = paths, columns

    def __call__(self, i: int) -> tuple[int, np.ndarray]:
        return i, row(read(Path(self.paths[i]), self.columns))


def table_of(series: Sequence[Path], columns: Sequence[str], cache_dir: Path, workers: int, desc: str = "features",
             log: Callable[[str], None] = print) -> np.ndarray:
    """(len(series), len(names(columns))) float32: each file's features, read back from the cache under `cache_dir`
    where the same files were read before, else computed (in `workers` processes) and cached."""
    key = cache_key(series, columns)
    data_path, meta_path = cache_dir / f"{key}.npy", cache_dir / f"{key}.json"
    if meta_path.exists() and data_path.exists():
        log(f"{desc}: reusing the features of {len(series)} series files cached in {data_path}")
        return np.load(data_path)
    for p in series:  # every file there before any is read: a missing one is one line, not a pool's traceback
        if not p.is_file():
            raise KitError(f"{p}: no such file; every row needs its series file in {p.parent}")
    out = np.empty((len(series), len(columns) * len(SENSOR_STATS)), np.float32)
    job = _Job([str(p) for p in series], list(columns))
    bar = progress.bar(total=len(series), desc=desc, unit="file")
    if workers > 1 and len(series) > 1:
        # fork: the children run pandas and numpy only, never CUDA; a task is one file, so each worker holds one
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for i, values in pool.imap_unordered(job, range(len(series)), chunksize=4):
                out[i] = values
                bar.update(1)
    else:
        for i in range(len(series)):
            out[i] = job(i)[1]
            bar.update(1)
    bar.close()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with files.atomic_path(data_path) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, out)
    files.write_text(meta_path, json.dumps({"format": FORMAT, "columns": list(columns), "count": len(series)}))
    log(f"{desc}: {out.shape[1]} features of {len(series)} series files ({len(columns)} columns each), cached in {data_path}")
    return out


def joined(spec, data_dir: Path, train: pd.DataFrame | None, test: pd.DataFrame, workers: int,
           log: Callable[[str], None], columns: Sequence[str] = ()) -> tuple[pd.DataFrame | None, pd.DataFrame, list[str]]:
    """The training rows (None in predict mode) and the test rows, each with the features of its series file,
    <[data] train_series or test_series>/<id>.csv, and the series columns they were read from: `columns` (the
    training run's, in predict mode), else [data] series_columns, else the first training file's columns. The tables
    as they are, and no columns, without [data] train_series."""
    if not spec.train_series:
        return train, test, []
    scratch = paths.scratch_dir() / "series-features"
    columns = list(columns or spec.series_columns)
    tables_out = []
    for table, folder_key in ((train, "train_series"), (test, "test_series")):
        if table is None:
            tables_out.append(None)
            continue
        folder = data_dir / getattr(spec, folder_key)
        if not folder.is_dir():
            raise KitError(f"[data] {folder_key} '{getattr(spec, folder_key)}' is not a folder in {data_dir}; name the "
                           "folder of its rows' series files")
        if spec.id_column not in table.columns:
            raise KitError(f"[data] id_column '{spec.id_column}' names each row's series file, and its table has no such "
                           f"column (it has {', '.join(map(str, table.columns[:10]))})")
        files_of = [folder / f"{i}.csv" for i in table[spec.id_column].astype(str)]
        if not columns:
            columns = header(files_of[0]) if files_of else []
        values = table_of(files_of, columns, scratch, workers, f"features {folder.name}", log)
        added = pd.DataFrame(values, columns=names(columns), index=table.index)
        tables_out.append(pd.concat([table.drop(columns=[c for c in added.columns if c in table.columns]), added], axis=1))
    return tables_out[0], tables_out[1], columns
