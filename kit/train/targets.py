"""What the model predicts and how that becomes submission columns, inferred from the sample submission.

- several target columns: class probabilities, one column per class, in the sample's column order;
- one column, metric auc or log_loss, two classes: the probability of the second (sorted) class;
- one column, metric accuracy: the predicted label;
- one column, metric mae, rmse or pearson: a value;
- one column, metric qwk ("ordinal"): a value regressed on the scores, written rounded to the nearest whole
  score within the training scores' range (what essay- and grade-scoring winners do: a regression keeps the
  scores' order and distance, which quadratic kappa weighs);
- several columns held by the training table, metric mae, rmse or pearson ("values"): one value per column
  (scored by the mean of the columns' scores: MCRMSE under rmse);
- multi-label ("multi"): the training table holds the sample's target columns, as 0/1 (or probabilities);
  the submission holds per-label probabilities, or 0/1 under an F-score metric;
- multi-label ("tags"): one column of space-separated tags in both, metric f1_samples or f2_samples; the
  submission holds the tags whose probability passes a threshold chosen on the out-of-fold predictions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.train.metrics import THRESHOLDED, VALUE_METRICS, whole_scores

KINDS = ("probs", "binary", "label", "value", "ordinal", "values", "multi", "tags")
MULTI_METRICS = ("auc", "log_loss", *THRESHOLDED)  # what scores a multi-label target


@dataclass(frozen=True)
class Target:
    kind: str
    columns: tuple[str, ...]  # the submission's target columns
    classes: tuple[Any, ...] = ()  # class values in model-output order; "ordinal": the whole scores; "value(s)": empty

    @property
    def outputs(self) -> int:
        if self.kind in ("value", "ordinal"):
            return 1
        return len(self.classes) if self.classes else len(self.columns)

    @property
    def classification(self) -> bool:
        """One class per row (a class index per row, softmax outputs)."""
        return self.kind in ("probs", "binary", "label")

    @property
    def by_column(self) -> bool:
        """The training table holds one column per submission column (labels, or values)."""
        return self.kind in ("multi", "values")

    @property
    def multilabel(self) -> bool:
        """Any number of labels per row (a 0/1 vector per row, sigmoid outputs)."""
        return self.kind in ("multi", "tags")


def infer(metric: str, labels: pd.Series, sample_columns: list[str], where: str) -> Target:
    """The target of a competition whose training labels are `labels` and whose sample submission has
    `sample_columns` after the id column. `where` names the labels' file and column in errors."""
    labels = labels.dropna()
    if metric in THRESHOLDED:
        raise KitError(f"{where}: metric {metric} scores sets of labels, but the sample submission's column "
                       f"'{sample_columns[0]}' holds one label per row; use accuracy, or give each row its labels "
                       "as space-separated tags")
    if len(sample_columns) > 1:
        known = set(sample_columns)
        absent = [v for v in pd.unique(labels) if str(v) not in known]
        if absent:
            row = int(np.flatnonzero(labels.astype(str).to_numpy() == str(absent[0]))[0])
            raise KitError(
                f"{where}: class '{absent[0]}' (row {labels.index[row] + 2}) is not a column of the sample "
                f"submission ({len(absent)} such classes); fix the labels or the [data] names"
            )
        return Target("probs", tuple(sample_columns), tuple(sample_columns))
    column = sample_columns[0]
    if metric in (*VALUE_METRICS, "qwk"):
        if not pd.api.types.is_numeric_dtype(labels):
            raise KitError(f"{where}: metric {metric} needs numeric targets, found {labels.iloc[0]!r}")
        if metric != "qwk":
            return Target("value", (column,))
        scores = np.arange(np.rint(labels.min()), np.rint(labels.max()) + 1).astype(int).tolist()
        if len(scores) < 2:
            raise KitError(f"{where}: the scores hold a single value ({scores[0]}); nothing to learn")
        return Target("ordinal", (column,), tuple(scores))
    classes = tuple(sorted(pd.unique(labels).tolist()))
    if metric in ("auc", "log_loss"):
        if len(classes) != 2:
            raise KitError(
                f"{where}: one submission column '{column}' with metric {metric} means a binary probability, "
                f"but the labels have {len(classes)} classes; list one column per class in the sample submission"
            )
        return Target("binary", (column,), classes)
    if len(classes) < 2:
        raise KitError(f"{where}: the labels hold a single class ({classes[0]!r}); nothing to learn")
    return Target("label", (column,), classes)


