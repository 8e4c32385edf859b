"""What the model predicts and how that becomes submission columns, inferred from the sample submission.

- several target columns: class probabilities, one column per class, in the sample's column order;
- several target columns the training table holds as one-hot 0/1 columns, each row's summing to 1 ("onehot",
  lmsys-chatbot-arena's winner_model_a/_b/winner_tie): the same, one class per row (softmax probabilities,
  whose rows sum to 1 as a grader may demand; each column's AUC is still its class's);
- one column, metric auc, log_loss or weighted_auc, two classes: the probability of the second (sorted) class;
- one column, metric accuracy or macro_f1: the predicted label; map@k: the k likeliest labels, best first,
  space-separated ("label" with `top` k);
- one column, metric mae, rmse, rmsle, pearson or spearman: a value, clipped to `limits` (the training
  targets' range, or [data] target_range);
- one column, metric qwk ("ordinal"): a value regressed on the scores, written rounded to the nearest whole
  score within the training scores' range (what essay- and grade-scoring winners do: a regression keeps the
  scores' order and distance, which quadratic kappa weighs);
- several columns held by the training table, a value metric ("values"): one value per column, each clipped
  to its range (scored by the mean of the columns' scores: MCRMSE under rmse);
- multi-label ("multi"): the training table holds the sample's target columns, as 0/1 (or probabilities);
  the submission holds per-label probabilities, or 0/1 under a metric of label sets;
- multi-label ("tags"): one column of space-separated tags in both, metric f1_samples, f2_samples or
  f1_micro; the submission holds the tags whose probability passes a threshold chosen on the out-of-fold
  predictions;
- metric bias_auc ("multi" whose `classes` are the target column and the identity columns): one probability
  column; the identities are predicted beside it (auxiliary outputs) and mark the subgroups the metric scores.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.metric_records import metrics_where, top_k
from kit.train.kinds import KINDS, Kind, Target, clip, encode, prior, prior_name, register, to_columns
from kit.train.metrics import LABEL_SETS, VALUE_METRICS

# views of kit.metric_records.METRICS: one-hot columns scored by these are written as class probabilities
PROBABILITY_METRICS = tuple(sorted(metrics_where(family="probability", multilabel=True)))
MULTI_METRICS = (*PROBABILITY_METRICS, *LABEL_SETS)  # what scores a multi-label target
SOFT_METRICS = metrics_where(soft=True)  # what scores a distribution a row: the "soft" target (hms' kl_div)
BINARY_METRICS = metrics_where(family="probability")  # one column scored by these: the positive class's probability

__all__ = ["KINDS", "Kind", "Target", "clip", "encode", "prior", "prior_name", "register", "to_columns"]


def infer(metric: str, labels: pd.Series, sample_columns: list[str], where: str,
          target_range: tuple[float, ...] = ()) -> Target:
    """The target of a competition whose training labels are `labels` and whose sample submission has
    `sample_columns` as its target columns. `where` names the labels' file and column in errors;
    `target_range` ([data]) bounds a regression's predictions instead of the training targets' range."""
    labels = labels.dropna()
    if metric in LABEL_SETS:
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
            return Target("value", (column,), limits=limits(metric, [labels], target_range, [where]))
        scores = np.arange(np.rint(labels.min()), np.rint(labels.max()) + 1).astype(int).tolist()
        if len(scores) < 2:
            raise KitError(f"{where}: the scores hold a single value ({scores[0]}); nothing to learn")
        return Target("ordinal", (column,), tuple(scores))
    classes = tuple(sorted(pd.unique(labels).tolist()))
    if metric in BINARY_METRICS:
        if len(classes) != 2:
            raise KitError(
                f"{where}: one submission column '{column}' with metric {metric} means a binary probability, "
                f"but the labels have {len(classes)} classes; list one column per class in the sample submission"
            )
        return Target("binary", (column,), classes)
    if len(classes) < 2:
        raise KitError(f"{where}: the labels hold a single class ({classes[0]!r}); nothing to learn")
    return Target("label", (column,), classes, top=top_k(metric))


def limits(metric: str, columns: list[pd.Series], target_range: tuple[float, ...], wheres: list[str]) -> tuple:
    """Each column's [low, high] its predictions are clipped to; none under spearman (unless `target_range` says),
    a ranking, where clipping would only tie predictions."""
    if metric == "spearman" and not target_range:
        return ()
    return tuple(bounds(metric, values.dropna(), target_range, where) for values, where in zip(columns, wheres))


def bounds(metric: str, values: pd.Series, target_range: tuple[float, ...], where: str) -> tuple[float, float]:
    """[low, high] a regression's predictions are clipped to: `target_range` where given, else the training
    targets' range; never below 0 under rmsle (whose grader refuses a negative prediction)."""
    low, high = target_range or (float(values.min()), float(values.max()))
    if metric == "rmsle":
        if values.min() < 0:
            row = int(np.flatnonzero(values.to_numpy() < 0)[0])
            raise KitError(f"{where}: {values.tolist()[row]!r} (row {values.index[row] + 2}) is negative; metric rmsle "
                           "scores the logs of targets of 0 and above")
        low = max(low, 0.0)
    return float(low), float(high)


