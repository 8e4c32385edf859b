"""A table's columns as a model reads them, decided once from the training table (the recipe, which predict mode
reads back) and applied the same way to every table:

- numbers stay numbers, and a missing value stays missing (NaN: the boosters split on it natively; the mlp
  reads 0 after standardisation, and a flag);
- categories ([data] categorical, else booleans, strings whose values repeat, and integers of at most MAX_INT_LEVELS
  values that are codes rather than counts) become codes of the training table's levels; a level only the test
  table has is missing there, with one warning;
- datetimes (strings that parse as dates) become their year, month, day, weekday, hour and days since 1970;
- strings of one length, up to MAX_CODE_LENGTH characters, with too many values to be categories become one
  category per position (a product code's letters);
- any other string column with too many values to be categories (names, free text) is left out, saying so.

Counts and codes (issue 42): an integer column of few values from 0 to MAX_INT_LEVELS (siblings or parents aboard,
passengers) is a count, a number whose order a tree's cut uses; read as a category of 8 levels it gave a booster
partitions to overfit on a small table (Titanic, 916 training rows: held-out accuracy 0.817 as numbers, 0.812 as
categories, the mean over ten splits, XGBoost). Repeating strings: a level seen in one row teaches nothing, so a string
column is a category where at least SHARED of the rows that hold a value share it with another row, up to MAX_LEVELS
values. Titanic's cabin (154 values in 211 of 916 rows, half of those rows sharing theirs with family) and ticket (715
values, a third shared) used to be left out as more values than a tenth of the rows; kept, held-out accuracy went on
to 0.823, where the plain XGBoost call on pandas categories (without name and ticket) scores 0.821. Names (every value
once) are still left out.
"""
from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError

MAX_INT_LEVELS = 10  # an integer column of at most this many values, not all from 0 to this, is a category (spacegroup)
MAX_LEVELS = 1000  # a string column of more values than this is no category
SHARED = 0.2  # nor is one where fewer of the rows holding a value share it with another row (names, free text)
MAX_CODE_LENGTH = 16
DATE_PARTS = ("year", "month", "day", "weekday", "hour", "days")
DATE_SHAPE = re.compile(r"\d{1,4}[-/.:]\d")
UNSAFE = re.compile(r"[^0-9A-Za-z_.\- ]")  # what a feature name may not hold for LightGBM's JSON and XGBoost


@dataclass
class Encoded:
    """A table's features: numbers (NaN where missing) and category codes (-1 where missing or unseen)."""

    numbers: np.ndarray  # (N, numbers) float32
    codes: np.ndarray  # (N, categories) int32
    names: tuple[str, ...]  # the numbers' names, then the categories'
    cardinalities: tuple[int, ...]  # levels of each category

    def frame(self, rows: np.ndarray | None = None, categories: str = "category") -> pd.DataFrame:
        """The rows as a DataFrame for a booster: numbers as float32, categories as pandas categories of fixed
        levels (`categories="category"`: XGBoost, LightGBM) or as int32 codes, -1 for missing (CatBoost)."""
        take = slice(None) if rows is None else rows
        numbers, codes = self.numbers[take], self.codes[take]
        width = numbers.shape[1]
        columns = {name: numbers[:, j] for j, name in enumerate(self.names[:width])}
        for j, (name, levels) in enumerate(zip(self.names[width:], self.cardinalities)):
            columns[name] = (pd.Categorical.from_codes(codes[:, j], categories=range(levels)) if categories == "category"
                             else codes[:, j])
        return pd.DataFrame(columns)

    def nbytes(self) -> int:
        return self.numbers.nbytes + self.codes.nbytes


