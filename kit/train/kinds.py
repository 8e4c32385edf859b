"""A target and its kind: `Target` (what the sample submission asks for), and `KINDS`, one `Kind` record per kind of
target, which every question about a kind reads: its outputs, how training labels become what the model learns,
how predictions become the submission's columns and what is checked of them, the prior, its blend rule. A
template's own kinds are registered from its own rooms (`register`: segmentation's masks, kit.train.mask_kinds).
The kinds themselves are described where they are inferred (kit.train.targets)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.metric_records import absolute
from kit.train.metrics import likeliest, ranked, whole_scores


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
        if self.kind not in KINDS:  # a template's own kind, whose rooms this process has not imported
            raise KitError(f"target kind '{self.kind}' is not registered (known: {', '.join(KINDS)}); its template's rooms "
                           "register it (kit.train.kinds.register)")
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
        return tuple(self.classes) if self.record.learns_classes else self.columns

    @property
    def multilabel(self) -> bool:
        """Any number of labels per row (a 0/1 vector per row, sigmoid outputs)."""
        return self.record.multilabel


def encode(target: Target, labels: pd.Series | pd.DataFrame) -> np.ndarray:
    """Class indices (int64) for classification, float32 values for regression, (rows, labels) float32 0/1
    (or probabilities) for multi-label: `labels` is then the label columns ("multi", "onehot") or the tags column,
    as the target's kind reads them."""
    return target.record.encode(target, labels)


def onehot_codes(target: Target, labels: pd.DataFrame) -> np.ndarray:
    """The class index of each one-hot row."""
    return labels[list(target.columns)].to_numpy(dtype=np.float64).argmax(1).astype(np.int64)


def column_values(target: Target, labels: pd.DataFrame) -> np.ndarray:
    """Each output's training column; an empty identity cell (bias_auc) is 0, as the grader reads it."""
    return labels[list(target.sources)].fillna(0.0).to_numpy(dtype=np.float32)


def tag_rows(target: Target, labels: pd.Series) -> np.ndarray:
    """A 0/1 row of every tag each cell lists."""
    index = {t: i for i, t in enumerate(target.classes)}
    out = np.zeros((len(labels), len(index)), np.float32)
    for row, tags in enumerate(labels.fillna("").astype(str)):
        out[row, [index[t] for t in tags.split()]] = 1.0
    return out


def soft_rows(target: Target, labels: pd.DataFrame) -> np.ndarray:
    """Each row's columns (votes, or any non-negative weights) as a distribution: divided by the row's sum."""
    votes = labels[list(target.columns)].fillna(0.0).to_numpy(dtype=np.float64)
    total = votes.sum(1, keepdims=True)
    return (votes / np.where(total > 0, total, 1.0)).astype(np.float32)


def values(target: Target, labels: pd.Series) -> np.ndarray:
    return labels.to_numpy(dtype=np.float32)


def class_codes(target: Target, labels: pd.Series) -> np.ndarray:
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


def classes_text(t: Target) -> str:
    """Its kind and its classes (the first few)."""
    return f"{t.kind} ({', '.join(map(str, t.classes[:4]))}{' ...' if len(t.classes) > 4 else ''})"


def scores_text(t: Target) -> str:
    return f"scores {t.classes[0]} to {t.classes[-1]}, regressed and rounded"


def value_text(t: Target) -> str:
    return "a value"


def values_text(t: Target) -> str:
    return f"{len(t.columns)} values"


