"""Rows built from more than one table, as a config's [data] declares them (kit.spec.Data):

- a join: each row points at rows of another table (champs' pairs at two atoms of structures.csv, by molecule and
  atom index); join k brings that table's columns in as <column>_<k>, and `join_distance` the distance between the
  two joined rows' coordinates. The table is read once, only the columns asked for, numbers as float32.
- a baseline: each row reads its group's first row (osic's first visit of a patient) as base_<column>s, and the
  gap to it along the order column.
- test rows made from the sample's ids (osic's Patient_Week), where the test table holds a row per group only.

A join table or key that is not there is one line; rows the join table lacks read missing values, and a joined
column missing in every test row (MLE-bench's champs keeps the structures of its training molecules only) is left
out of both tables with one warning: a model cannot read at prediction what the test rows do not have."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import frames
from kit.errors import KitError
from kit.runtime import paths

ROWS_AFTER = "rows_after"  # baseline's count of a group's later rows: for a score_mask, never a feature


def read_table(spec, data_dir: Path) -> pd.DataFrame | None:
    """The join table's keys and the columns the join brings in (numbers downcast), or None without a join."""
    if not spec.join_table:
        return None
    path = paths.require_file(data_dir, spec.join_table, "join table ([data] join_table)")
    header = list(pd.read_csv(path, nrows=0).columns)
    for key in ("join_keys", "join_columns", "join_distance"):
        absent = [c for c in getattr(spec, key) if c not in header]
        if absent:
            raise KitError(f"{path.name}: no column '{absent[0]}', which [data] {key} names (it has "
                           f"{', '.join(header[:12])}); fix {key}")
    wanted = [*spec.join_keys, *brought(spec, header), *spec.join_distance]
    table = frames.read_table(path, columns=list(dict.fromkeys(wanted)),
                              whole="the join table is read whole: name fewer join_columns, or run where there is more memory")
    table = table.astype({c: np.float32 for c in table.columns if table[c].dtype == np.float64})
    keys = pd.MultiIndex.from_frame(table[list(spec.join_keys)])
    if not keys.is_unique:
        raise KitError(f"{path.name}: the keys {', '.join(spec.join_keys)} ([data] join_keys) repeat in some rows; a join "
                       "needs one row per key")
    table.attrs["name"] = path.name
    return table


def brought(spec, header: list[str]) -> list[str]:
    """The join table's columns each join brings in: join_columns, or every one but the keys and coordinates."""
    if spec.join_columns:
        return list(spec.join_columns)
    return [c for c in header if c not in spec.join_keys and c not in spec.join_distance]


def join(spec, table: pd.DataFrame | None, rows: pd.DataFrame, where: str) -> pd.DataFrame:
    """`rows` (a table read from file `where`) with each join's columns, and the distance between the two joined
    rows where join_distance names coordinates; `rows` as they are without a join."""
    if table is None:
        return rows
    *shared, last = spec.join_keys
    absent = [c for c in (*shared, *spec.join_on) if c not in rows.columns]
    if absent:
        raise KitError(f"{where}: no column '{absent[0]}' to join {table.attrs['name']} on ([data] join_keys, join_on); "
                       "fix them")
    index = pd.MultiIndex.from_frame(table[[*shared, last]])
    columns = brought_of(spec, table)
    added, points = {}, []
    for k, on in enumerate(spec.join_on):
        wanted = pd.MultiIndex.from_arrays([_like(rows[c], table[c], where, "join_keys") for c in shared]
                                           + [_like(rows[on], table[last], where, "join_on")])
        at = index.get_indexer(wanted)  # (rows,) the joined row, -1 where the table has none
        found = at >= 0
        for c in columns:
            added[f"{c}_{k}"] = _take(table[c], at, found)
        if spec.join_distance:
            points.append(np.stack([_take(table[c], at, found) for c in spec.join_distance], 1))  # (rows, axes)
    if points:
        added["distance"] = np.sqrt(((points[0] - points[1]) ** 2).sum(1)).astype(np.float32)
    return pd.concat([rows, pd.DataFrame(added, index=rows.index)], axis=1)


def _like(values: pd.Series, key: pd.Series, where: str, field: str) -> pd.Series:
    """`values` as the join key's type: integers of any width as int64, else text; KitError where an empty cell
    cannot be an integer key."""
    if pd.api.types.is_integer_dtype(key) and pd.api.types.is_numeric_dtype(values):
        empty = values.isna().to_numpy()
        if empty.any():
            raise KitError(f"{where}: column '{values.name}' ([data] {field}) is empty in {int(empty.sum())} rows, such "
                           f"as row {int(np.flatnonzero(empty)[0]) + 2}, and {key.attrs.get('name', 'the join table')}'s "
                           f"key {key.name} is an integer; fill or drop those rows")
        return values.astype(np.int64)
    return values.astype(str) if not pd.api.types.is_numeric_dtype(key) else values


def _take(column: pd.Series, at: np.ndarray, found: np.ndarray) -> np.ndarray:
    values = column.to_numpy()
    if pd.api.types.is_numeric_dtype(column):
        out = values.astype(np.float32)[np.where(found, at, 0)]
        out[~found] = np.nan
        return out
    return np.where(found, values[np.where(found, at, 0)], None)