def as_text(values: pd.Series) -> pd.Series:
    """Values as the text that names a level: 3 and 3.0 alike (integers with a gap are read as floats), True and
    'True' alike; missing stays missing."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        v = values.to_numpy(dtype=np.float64, na_value=np.nan)
        known = ~np.isnan(v)
        whole = known & (v == np.round(v))
        text = np.full(len(v), None, dtype=object)
        text[whole] = v[whole].astype(np.int64).astype(str)
        text[known & ~whole] = v[known & ~whole].astype(str)
        return pd.Series(text, index=values.index, dtype=object)
    return values.astype(str).where(values.notna(), None).astype(object)


def infer(train: pd.DataFrame, test: pd.DataFrame, given: tuple[str, ...], categorical: tuple[str, ...],
          exclude: set[str], train_path: Path, test_path: Path, log: Callable[[str], None]) -> dict:
    """The recipe: each feature column's kind ("number", "category", "datetime" or "code"), the levels of the
    categories and the characters of the codes, from the training table. `given` ([data] features) names the
    columns, else every column but `exclude`; each must be in both tables and hold a value somewhere."""
    columns = list(given) or [c for c in train.columns if c not in exclude]
    missing = [c for c in columns if c not in train.columns]
    if missing:
        raise KitError(f"{train_path.name}: no column '{missing[0]}' of [data] features ({len(missing)} such); fix "
                       "[data] features in the config")
    absent = [c for c in columns if c not in test.columns]
    if absent:
        raise KitError(f"{test_path.name}: no column '{absent[0]}' of the training table ({len(absent)} such: "
                       f"{', '.join(absent[:4])}); the model reads every feature in both tables: leave them out with "
                       "[data] drop_columns, or name the features in [data] features")
    empty = [c for c in columns if train[c].isna().all()]
    if empty:
        raise KitError(f"{train_path.name}: column '{empty[0]}' is empty in every row ({len(empty)} such); leave it "
                       "out with [data] drop_columns")
    unknown = [c for c in categorical if c not in columns]
    if unknown:
        raise KitError(f"{train_path.name}: [data] categorical names '{unknown[0]}', which is not a feature; fix "
                       "[data] categorical or features")
    kinds, levels, left_out = {}, {}, []
    for column in columns:
        values = train[column]
        kind = _kind(values, column in categorical)
        if kind == "":
            left_out.append(f"{column} ({values.nunique():,} values, {shared(values):.0%} of its rows share one)")
            continue
        kinds[column] = kind
        if kind == "category":
            levels[column] = _levels(values)
        elif kind.startswith("code"):
            text = as_text(values).dropna()
            levels[column] = [sorted(text.str[i].unique().tolist()) for i in range(int(kind.split(":")[1]))]
    if left_out:
        log(f"left out     strings of too many values to be categories: {', '.join(left_out[:4])}"
            f"{' ...' if len(left_out) > 4 else ''} in {len(train):,} rows (name them in [data] categorical to keep them)")
    if not kinds:
        raise KitError(f"{train_path.name}: no feature column left to read; name them in [data] features")
    return {"kinds": kinds, "levels": levels}


def _kind(values: pd.Series, categorical: bool) -> str:
    if categorical or pd.api.types.is_bool_dtype(values):
        return "category"
    if pd.api.types.is_datetime64_any_dtype(values):
        return "datetime"
    if pd.api.types.is_numeric_dtype(values):
        known = values.dropna()
        whole = bool((known == np.round(known)).all())
        count = known.min() >= 0 and known.max() <= MAX_INT_LEVELS  # see the module's note: counts keep their order
        return "category" if whole and known.nunique() <= MAX_INT_LEVELS and not count else "number"
    if values.dropna().isin([True, False]).all():  # booleans with gaps are read as objects
        return "category"
    if _dates(values):
        return "datetime"
    levels = values.nunique()
    if levels <= MAX_INT_LEVELS or (levels <= MAX_LEVELS and shared(values) >= SHARED):
        return "category"
    lengths = as_text(values).dropna().str.len()
    if lengths.nunique() == 1 and 2 <= lengths.iloc[0] <= MAX_CODE_LENGTH:
        return f"code:{lengths.iloc[0]}"
    return ""


def shared(values: pd.Series) -> float:
    """The share of the rows holding a value whose value another row holds too."""
    known = values.dropna()
    counts = known.map(known.value_counts())
    return float((counts > 1).mean()) if len(known) else 0.0


def _dates(values: pd.Series) -> bool:
    sample = values.dropna().astype(str).head(200)
    if not len(sample) or not sample.str.contains(DATE_SHAPE).all():
        return False
    return bool(_datetimes(sample).notna().mean() >= 0.95)


def _datetimes(values: pd.Series) -> pd.Series:
    with warnings.catch_warnings():  # pandas' note that it could not infer one format: it parses each value then
        warnings.simplefilter("ignore", UserWarning)
        return pd.to_datetime(values, errors="coerce", utc=True)


def _levels(values: pd.Series) -> list[str]:
    """A category's levels as text, in the order of their values (numbers as numbers)."""
    text = as_text(values).dropna().unique()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return sorted(text, key=float)
    return sorted(text)