def multi(metric: str, table: pd.DataFrame, sample_columns: list[str], target_column: str, where: str,
          identities: tuple[str, ...] = (), target_range: tuple[float, ...] = ()) -> Target | None:
    """The target read from the training `table`'s columns, or None when the labels are one class (or value)
    per row in `target_column`: "onehot" when it holds each of two or more sample columns as one-hot rows
    (under auc or log_loss), "multi" when it holds them otherwise, "values" under a value metric, "tags"
    under a metric of label sets (the labels in `target_column`, space-separated), and bias_auc's target
    (`identities` its identity columns). `where` names the training table in errors."""
    if metric == "bias_auc":
        return identity_target(table, sample_columns, target_column, identities, where)
    held = [c for c in sample_columns if c in table.columns]
    if len(sample_columns) > 1 and 0 < len(held) < len(sample_columns):
        absent = [c for c in sample_columns if c not in table.columns]
        raise KitError(f"{where}: holds the label columns {', '.join(held[:3])} of the sample submission but not "
                       f"'{absent[0]}' ({len(absent)} such columns); every submission column needs its 0/1 training column")
    if len(sample_columns) > 1 and not held and metric in LABEL_SETS:
        raise KitError(f"{where}: the sample submission has {len(sample_columns)} label columns ({', '.join(sample_columns[:3])} "
                       f"...) and this table none of them; under {metric} give it one 0/1 column per label")
    if len(sample_columns) > 1 and len(held) == len(sample_columns) and metric in VALUE_METRICS:
        for column in sample_columns:
            if not pd.api.types.is_numeric_dtype(table[column]):
                raise KitError(f"{where}, column '{column}': metric {metric} needs numeric targets, "
                               f"found {table[column].iloc[0]!r}")
        wheres = [f"{where}, column '{c}'" for c in sample_columns]
        bounded = limits(metric, [table[c] for c in sample_columns], target_range, wheres)
        return Target("values", tuple(sample_columns), limits=bounded)
    if len(sample_columns) > 1 and len(held) == len(sample_columns) and metric in SOFT_METRICS:
        return soft(table, sample_columns, where)
    if len(sample_columns) > 1 and len(held) == len(sample_columns):
        if metric not in MULTI_METRICS:
            raise KitError(f"{where}: {len(sample_columns)} label columns ({', '.join(sample_columns[:3])} ...) with "
                           f"metric {metric}; a multi-label target is scored by {', '.join(MULTI_METRICS)}")
        probabilities(table, sample_columns, where)
        values = table[sample_columns].to_numpy(dtype=np.float64)
        if metric in PROBABILITY_METRICS and np.isin(values, (0.0, 1.0)).all() and (values.sum(1) == 1).all():
            return Target("onehot", tuple(sample_columns), tuple(sample_columns))  # one class per row
        return Target("multi", tuple(sample_columns), tuple(sample_columns))
    if metric not in LABEL_SETS or len(sample_columns) != 1 or target_column not in table.columns:
        return None  # one label per row, or a missing tags column, which the caller names
    tags = sorted({t for row in table[target_column].dropna().astype(str) for t in row.split()})
    if len(tags) < 2:
        raise KitError(f"{where}, column '{target_column}': {len(tags)} distinct tag(s); a multi-label target needs two or more")
    return Target("tags", (sample_columns[0],), tuple(tags))


def soft(table: pd.DataFrame, columns: list[str], where: str) -> Target:
    """The "soft" target: each row's columns (experts' votes) as a distribution; one line naming a negative or empty
    cell, or a row of no votes."""
    for column in columns:
        numbers = pd.to_numeric(table[column], errors="coerce")
        wrong = np.flatnonzero(~(numbers >= 0).to_numpy())
        if len(wrong):
            raise KitError(f"{where}, column '{column}': {table[column].tolist()[wrong[0]]!r} (row {wrong[0] + 2}) is not "
                           f"a vote count of 0 or more ({len(wrong)} such rows)")
    none = np.flatnonzero(table[columns].to_numpy(dtype=np.float64).sum(1) <= 0)
    if len(none):
        raise KitError(f"{where}: row {none[0] + 2} has no votes in {', '.join(columns)} ({len(none)} such rows); a soft "
                       "target divides each row by its votes")
    return Target("soft", tuple(columns), tuple(columns))


def probabilities(table: pd.DataFrame, columns: list[str], where: str, empty: bool = False) -> None:
    """One line naming the first cell of `columns` that is not a probability in [0, 1] (`empty`: or empty)."""
    for column in columns:
        numbers = pd.to_numeric(table[column], errors="coerce")
        wrong = np.flatnonzero(~(numbers.between(0.0, 1.0) | (empty & table[column].isna())).to_numpy())
        if len(wrong):
            raise KitError(f"{where}, column '{column}': {table[column].tolist()[wrong[0]]!r} (row {wrong[0] + 2}) is "
                           f"not a probability in [0, 1] ({len(wrong)} such rows); label columns hold 0 or 1")


def identity_target(table: pd.DataFrame, sample_columns: list[str], target_column: str, identities: tuple[str, ...],
                    where: str) -> Target:
    """bias_auc's target: one probability column in the submission, learnt from `target_column` (0/1, or the
    share of raters who said toxic) together with each identity column (the metric's subgroups, empty = 0)."""
    if len(sample_columns) != 1:
        raise KitError(f"{where}: metric bias_auc scores one probability column, but the sample submission has "
                       f"{len(sample_columns)} ({', '.join(sample_columns[:3])}); name it in [data] submission_columns")
    absent = [c for c in (target_column, *identities) if c not in table.columns]
    if absent:
        raise KitError(f"{where}: no column '{absent[0]}' for metric bias_auc ({len(absent)} such); fix target_column "
                       "or identity_columns in [data]")
    probabilities(table, [target_column], where)
    probabilities(table, list(identities), where, empty=True)
    return Target("multi", (sample_columns[0],), (target_column, *identities))