def label_frequency(target: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """Each label's frequency."""
    return encoded.mean(0).astype(np.float64) if len(encoded) else np.full(target.outputs, 0.5)


def value_centre(target: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """Each value column's centre, as the metric measures distance: its median under mae, its mean in log space
    under rmsle, else its mean."""
    values = np.asarray(encoded, np.float64)
    if absolute(metric):  # mae, group_log_mae, laplace
        return np.atleast_1d(np.median(values, axis=0))
    if metric == "rmsle":
        return np.atleast_1d(np.expm1(np.mean(np.log1p(np.maximum(values, 0.0)), axis=0)))
    return np.atleast_1d(np.mean(values, axis=0))


def score_mode(target: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """The whole score most rows hold (a value's centre where there are none)."""
    if not len(encoded):
        return value_centre(target, encoded, metric)
    scores, counts = np.unique(np.rint(encoded), return_counts=True)
    return np.array([scores[counts.argmax()]], np.float64)


def mean_distribution(target: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """The mean of the rows' distributions (uniform where there are none): KL divergence's best constant."""
    if not len(encoded):
        return np.full(target.outputs, 1.0 / target.outputs)
    mean = np.asarray(encoded, np.float64).mean(0)
    return mean / mean.sum()


def soft_text(t: Target) -> str:
    shown = ", ".join(t.columns[:4]) + (" ..." if len(t.columns) > 4 else "")
    return f"soft: a distribution over {len(t.columns)} classes a row ({shown})"


def class_frequency(target: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """Class frequencies (whose likeliest class, or k classes, a label metric writes: the mode)."""
    counts = np.bincount(encoded, minlength=target.outputs).astype(np.float64)
    return counts / counts.sum()


def centre_name(metric: str) -> str:
    if absolute(metric):
        return "the training median"
    return {"rmsle": "the training mean in log space"}.get(metric, "the training mean")


def named(name: str) -> Callable[[str], str]:
    """A prior's name whatever the metric."""
    return lambda metric: name


def prior_alone(t: Target, name: str, known: np.ndarray) -> str:
    return name


def likeliest_text(t: Target, name: str, known: np.ndarray) -> str:
    ranked = [str(t.classes[i]) for i in np.argsort(-known, kind="stable")[: t.top]]
    return f"{name}'s likeliest class{'es' if t.top > 1 else ''}, {' '.join(ranked)}"


def positive_text(t: Target, name: str, known: np.ndarray) -> str:
    return f"{name}, {known[1]:.4g} for {t.classes[1]}"


def value_prior_text(t: Target, name: str, known: np.ndarray) -> str:
    return f"{name}, {known[0]:.4g}"


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
    encode: Callable[[Target, Any], np.ndarray] = values  # training labels -> what the model learns (kit's `encode`)
    describe: Callable[[Target], str] = classes_text  # what it is, for the data step's lines
    # the prediction that knows only the training labels, as `prior` gives it: (target, encoded, metric) -> (outputs,),
    # its name for a metric, and what the fallback's banner says of it (target, name, the prior)
    prior: Callable[[Target, np.ndarray, str], np.ndarray] = value_centre
    prior_name: Callable[[str], str] = centre_name
    prior_text: Callable[[Target, str, np.ndarray], str] = prior_alone
    spaced: bool = False  # a cell holds its labels space-separated, whatever `top` (tags)
    scores: bool = False  # its classes are the whole scores it regresses (qwk's ordinal)
    learns_classes: bool = False  # its training columns are its classes (bias_auc's identities beside the target)
    positive: bool = False  # two classes, the second's probability its column: blends rank that and its complement
    likeliest: bool = False  # one label a row from many classes: rows may keep only their likeliest (kit.train.topk)
    # a melted submission's (birds' Id = recording * 100 + species): (target, the sample) -> the output each sample row
    # holds, of the (sample rows, outputs) predictions, each row its recording's; None: every output is a column
    pick: Callable[[Target, pd.DataFrame], np.ndarray] | None = None
    soft: bool = False  # a distribution a row (votes normalised), learnt by KL divergence on log-softmax


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("probs", distribution_columns, "distribution", classification=True, encode=class_codes,
         prior=class_frequency, prior_name=named("the class prior")),
    Kind("onehot", distribution_columns, "distribution", classification=True, by_column=True, encode=onehot_codes,
         prior=class_frequency, prior_name=named("the class prior")),
    Kind("binary", binary_column, "probability", classification=True, ranks=True, encode=class_codes,
         prior=class_frequency, prior_name=named("the class prior"), prior_text=positive_text, positive=True),
    Kind("label", label_column, "names", classification=True, encode=class_codes, prior=class_frequency,
         prior_name=named("the class prior"), prior_text=likeliest_text, likeliest=True),
    Kind("value", value_column, "numbers", one_output=True, describe=value_text, prior_text=value_prior_text),
    Kind("ordinal", ordinal_column, "numbers", one_output=True, describe=scores_text, prior=score_mode,
         prior_name=named("the most frequent score"), prior_text=value_prior_text, scores=True),
    Kind("values", value_columns, "numbers", by_column=True, encode=column_values, describe=values_text),
    Kind("multi", output_columns, "probability", by_column=True, multilabel=True, ranks=True, encode=column_values,
         prior=label_frequency, prior_name=named("each label's frequency"), learns_classes=True),
    Kind("tags", tag_columns, "names", multilabel=True, encode=tag_rows, prior=label_frequency,
         prior_name=named("each label's frequency"), spaced=True),
    Kind("soft", distribution_columns, "distribution", by_column=True, encode=soft_rows, describe=soft_text,
         prior=mean_distribution, prior_name=named("the training rows' mean distribution"), soft=True),
)}


def register(kind: Kind) -> Kind:
    """Add a template's own kind of target (segmentation's masks: kit.train.mask_kinds), from its own rooms."""
    KINDS[kind.name] = kind
    return kind


def prior(target: Target, encoded: np.ndarray, metric: str = "") -> np.ndarray:
    """(outputs,) the prediction that knows only the training labels, the constant `metric` scores best: class
    frequencies (whose likeliest class, or k classes, a label metric writes: the mode), each label's frequency,
    each value column's mean (mae: its median; rmsle: its mean in log space), the most frequent score (qwk)."""
    return target.record.prior(target, encoded, metric)


def prior_name(target: Target, metric: str) -> str:
    """What `prior` predicts, in words."""
    return target.record.prior_name(metric)
