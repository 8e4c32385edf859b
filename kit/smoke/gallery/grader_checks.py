"""The checks MLE-bench's graders share, written anew: the CSV reader, the column, length and id checks, and the
check makers several competitions' graders are instances of (mlebench's prepare_for_auroc_metric and
prepare_for_accuracy_metric, log losses, whole labels, label sets, top-k lists, grades, bounded values). Each
competition's own checks and the registry by slug are in kit.smoke.gallery.graders."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError

Check = Callable[[pd.DataFrame, pd.DataFrame], None]


class Invalid(KitError):
    """A submission the competition's grader would refuse."""


def read(path: Path) -> pd.DataFrame:
    """A CSV as mlebench.utils.read_csv reads it, with pandas' defaults (less its float_precision="round_trip",
    which pandas 3 deprecates: the checks compare no float beyond 6 decimals)."""
    return pd.read_csv(path)


def require(ok: bool, why: str) -> None:
    if not ok:
        raise Invalid(why)


def has_columns(sub: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in sub.columns]
    require(not missing, f"no column {', '.join(missing)} (it has {', '.join(map(str, sub.columns))})")


def same_length(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    require(len(sub) == len(sample), f"{len(sub)} rows where the answers have {len(sample)}")


def sorted_ids_equal(sub: pd.DataFrame, sample: pd.DataFrame, id_column: str) -> None:
    """The ids, each side sorted, equal position by position (what `.values != .values` compares)."""
    a, b = (np.sort(frame[id_column].to_numpy()) for frame in (sub, sample))
    require(len(a) == len(b) and bool((a == b).all()), f"its {id_column} values are not the answers'")


def same_id_set(sub: pd.DataFrame, sample: pd.DataFrame, id_column: str) -> None:
    require(set(sub[id_column]) == set(sample[id_column]), f"its set of {id_column} values is not the answers'")


def numeric(sub: pd.DataFrame, column: str) -> pd.Series:
    try:
        return pd.to_numeric(sub[column])
    except (ValueError, TypeError):
        raise Invalid(f"{column} holds values that are not numbers") from None


def in_unit_range(values: pd.Series, column: str) -> None:
    """Every value in [0, 1]; NaN fails too (the graders' `>= 0 & <= 1`, or roc_auc_score refusing NaN)."""
    require(bool(((values >= 0) & (values <= 1)).all()), f"{column} holds values outside [0, 1] (or empty)")


def auroc(id_column: str, target: str) -> Check:
    """mlebench's prepare_for_auroc_metric: both columns, the length, numbers in [0, 1], the sorted ids."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        has_columns(sub, id_column, target)
        same_length(sub, sample)
        in_unit_range(numeric(sub, target), target)
        sorted_ids_equal(sub, sample, id_column)
    return check


def accuracy(id_column: str, target: str) -> Check:
    """mlebench's prepare_for_accuracy_metric: the length, both columns, the sorted ids."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        same_length(sub, sample)
        has_columns(sub, target, id_column)
        sorted_ids_equal(sub, sample, id_column)
    return check


def probability(id_column: str, target: str) -> Check:
    """dogs-vs-cats' and statoil's log loss: both columns, the id set, the length, values in [0, 1]."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        has_columns(sub, id_column, target)
        same_id_set(sub, sample, id_column)
        same_length(sub, sample)
        in_unit_range(numeric(sub, target), target)
    return check


def whole_labels(id_column: str, target: str, first_token: bool = False) -> Check:
    """herbarium's, iwildcam-2019's and inaturalist's: the length, both columns, the sorted ids, and int() of
    each label (inaturalist: of a label string's first token; a float cell fails there)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        same_length(sub, sample)
        has_columns(sub, id_column, target)
        sorted_ids_equal(sub, sample, id_column)
        for value in sub[target]:
            try:
                int(value) if not first_token or isinstance(value, int) else int(value.split()[0])
            except (ValueError, TypeError, AttributeError, IndexError):
                raise Invalid(f"{target} value {value!r} is not a whole-number label") from None
    return check


def label_sets(id_column: str, target: str) -> Check:
    """imet's and plant-pathology-2021's micro F1 over label sets: both columns, the length, the sorted ids,
    and a column of text (`.str.split()`; a column of single numbers reads as int64 and fails there)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        has_columns(sub, id_column, target)
        same_length(sub, sample)
        sorted_ids_equal(sub, sample, id_column)
        cells = sub[target].fillna("")
        require(pd.api.types.is_object_dtype(cells) or pd.api.types.is_string_dtype(cells),
                f"{target} reads as {cells.dtype}, not text: every cell a single number, which .str.split() refuses")
    return check


def top_k(id_column: str, target: str, k: int = 5, exact_columns: bool = False) -> Check:
    """whale's and hotel-id's MAP@5: the columns (whale: exactly these two), the id set, the length; and
    labels a row lists separated by single spaces, at most k counted (an empty token is a wasted guess)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        if exact_columns:
            require(set(sub.columns) == {id_column, target}, f"columns {list(sub.columns)}, not exactly "
                                                              f"{id_column} and {target}")
        has_columns(sub, id_column, target)
        same_id_set(sub, sample, id_column)
        same_length(sub, sample)
        for cell in sub[target].astype(str):
            tokens = cell.split(" ")
            require(all(tokens) and len(tokens) <= k and len(set(tokens)) == len(tokens),
                    f"{target} {cell!r} is not up to {k} distinct labels separated by single spaces")
    return check


def whole_grades(id_column: str, target: str) -> Check:
    """aptos2019's quadratic kappa: the target column, a row at least, the id set; and grades that are whole
    numbers (cohen_kappa_score counts 2.4 as a label of its own, never equal to a grade: valid, worthless)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        has_columns(sub, target)
        require(not sub.empty, "no rows")
        has_columns(sub, id_column)
        same_id_set(sub, sample, id_column)
        values = numeric(sub, target)
        require(bool(np.isfinite(values).all() and (values == np.round(values)).all()),
                f"{target} holds values that are not whole grades")
    return check


def class_probabilities(id_column: str) -> Check:
    """leaf-classification's log loss: exactly the id and the answers' class columns (the sample's), the length,
    each row summing to 1 (within 1e-6), every value in [0, 1], and the sorted ids (an assert: a crash)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        classes = [c for c in sample.columns if c != id_column]
        require(set(sub.columns) == {id_column, *classes}, f"columns are not exactly {id_column} and the "
                                                           f"{len(classes)} class columns")
        same_length(sub, sample)
        require(bool(np.isclose(sub[classes].sum(axis=1), 1, atol=1e-6).all()), "a row's probabilities do not sum to 1")
        require(bool(((sub[classes] >= 0) & (sub[classes] <= 1)).all().all()), "a probability outside [0, 1]")
        sorted_ids_equal(sub, sample, id_column)
    return check


def column_aucs(id_column: str) -> Check:
    """plant-pathology-2020's mean column AUC: the length, exactly the sample's columns, the sorted ids, and numbers
    in every class column (roc_auc_score refuses NaN); no row sum."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        same_length(sub, sample)
        require(set(sub.columns) == set(sample.columns), f"columns {list(sub.columns)}, not {list(sample.columns)}")
        sorted_ids_equal(sub, sample, id_column)
        for column in sample.columns.drop(id_column):
            require(bool(np.isfinite(numeric(sub, column)).all()), f"{column} is empty or infinite in some rows")
    return check


def bounded_values(id_column: str, target: str, low: float, high: float) -> Check:
    """petfinder's RMSE: both columns, every value in [low, high] (NaN fails `between`), the sorted ids (a length
    that differs crashes its comparison)."""
    def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
        has_columns(sub, id_column, target)
        require(bool(numeric(sub, target).between(low, high).all()), f"{target} holds values outside [{low:g}, {high:g}]")
        sorted_ids_equal(sub, sample, id_column)
    return check