def unjoined(spec, table: pd.DataFrame, train: pd.DataFrame, test: pd.DataFrame, where: str,
             warn: Callable[[str], None]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables less the joined columns (`join`'s) that are missing in every test row, with one warning."""
    empty = [c for c in joined_names(spec, table) if test[c].isna().all()]
    if empty and len(test):
        warn(f"{spec.join_table} holds no row for any of {where}'s rows, so {', '.join(empty[:6])} are missing in every "
             f"test row ({len(empty)} such): the model does not read them")
        return train.drop(columns=empty), test.drop(columns=empty)
    return train, test


def joined_names(spec, table: pd.DataFrame) -> list[str]:
    """The columns `join` adds: <column>_<k> of each column a join brings in, and distance."""
    return [f"{c}_{k}" for k in range(len(spec.join_on)) for c in brought_of(spec, table)] + \
        (["distance"] if spec.join_distance else [])


def brought_of(spec, table: pd.DataFrame) -> list[str]:
    """The read join table's columns that each join brings in (its coordinates only where join_columns names them)."""
    return [c for c in table.columns if c not in spec.join_keys and (c not in spec.join_distance or c in spec.join_columns)]


def sources(spec, features: list[str]) -> list[str]:
    """The test table's columns the rows of the model's `features` are built from (predict mode reads these): the
    joins' keys, and where a baseline is read, its group and order and each base_<column>'s column."""
    based = [f.removeprefix("base_") for f in features if f.startswith("base_")] if spec.baseline_key else []
    return list(dict.fromkeys([*spec.join_keys[:-1], *spec.join_on, *spec.id_parts, *based,
                               *(c for c in (spec.baseline_key, spec.baseline_order) if c)]))


def build(spec, data_dir: Path, train: pd.DataFrame | None, test: pd.DataFrame, sample: pd.DataFrame,
          where: tuple[str, str], warn: Callable[[str], None],
          reads: tuple[str, ...] = ()) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """The training rows (None in predict mode) and the test rows as the model reads them: made from the sample's ids
    where [data] id_parts says so, each with its baseline and its joins; joined columns the test rows all lack are
    left out of both; in predict mode, a warning for those the model `reads`."""
    table = read_table(spec, data_dir)
    train_name, test_name = where
    if train is not None:
        train = join(spec, table, baseline(spec, train, train, train_name), train_name)
    test = join(spec, table, baseline(spec, test_rows(spec, sample, test, test_name), test, test_name), test_name)
    if train is not None and table is not None:
        train, test = unjoined(spec, table, train, test, test_name, warn)
    elif table is not None and len(test):  # predict mode: the model was trained on what the join brings
        empty = [c for c in joined_names(spec, table) if c in reads and test[c].isna().all()]
        if empty:
            warn(f"{spec.join_table} holds no row for any of {test_name}'s rows: {', '.join(empty[:6])} are missing in "
                 "every test row, and a model that reads them predicts those rows from its missing-value branches")
    return train, test


def baseline(spec, rows: pd.DataFrame, source: pd.DataFrame, where: str) -> pd.DataFrame:
    """`rows` with their group's first row in `source` (by baseline_order) as base_<column>s,
    <baseline_order>_since_base, and rows_after: how many of the group's rows in `rows` come after it (0: its last;
    osic's grader scores each patient's last three visits: score_mask = "rows_after < 3"), which no model reads;
    `rows` as they are without [data] baseline_key."""
    key, order = spec.baseline_key, spec.baseline_order
    if not key:
        return rows
    for column in (key, order):
        if column not in rows.columns or column not in source.columns:
            raise KitError(f"{where}: no column '{column}' ([data] baseline_key, baseline_order); fix them")
    for table in (rows, source):
        if not pd.api.types.is_numeric_dtype(table[order]):
            text = table[order][pd.to_numeric(table[order], errors="coerce").isna()]
            raise KitError(f"{where}: column '{order}' ([data] baseline_order) holds text such as "
                           f"'{text.iloc[0] if len(text) else table[order].iloc[0]}', not numbers; the gap to each "
                           "group's first row is a difference along it: name a numeric column")
    first = source.sort_values(order, kind="stable").drop_duplicates(key)
    first = first.rename(columns={c: f"base_{c}" for c in first.columns if c != key})
    out = rows.merge(first, on=key, how="left", validate="many_to_one")
    missing = out[f"base_{order}"].isna()
    if missing.any():
        raise KitError(f"{where}: {key} '{out[key][missing].iloc[0]}' has no row of its own to read as its baseline "
                       f"({int(missing.sum())} such rows)")
    out[f"{order}_since_base"] = (out[order] - out[f"base_{order}"]).astype(np.float32)
    out[ROWS_AFTER] = out.groupby(key)[order].rank(method="first", ascending=False).astype(np.int32) - 1
    return out.set_index(rows.index)


def test_rows(spec, sample: pd.DataFrame, test: pd.DataFrame, where: str) -> pd.DataFrame:
    """The test rows: the sample's ids split at their last "_" into [data] id_parts (numbers where they all are; their
    groups' first rows come from the test table: `baseline`); the test table itself without id_parts."""
    if not spec.id_parts:
        return test
    if len(spec.id_parts) != 2:
        raise KitError(f"[data] id_parts names {len(spec.id_parts)} columns; an id splits at its last \"_\" into two")
    ids = sample[spec.id_column].astype(str)
    parts = ids.str.rpartition("_")
    if (parts[1] != "_").any():
        raise KitError(f"{where}: id '{ids[parts[1] != '_'].iloc[0]}' has no \"_\" to split into {', '.join(spec.id_parts)} "
                       "([data] id_parts)")
    rows = pd.DataFrame({spec.id_column: ids.to_numpy(), spec.id_parts[0]: parts[0].to_numpy(),
                         spec.id_parts[1]: parts[2].to_numpy()})
    for column in spec.id_parts:
        number = pd.to_numeric(rows[column], errors="coerce")
        if number.notna().all():
            rows[column] = number.astype(test[column].dtype if column in test.columns else np.float32)
    return rows
