"""A value and a confidence per row (a metric whose record says `confidence`: osic's Laplace log-likelihood).

The model learns the value alone (the sample's `[data] submission_columns`); the confidence goes into the sample's one
other column, fitted on the folds' out-of-fold residuals: the constant that scores them best under the metric
(kit.train.metrics.confidence: sqrt(2) times their mean absolute error, floored at the grader's 70). One number fitted
on thousands of residuals cannot overfit them, and a per-row confidence learnt by a second model would be fitted on
the same residuals the value's model left. With no out-of-fold rows (the fallback) the training targets' spread
about their prior stands in, kept in the recipe for predict mode."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.metric_records import metric_record
from kit.spec import Spec
from kit.train import metrics
from kit.train.targets import Target


def wanted(spec: Spec) -> bool:
    return metric_record(spec.metric).confidence


def column(spec: Spec, sample: pd.DataFrame, values: list[str], path: Path) -> str:
    """The sample's confidence column: its one column that is neither the id nor a value the model fills."""
    others = [c for c in sample.columns if c != spec.id_column and c not in values]
    if not spec.submission_columns or len(others) != 1:
        raise KitError(f"{path.name}: metric {spec.metric} scores a value and a confidence per row; name the value's column "
                       f"in [data] submission_columns, and leave the sample one other column beside the id for the "
                       f"confidence (it has {', '.join(map(str, others)) or 'none'})")
    return others[0]


def spread(y: np.ndarray, prior: np.ndarray) -> float:
    """The confidence of the prior itself, from the training targets: the fallback's, and predict mode's without oof."""
    return metrics.confidence(np.asarray(y, np.float64).reshape(len(y), -1)[:, 0] - float(np.ravel(prior)[0]))


def cut(pred: np.ndarray, oof: list[dict], recipe: dict, log: Callable[[str], None]) -> np.ndarray:
    """(rows, 2): the ensemble's values and the confidence fitted on the out-of-fold residuals (`oof`, the folds'
    validation rows), else the recipe's spread."""
    value = np.asarray(pred, np.float64).reshape(len(pred), -1)[:, :1]
    if oof:
        joined = metrics.join_rows(oof)
        residual = np.asarray(joined["pred"]).reshape(len(joined["pred"]), -1)[:, 0] - joined["target"]
        if joined.get("weight") is not None:  # the rows the metric scores ([data] score_mask): osic's last visits
            residual = residual[np.asarray(joined["weight"]) > 0]
        sigma = metrics.confidence(residual)
        log(f"confidence     {sigma:.1f} in every row: the one that scores the {len(residual):,} out-of-fold rows best")
    else:
        sigma = recipe["confidence"]
        log(f"confidence     {sigma:.1f} in every row: no out-of-fold rows, so the training targets' spread")
    return np.concatenate([value, np.full((len(value), 1), sigma)], 1)


def frame(sample: pd.DataFrame, target: Target, pred: np.ndarray, confidence_column: str,
          fill: Callable[[pd.DataFrame, Target, np.ndarray], pd.DataFrame]) -> pd.DataFrame:
    """The submission: the value's column filled by `fill` (the template's submission frame), the confidence's
    from `pred`'s last column."""
    sub = fill(sample, target, pred[:, :1])
    sub[confidence_column] = pred[:, 1]
    return sub