def multi(metric: str, table: pd.DataFrame, sample_columns: list[str], target_column: str, where: str) -> Target | None:
    """The multi-label target, or None when the labels are one class (or value) per row: "multi" when the
    training `table` holds every one of two or more sample columns, "tags" under an F-score metric (the
    labels in `target_column`, space-separated). `where` names the training table in errors."""
    held = [c for c in sample_columns if c in table.columns]
    if len(sample_columns) > 1 and 0 < len(held) < len(sample_columns):
        absent = [c for c in sample_columns if c not in table.columns]
        raise KitError(f"{where}: holds the label columns {', '.join(held[:3])} of the sample submission but not "
                       f"'{absent[0]}' ({len(absent)} such columns); every submission column needs its 0/1 training column")
    if len(sample_columns) > 1 and not held and metric in THRESHOLDED:
        raise KitError(f"{where}: the sample submission has {len(sample_columns)} label columns ({', '.join(sample_columns[:3])} "
                       f"...) and this table none of them; under {metric} give it one 0/1 column per label")
    if len(sample_columns) > 1 and len(held) == len(sample_columns) and metric in VALUE_METRICS:
        for column in sample_columns:
            if not pd.api.types.is_numeric_dtype(table[column]):
                raise KitError(f"{where}, column '{column}': metric {metric} needs numeric targets, "
                               f"found {table[column].iloc[0]!r}")
        return Target("values", tuple(sample_columns))
    if len(sample_columns) > 1 and len(held) == len(sample_columns):
        if metric not in MULTI_METRICS:
            raise KitError(f"{where}: {len(sample_columns)} label columns ({', '.join(sample_columns[:3])} ...) with "
                           f"metric {metric}; a multi-label target is scored by {', '.join(MULTI_METRICS)}")
        values = table[sample_columns]
        for column in sample_columns:
            numbers = pd.to_numeric(values[column], errors="coerce")
            wrong = np.flatnonzero(~numbers.between(0.0, 1.0).to_numpy())
            if len(wrong):
                raise KitError(f"{where}, column '{column}': {values[column].tolist()[wrong[0]]!r} (row {wrong[0] + 2}) is "
                               f"not a probability in [0, 1] ({len(wrong)} such rows); label columns hold 0 or 1")
        return Target("multi", tuple(sample_columns), tuple(sample_columns))
    if metric not in THRESHOLDED or len(sample_columns) != 1 or target_column not in table.columns:
        return None  # one label per row, or a missing tags column, which the caller names
    tags = sorted({t for row in table[target_column].dropna().astype(str) for t in row.split()})
    if len(tags) < 2:
        raise KitError(f"{where}, column '{target_column}': {len(tags)} distinct tag(s); a multi-label target needs two or more")
    return Target("tags", (sample_columns[0],), tuple(tags))


def encode(target: Target, labels: pd.Series | pd.DataFrame) -> np.ndarray:
    """Class indices (int64) for classification, float32 values for regression, (rows, labels) float32 0/1
    (or probabilities) for multi-label: `labels` is then the label columns ("multi") or the tags column."""
    if target.by_column:
        return labels[list(target.columns)].to_numpy(dtype=np.float32)
    if target.kind == "tags":
        index = {t: i for i, t in enumerate(target.classes)}
        out = np.zeros((len(labels), len(index)), np.float32)
        for row, tags in enumerate(labels.fillna("").astype(str)):
            out[row, [index[t] for t in tags.split()]] = 1.0
        return out
    if not target.classification:
        return labels.to_numpy(dtype=np.float32)
    codes = pd.Categorical(labels.astype(str), categories=[str(c) for c in target.classes]).codes
    return codes.astype(np.int64)  # every label is a class (infer checked it): no -1 here


def to_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Model predictions (N, outputs): probabilities, values in target units, or (multi-label under an F-score)
    0/1 decisions -> submission columns."""
    if target.kind == "tags":
        names = np.asarray(target.classes, dtype=object)
        return {target.columns[0]: np.array([" ".join(names[row > 0.5]) for row in pred], dtype=object)}
    if target.kind in ("probs", "multi", "values"):
        return {c: pred[:, i] for i, c in enumerate(target.columns)}
    if target.kind == "ordinal":  # the nearest whole score the training scores span
        return {target.columns[0]: whole_scores(pred[:, 0], target.classes[0], target.classes[-1])}
    if target.kind == "binary":
        return {target.columns[0]: pred[:, 1]}
    if target.kind == "label":
        return {target.columns[0]: np.asarray(target.classes, dtype=object)[pred.argmax(1)]}
    return {target.columns[0]: pred[:, 0]}


def prior(target: Target, encoded: np.ndarray) -> np.ndarray:
    """(outputs,) the prediction that knows only the training labels: class frequencies or the mean."""
    if target.multilabel:  # each label's frequency
        return encoded.mean(0).astype(np.float64) if len(encoded) else np.full(target.outputs, 0.5)
    if not target.classification:  # the mean of each value column
        return np.atleast_1d(np.mean(encoded, axis=0)).astype(np.float64)
    counts = np.bincount(encoded, minlength=target.outputs).astype(np.float64)
    return counts / counts.sum()
