"""Reading the competition's tables (CSV, TSV, JSON records or columns, JSON lines), with errors that name
the file and the column."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import records
from kit.errors import KitError


def read_table(path: Path, id_column: str | None = None) -> pd.DataFrame:
    """The table at `path`, by its extension: .tsv is tab-separated, .json a list of records or a mapping of
    columns (or JSON lines), .jsonl JSON lines, anything else CSV; the id column (if given) as text."""
    suffix = path.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        return records.read(path, id_column)
    return read_csv(path, id_column, sep="\t" if suffix == ".tsv" else ",")


def read_csv(path: Path, id_column: str | None = None, sep: str = ",") -> pd.DataFrame:
    """The CSV at `path`; its id column (if given) read as text, so ids keep their exact spelling."""
    try:
        df = pd.read_csv(path, sep=sep, dtype={id_column: str} if id_column else None, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise KitError(f"{path}: cannot read it as {'TSV' if sep == chr(9) else 'CSV'} ({' '.join(str(e).split())})") from None
    if df.empty:
        raise KitError(f"{path}: no rows")
    return df


def require_columns(df: pd.DataFrame, columns: Iterable[str], path: Path, key: str = "[data]") -> None:
    for column in columns:
        if column not in df.columns:
            listed = ", ".join(map(str, df.columns[:12])) + (", ..." if len(df.columns) > 12 else "")
            raise KitError(f"{path.name}: no column '{column}' (it has: {listed}); fix {key} in the config")


def require_filled(df: pd.DataFrame, column: str, path: Path) -> None:
    """One line naming the first row whose target is empty."""
    empty = df[column].isna().to_numpy()
    if empty.any():
        row = int(np.flatnonzero(empty)[0]) + 2
        raise KitError(f"{path.name}: target '{column}' is empty in row {row}; fill or drop the row")


def require_unique(df: pd.DataFrame, column: str, path: Path) -> None:
    dup = df[column].duplicated()
    if dup.any():
        first = df.index[dup.to_numpy()][0]
        raise KitError(f"{path.name}: id '{df[column][first]}' appears more than once (row {first + 2}); ids must be unique")
