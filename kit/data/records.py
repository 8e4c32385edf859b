"""JSON files as tables: a list of records, a mapping of columns, or JSON lines (one record a line, whatever
the file's extension: stanford-covid-vaccine's train.json is JSON lines).

And per-row arrays as steps: `explode` turns each row holding lists (or strings, one character a step) into
one row per step, the long table the sequence templates read, with composite ids `<sequence id>_<step>`.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError


def load(path: Path) -> Any:
    """The parsed file: a list or a mapping; JSON lines as the list of their records."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise KitError(f"{path.name}: not UTF-8 text ({e.reason} at byte {e.start}); is it a JSON file?") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":  # anything but a second value after the first: not JSON lines either
            raise KitError(f"{path.name}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise KitError(f"{path.name}, line {number}: not a JSON record ({e.msg}); JSON lines hold one record "
                               "a line") from None
    return rows


def is_coco(value: Any) -> bool:
    """A COCO-style label file: a mapping with a list of image records and annotations or categories."""
    return (isinstance(value, dict) and isinstance(value.get("images"), list)
            and ("annotations" in value or "categories" in value))


def read(path: Path, id_column: str | None = None) -> pd.DataFrame:
    """The JSON file at `path` as a table, its id column (if given) as text."""
    df = frame(load(path), path)
    if id_column and id_column in df.columns:
        df[id_column] = df[id_column].astype(str)
    return df


def frame(value: Any, path: Path) -> pd.DataFrame:
    """A loaded JSON value (`load`) as a table, its rows numbered from 0, or a KitError that says why it is none."""
    if is_coco(value):
        raise KitError(f'{path.name}: a COCO-style label file (images, annotations, categories), not a table; set '
                       'layout = "coco" in [data] for image competitions')
    if isinstance(value, list):
        if not all(isinstance(v, dict) for v in value):
            bad = next(i for i, v in enumerate(value) if not isinstance(v, dict))
            raise KitError(f"{path.name}: item {bad} is not a record ({type(value[bad]).__name__}); a JSON table is a "
                           "list of records, a mapping of columns, or JSON lines")
        df = pd.DataFrame.from_records(value)
    elif isinstance(value, dict) and value and all(isinstance(v, (list, dict)) for v in value.values()):
        lengths = {k: len(v) for k, v in value.items()}
        if len(set(lengths.values())) > 1:
            short = min(lengths, key=lengths.get)
            raise KitError(f"{path.name}: column '{short}' has {lengths[short]} values and others "
                           f"{max(lengths.values())}; a mapping of columns needs one value per row in each")
        try:
            df = pd.DataFrame(value)
        except ValueError as e:  # iwildcam-2020's MegaDetector file: a list of images beside a mapping of names
            raise KitError(f"{path.name}: not a mapping of columns ({e}); cannot read it as a table") from None
    else:
        raise KitError(f"{path.name}: neither a list of records nor a mapping of columns; cannot read it as a table")
    if df.empty:
        raise KitError(f"{path}: no rows")
    return df.reset_index(drop=True)


def explode(table: pd.DataFrame, columns: Sequence[str], sequence_column: str, order_column: str, id_column: str,
            where: str) -> pd.DataFrame:
    """One row per step of each row: `columns` hold a list (or a string, one character a step) per row; the
    other columns repeat. A row's steps are as many as its longest; shorter lists leave the tail empty (NaN:
    stanford-covid-vaccine scores 68 of 107 positions). Adds `order_column` (0, 1, ...) and, unless the
    table has it, `id_column` = "<sequence>_<step>" (as sample submissions spell such ids: id_seqpos)."""
    missing = [c for c in (*columns, sequence_column) if c not in table.columns]
    if missing:
        listed = ", ".join(map(str, table.columns[:12]))
        raise KitError(f"{where}: no column '{missing[0]}' (it has: {listed}); fix [data] step_columns or sequence_column")
    cells = {c: [_steps(v, c, i, where) for i, v in enumerate(table[c])] for c in columns}
    lengths = np.max(np.array([[len(v) for v in cells[c]] for c in columns]), axis=0)  # (rows,)
    if (lengths == 0).all():
        raise KitError(f"{where}: the step columns {', '.join(columns)} hold no values; nothing to make steps of")
    row = np.repeat(np.arange(len(table)), lengths)
    step = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out = table.drop(columns=list(columns)).iloc[row].reset_index(drop=True)
    for c in columns:
        padded = [list(v) + [None] * (n - len(v)) for v, n in zip(cells[c], lengths)]
        flat = pd.Series([x for v in padded for x in v], dtype=object)
        numeric = pd.to_numeric(flat, errors="coerce")
        out[c] = numeric if numeric.notna().sum() == flat.notna().sum() else flat
    out[order_column] = step
    if id_column not in out.columns:
        out[id_column] = out[sequence_column].astype(str) + "_" + pd.Series(step).astype(str)
    return out


def _steps(value: Any, column: str, row: int, where: str) -> list:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):  # a list stored as text (a CSV cell)
            try:
                return list(json.loads(text))
            except json.JSONDecodeError:
                pass
        return list(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    raise KitError(f"{where}, row {row + 1}, column '{column}': {value!r} is not a list or a string of steps")
