"""What the model predicts and how that becomes submission columns, inferred from the sample submission.

- several target columns: class probabilities, one column per class, in the sample's column order;
- one column, metric auc or log_loss, two classes: the probability of the second (sorted) class;
- one column, metric accuracy: the predicted label;
- one column, metric mae or rmse: a value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError

KINDS = ("probs", "binary", "label", "value")


@dataclass(frozen=True)
class Target:
    kind: str
    columns: tuple[str, ...]  # the submission's target columns
    classes: tuple[Any, ...] = ()  # class values in model-output order; empty for "value"

    @property
    def outputs(self) -> int:
        return len(self.classes) if self.classes else 1

    @property
    def classification(self) -> bool:
        return self.kind != "value"


def infer(metric: str, labels: pd.Series, sample_columns: list[str], where: str) -> Target:
    """The target of a competition whose training labels are `labels` and whose sample submission has
    `sample_columns` after the id column. `where` names the labels' file and column in errors."""
    labels = labels.dropna()
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
    if metric in ("mae", "rmse"):
        if not pd.api.types.is_numeric_dtype(labels):
            raise KitError(f"{where}: metric {metric} needs numeric targets, found {labels.iloc[0]!r}")
        return Target("value", (column,))
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


def encode(target: Target, labels: pd.Series) -> np.ndarray:
    """Class indices (int64) for classification, float32 values for regression."""
    if not target.classification:
        return labels.to_numpy(dtype=np.float32)
    codes = pd.Categorical(labels.astype(str), categories=[str(c) for c in target.classes]).codes
    return codes.astype(np.int64)  # every label is a class (infer checked it): no -1 here


def to_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Model predictions (N, outputs): probabilities, or values in target units -> submission columns."""
    if target.kind == "probs":
        return {c: pred[:, i] for i, c in enumerate(target.columns)}
    if target.kind == "binary":
        return {target.columns[0]: pred[:, 1]}
    if target.kind == "label":
        return {target.columns[0]: np.asarray(target.classes, dtype=object)[pred.argmax(1)]}
    return {target.columns[0]: pred[:, 0]}


def prior(target: Target, encoded: np.ndarray) -> np.ndarray:
    """(outputs,) the prediction that knows only the training labels: class frequencies or the mean."""
    if not target.classification:
        return np.array([float(np.mean(encoded))], dtype=np.float64)
    counts = np.bincount(encoded, minlength=target.outputs).astype(np.float64)
    return counts / counts.sum()
