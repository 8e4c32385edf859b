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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.spec import metrics_where, top_k
from kit.train.metrics import LABEL_SETS, VALUE_METRICS, likeliest, ranked, whole_scores

# views of kit.spec.METRICS: one-hot columns scored by these are written as class probabilities
PROBABILITY_METRICS = tuple(sorted(metrics_where(family="probability", multilabel=True)))
MULTI_METRICS = (*PROBABILITY_METRICS, *LABEL_SETS)  # what scores a multi-label target
BINARY_METRICS = metrics_where(family="probability")  # one column scored by these: the positive class's probability


@dataclass(frozen=True)
class Target:
    kind: str  # a key of KINDS, whose record says what the kind asks (its outputs, columns, submission check, blend)
    columns: tuple[str, ...]  # the submission's target columns
    # class values in model-output order; "ordinal": the whole scores; "value(s)": empty; "multi": the training
    # columns it learns (bias_auc: the target column and the identity columns)
    classes: tuple[Any, ...] = ()
    top: int = 1  # "label": how many labels a row lists, best first (map@k)
    limits: tuple[tuple[float, float], ...] = ()  # "value(s)": each column's [low, high] its predictions are clipped to

    @property
    def record(self) -> Kind:
        return KINDS[self.kind]

    @property
    def outputs(self) -> int:
        if self.record.one_output:
            return 1
        return len(self.classes) if self.classes else len(self.columns)

    @property
    def classification(self) -> bool:
        """One class per row (a class index per row, softmax outputs)."""
        return self.record.classification

    @property
    def by_column(self) -> bool:
        """The training table holds one column per output (labels, one-hot classes, or values)."""
        return self.record.by_column

    @property
    def sources(self) -> tuple[str, ...]:
        """by_column: the training table's columns the targets are read from."""
        return tuple(self.classes) if self.kind == "multi" else self.columns

    @property
    def multilabel(self) -> bool:
        """Any number of labels per row (a 0/1 vector per row, sigmoid outputs)."""
        return self.record.multilabel


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


def encode(target: Target, labels: pd.Series | pd.DataFrame) -> np.ndarray:
    """Class indices (int64) for classification, float32 values for regression, (rows, labels) float32 0/1
    (or probabilities) for multi-label: `labels` is then the label columns ("multi", "onehot") or the tags column.
    An empty identity cell (bias_auc) is 0, as the grader reads it."""
    if target.kind == "onehot":
        return labels[list(target.columns)].to_numpy(dtype=np.float64).argmax(1).astype(np.int64)
    if target.by_column:
        return labels[list(target.sources)].fillna(0.0).to_numpy(dtype=np.float32)
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


def clip(target: Target, values: np.ndarray) -> np.ndarray:
    """(N, K) values within each column's limits (as they are where the target has none)."""
    if not target.limits:
        return values
    low, high = np.array(target.limits, dtype=np.float64).T
    return np.clip(values, low, high)


def to_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Model predictions (N, outputs): probabilities (a "label" target's may keep each row's likeliest classes:
    kit.train.topk), values in target units, or (multi-label under a metric of label sets) 0/1 decisions ->
    submission columns, as the target's kind writes them."""
    return target.record.to_columns(target, pred)


def tag_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The tags whose decision is 1, space-separated."""
    names = np.asarray(target.classes, dtype=object)
    return {target.columns[0]: np.array([" ".join(names[row > 0.5]) for row in pred], dtype=object)}


def distribution_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Class probabilities, rows summing to 1 in float64 (float32 softmax rows miss by 1e-6)."""
    pred = np.asarray(pred, dtype=np.float64)
    pred = pred / pred.sum(1, keepdims=True)
    return {c: pred[:, i] for i, c in enumerate(target.columns)}


def output_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Each output as its column (per-label probabilities or decisions)."""
    return {c: pred[:, i] for i, c in enumerate(target.columns)}


def value_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Each column's value within its limits."""
    values = clip(target, pred)
    return {c: values[:, i] for i, c in enumerate(target.columns)}


def ordinal_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The nearest whole score the training scores span."""
    return {target.columns[0]: whole_scores(pred[:, 0], target.classes[0], target.classes[-1])}


def binary_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The second (sorted) class's probability."""
    return {target.columns[0]: pred[:, 1]}


