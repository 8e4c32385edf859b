"""Tables of any size: their size estimated before they are read, read in chunks with the numbers downcast (only
the columns asked for, where given), and sampled to `train_rows` where asked; a table too big for the memory
stops in one line that says what to do: a training table without `train_rows`, set it (the 55M-row taxi table
takes about 4 GB as float32, its text 5.5 GB); a table read whole (the test table: every row is predicted), what
the caller says.
"""
from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import tables
from kit.errors import KitError
from kit.runtime import hardware

HEAD_ROWS = 20_000  # rows read first to measure a table's bytes per line of text and per row in memory
CHUNK_ROWS = 500_000  # rows read at a time from a large table: the text of one chunk is in memory at a time
LARGE_BYTES = 64 * 2**20  # files above this are read in chunks, each downcast as it comes
# a training table may take this share of the free memory; its features, the folds' copies (a booster's own
# matrix is about as large again) and the test table take the rest
MEMORY_SHARE = 0.3


@dataclass(frozen=True)
class Size:
    rows: int  # estimated from the file's size and its first lines
    memory: int  # bytes once read and downcast, estimated from its first rows


def downcast(frame: pd.DataFrame, keep: tuple[str, ...] = ()) -> pd.DataFrame:
    """float64 columns as float32, integer columns as the smallest integer type that holds them; `keep` as they are."""
    for column in frame.columns:
        if column in keep:
            continue
        values = frame[column]
        if pd.api.types.is_float_dtype(values) and values.dtype != np.float32:
            frame[column] = values.astype(np.float32)
        elif pd.api.types.is_integer_dtype(values) and not pd.api.types.is_bool_dtype(values):
            frame[column] = pd.to_numeric(values, downcast="integer")
    return frame


def estimate(path: Path, id_column: str | None = None, columns: list[str] | None = None) -> Size:
    """The rows a CSV holds and the memory they take once read (`columns` alone, where given), from its size and its
    first HEAD_ROWS rows."""
    with open(path, "rb") as f:
        head = b"".join(line for _, line in zip(range(HEAD_ROWS + 1), f))
    sample = _read(io.BytesIO(head), id_column, path, columns)
    if head.count(b"\n") <= HEAD_ROWS or not len(sample):  # the whole file was read: it is its own estimate
        return Size(len(sample), int(downcast(sample).memory_usage(deep=True).sum()))
    rows = int(path.stat().st_size / (len(head) / (len(sample) + 1)))
    return Size(rows, int(rows * downcast(sample).memory_usage(deep=True).sum() / len(sample)))


def read_table(path: Path, id_column: str | None = None, rows: int = 0, seed: int = 0,
               log: Callable[[str], None] = print, columns: list[str] | None = None, whole: str = "") -> pd.DataFrame:
    """The CSV at `path` (of its columns, those in `columns` where given), its numbers downcast and its ids read as
    text; with `rows`, a sample of that many rows drawn at random (in their order in the file). Without `rows`, a
    table that would take more than MEMORY_SHARE of the free memory is a KitError naming `train_rows`; with `whole`
    (a table every row of which is needed, such as the test table), naming what `whole` says to do."""
    size = estimate(path, id_column, columns)
    free = hardware.available_ram_bytes()
    keep = (id_column,) if id_column else ()
    if not rows and free and size.memory > MEMORY_SHARE * free:
        said = (f"{path.name}: about {size.rows:,} rows, {size.memory / 2**30:.1f} GB once read, more than the "
                f"{MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GB of free memory a table may take")
        if whole:
            raise KitError(f"{said}; {whole}")
        fit = int(size.rows * MEMORY_SHARE * free / size.memory)
        suggest = int(float(f"{fit:.1g}")) if fit >= 10 else fit
        raise KitError(f"{said}; set train_rows (such as {suggest}) to train on a sample of its rows")
    share = min(1.0, 1.02 * rows / max(size.rows, 1)) if rows else 1.0  # a little over: the estimate may be short
    rng = np.random.default_rng(seed)
    if path.stat().st_size <= LARGE_BYTES:
        frame = downcast(tables.read_csv(path, id_column), keep)
        frame = frame[[c for c in frame.columns if c in columns]] if columns is not None else frame
    else:
        parts = []
        with pd.read_csv(path, dtype={id_column: str} if id_column else None, chunksize=CHUNK_ROWS, low_memory=False,
                         usecols=_wanted(columns)) as chunks:
            for chunk in chunks:
                if share < 1.0:
                    chunk = chunk[rng.random(len(chunk)) < share]
                parts.append(downcast(chunk, keep))
        frame = downcast(pd.concat(parts, ignore_index=True), keep) if parts else pd.DataFrame()
        if frame.empty:
            raise KitError(f"{path}: no rows")
    if rows and len(frame) > rows:
        frame = frame.iloc[np.sort(rng.choice(len(frame), rows, replace=False))].reset_index(drop=True)
    if rows:
        total = f"about {size.rows:,}" if path.stat().st_size > LARGE_BYTES else f"{size.rows:,}"
        how = "all of them" if len(frame) >= size.rows else f"a sample of {len(frame):,} drawn at random (train_rows)"
        log(f"{path.name}: {total} rows; read {how}")
    return frame


def _wanted(columns: list[str] | None):
    """pandas' usecols for `columns`: those of them a file holds (None: all of its columns)."""
    if columns is None:
        return None
    wanted = set(columns)
    return lambda name: name in wanted


def _read(source, id_column: str | None, path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    try:
        return pd.read_csv(source, dtype={id_column: str} if id_column else None, low_memory=False, usecols=_wanted(columns))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise KitError(f"{path}: cannot read it as CSV ({' '.join(str(e).split())})") from None