def names(recipe: dict) -> tuple[list[str], list[tuple[str, int]]]:
    """(the numbers' names, the categories' (name, levels)) the recipe makes, in the order `encode` puts them."""
    numbers, categories = [], []
    for column, kind in recipe["kinds"].items():
        if kind == "number":
            numbers.append(column)
        elif kind == "datetime":
            numbers += [f"{column}_{part}" for part in DATE_PARTS]
        elif kind == "category":
            categories.append((column, len(recipe["levels"][column])))
        else:
            categories += [(f"{column}_{i}", len(chars)) for i, chars in enumerate(recipe["levels"][column])]
    return numbers, categories


def safe_names(names: list[str]) -> tuple[str, ...]:
    """Feature names LightGBM and XGBoost accept (no JSON punctuation or brackets), each once."""
    out: list[str] = []
    for name in names:
        clean = UNSAFE.sub("_", str(name)) or "feature"
        while clean in out:
            clean += "_"
        out.append(clean)
    return tuple(out)


def encode(table: pd.DataFrame, recipe: dict, where: str = "", warn: Callable[[str], None] | None = None) -> Encoded:
    """The table's features as the recipe reads them; with `warn`, one warning per column for the levels the
    training table never had (they are missing here)."""
    numbers, codes = [], []
    unseen = []
    for column, kind in recipe["kinds"].items():
        values = table[column]
        if kind == "number":
            numbers.append(pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float32, na_value=np.nan))
        elif kind == "datetime":
            numbers += _date_parts(values)
        elif kind == "category":
            text = as_text(values)
            code = pd.Index(recipe["levels"][column]).get_indexer(text).astype(np.int32)  # -1: missing or unseen
            new = text[(code < 0) & text.notna().to_numpy()]
            if len(new):
                unseen.append(f"'{column}' {len(new):,} rows ({', '.join(map(repr, new.unique()[:3]))}"
                              f"{' ...' if new.nunique() > 3 else ''})")
            codes.append(code)
        else:
            text = as_text(values)
            for i, chars in enumerate(recipe["levels"][column]):
                codes.append(pd.Index(chars).get_indexer(text.str[i]).astype(np.int32))
    if unseen and warn is not None:
        warn(f"{where}: categories the training table never has, read as missing: {'; '.join(unseen[:4])}")
    number_names, category_names = names(recipe)
    rows = len(table)
    return Encoded(np.stack(numbers, 1) if numbers else np.zeros((rows, 0), np.float32),
                   np.stack(codes, 1) if codes else np.zeros((rows, 0), np.int32),
                   safe_names(number_names + [n for n, _ in category_names]), tuple(k for _, k in category_names))


def _date_parts(values: pd.Series) -> list[np.ndarray]:
    stamps = _datetimes(values) if not pd.api.types.is_datetime64_any_dtype(values) else pd.to_datetime(values, utc=True)
    parts = [stamps.dt.year, stamps.dt.month, stamps.dt.day, stamps.dt.day_of_week, stamps.dt.hour,
             (stamps - pd.Timestamp("1970-01-01", tz="UTC")).dt.total_seconds() / 86400.0]
    return [p.to_numpy(dtype=np.float32, na_value=np.nan) for p in parts]