def label_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The likeliest class, or the `top` likeliest space-separated, best first."""
    names = np.asarray([str(c) for c in target.classes], dtype=object)
    if target.top == 1:
        return {target.columns[0]: np.asarray(target.classes, dtype=object)[likeliest(pred)]}
    return {target.columns[0]: np.array([" ".join(row) for row in names[ranked(pred, target.top)]], dtype=object)}


def value_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """One value within its limits."""
    return {target.columns[0]: clip(target, pred[:, :1])[:, 0]}


@dataclass(frozen=True)
class Kind:
    """One kind of target: what kit asks of a target by its kind, read from this one record. The mask kinds are
    made by kit.pipelines.segmentation_data; their submission checks live in the mask rooms, named by dotted
    path so that no other template imports them."""

    name: str
    to_columns: Callable[[Target, np.ndarray], dict[str, np.ndarray]]  # predictions -> the submission's columns
    # what kit.pipelines.base.validate checks of the submission's columns: "names" (classes, or tags), "distribution"
    # (in [0, 1], rows summing to 1), "probability" (in [0, 1]), "numbers" (finite), or a mask kind's "module:function"
    # of (cells, the sample's cells, output folder or None)
    check: str
    one_output: bool = False  # one output, whatever its classes (a value; an ordinal's regressed score)
    classification: bool = False  # one class per row: blends average its rows as distributions
    by_column: bool = False  # the training table holds one column per output
    multilabel: bool = False  # any number of labels per row
    ranks: bool = False  # blends rank each column where the metric ranks them (a binary or per-label probability)
    masks: bool = False  # segmentation's: masks (or pages) of every test image, not a row of outputs


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("probs", distribution_columns, "distribution", classification=True),
    Kind("onehot", distribution_columns, "distribution", classification=True, by_column=True),
    Kind("binary", binary_column, "probability", classification=True, ranks=True),
    Kind("label", label_column, "names", classification=True),
    Kind("value", value_column, "numbers", one_output=True),
    Kind("ordinal", ordinal_column, "numbers", one_output=True),
    Kind("values", value_columns, "numbers", by_column=True),
    Kind("multi", output_columns, "probability", by_column=True, multilabel=True, ranks=True),
    Kind("tags", tag_columns, "names", multilabel=True),
    Kind("pixels", value_column, "numbers", masks=True),
    Kind("files", value_column, "kit.data.masks:check_submission", masks=True),
    Kind("rle", value_column, "kit.data.rle:check_submission", masks=True),
)}


def prior(target: Target, encoded: np.ndarray, metric: str = "") -> np.ndarray:
    """(outputs,) the prediction that knows only the training labels, the constant `metric` scores best: class
    frequencies (whose likeliest class, or k classes, a label metric writes: the mode), each label's frequency,
    each value column's mean (mae: its median; rmsle: its mean in log space), the most frequent score (qwk)."""
    if target.multilabel:  # each label's frequency
        return encoded.mean(0).astype(np.float64) if len(encoded) else np.full(target.outputs, 0.5)
    if target.kind == "ordinal" and len(encoded):  # the whole score most rows hold
        scores, counts = np.unique(np.rint(encoded), return_counts=True)
        return np.array([scores[counts.argmax()]], np.float64)
    if not target.classification:  # each value column's centre, as the metric measures distance
        values = np.asarray(encoded, np.float64)
        if metric == "mae":
            return np.atleast_1d(np.median(values, axis=0))
        if metric == "rmsle":
            return np.atleast_1d(np.expm1(np.mean(np.log1p(np.maximum(values, 0.0)), axis=0)))
        return np.atleast_1d(np.mean(values, axis=0))
    counts = np.bincount(encoded, minlength=target.outputs).astype(np.float64)
    return counts / counts.sum()


def prior_name(target: Target, metric: str) -> str:
    """What `prior` predicts, in words."""
    if target.multilabel:
        return "each label's frequency"
    if target.kind == "ordinal":
        return "the most frequent score"
    if not target.classification:
        return {"mae": "the training median", "rmsle": "the training mean in log space"}.get(metric, "the training mean")
    return "the class prior"
