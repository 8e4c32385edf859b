"""Competition metrics on (prediction, target) rows, with optional weights (a score mask is 0/1 weights)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn import metrics as skm

from kit.spec import GREATER_IS_BETTER

THRESHOLDED = ("f1_samples", "f2_samples")  # metrics of label sets, taken at a threshold
VALUE_METRICS = ("mae", "rmse", "pearson")  # what scores one or several values per row
THRESHOLDS = np.round(np.arange(0.02, 0.99, 0.01), 2)  # where an F-score metric's threshold is looked for


def score(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> float:
    """`pred`: (N, C) class probabilities, or (N,) / (N, 1) values; `target`: (N,) class indices or values,
    or (N, C) 0/1 labels (multi-label: `pred` holds each label's probability)."""
    if weight is not None:
        keep = weight > 0
        pred, target, weight = pred[keep], target[keep], weight[keep]
    if target.ndim == 2 and metric in VALUE_METRICS:  # several value columns: the mean of their scores
        return float(np.mean([score(metric, pred[:, k], target[:, k], weight) for k in range(target.shape[1])]))
    if target.ndim == 2:
        return multilabel(metric, pred, target, weight)
    if metric == "log_loss":
        p = np.clip(pred, 1e-15, 1.0)
        p = p / p.sum(1, keepdims=True)
        return float(-np.average(np.log(p[np.arange(len(target)), target]), weights=weight))
    if metric == "accuracy":
        return float(np.average(pred.argmax(1) == target, weights=weight))
    if metric == "auc":
        if len(np.unique(target)) < 2:
            return float("nan")
        if pred.shape[1] == 2:
            return float(skm.roc_auc_score(target, pred[:, 1], sample_weight=weight))
        present = np.unique(target)
        p = pred[:, present] / pred[:, present].sum(1, keepdims=True)
        return float(skm.roc_auc_score(target, p, multi_class="ovr", labels=present, sample_weight=weight))
    if metric == "qwk" and pred.ndim == 2 and pred.shape[1] > 1:  # class probabilities of ordered classes
        return float(skm.cohen_kappa_score(target, pred.argmax(1), weights="quadratic", sample_weight=weight))
    values = pred.reshape(len(target), -1)[:, 0]
    if metric == "qwk":  # values: rounded to the nearest score the targets hold, as a submission writes them
        return float(skm.cohen_kappa_score(np.rint(target).astype(np.int64), whole_scores(values, target.min(), target.max()),
                                           weights="quadratic", sample_weight=weight))
    if metric == "pearson":
        if np.std(values) == 0 or np.std(target) == 0:
            return float("nan")
        return float(np.corrcoef(values, target)[0, 1]) if weight is None else weighted_pearson(values, target, weight)
    if metric == "mae":
        return float(np.average(np.abs(values - target), weights=weight))
    if metric == "rmse":
        return float(np.sqrt(np.average((values - target) ** 2, weights=weight)))
    raise ValueError(f"unknown metric {metric}")


def whole_scores(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Predicted values as the nearest whole scores from `low` to `high` (essay scores 1 to 6)."""
    return np.clip(np.rint(values), np.rint(low), np.rint(high)).astype(np.int64)


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    mx, my = np.average(x, weights=w), np.average(y, weights=w)
    cov = np.average((x - mx) * (y - my), weights=w)
    return float(cov / np.sqrt(np.average((x - mx) ** 2, weights=w) * np.average((y - my) ** 2, weights=w)))


def better(metric: str, a: float, b: float | None) -> bool:
    """Whether score `a` beats `b` (None: nothing yet)."""
    if b is None or np.isnan(b):
        return not np.isnan(a)
    return a > b if GREATER_IS_BETTER[metric] else a < b


def join_rows(parts: list[dict]) -> dict[str, np.ndarray]:
    """Several folds' validation rows ({"pred", "target", optional "weight"}) as one set of rows."""
    return {k: np.concatenate([r[k] for r in parts]) for k in parts[0]}


def multilabel(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> float:
    """auc: the mean of each label's ROC AUC (labels with one class in `target` left out); log_loss: the mean
    binary log loss over every (row, label); f1_samples, f2_samples: the mean F-beta of each row's label set,
    at the threshold that maximises it (`decide`)."""
    truth = target > 0.5
    if metric == "auc":
        scored = [j for j in range(truth.shape[1]) if 0 < truth[:, j].sum() < len(truth)]
        if not scored:
            return float("nan")
        return float(np.mean([skm.roc_auc_score(truth[:, j], pred[:, j], sample_weight=weight) for j in scored]))
    if metric == "log_loss":
        p = np.clip(pred, 1e-15, 1 - 1e-15)
        cells = -(target * np.log(p) + (1 - target) * np.log(1 - p))
        return float(np.average(cells.mean(1), weights=weight))
    if metric in THRESHOLDED:
        return decide(metric, pred, target, weight)[1]
    raise ValueError(f"metric {metric} does not score multi-label predictions")


@dataclass(frozen=True)
class Cut:
    """How label probabilities become a label set: those above `threshold`, and the most probable one where
    none is when `at_least_one` (every training row has a label, as in Planet's tags)."""

    threshold: float = 0.5
    at_least_one: bool = True


def binarize(pred: np.ndarray, cut: Cut) -> np.ndarray:
    """(N, C) probabilities -> (N, C) 0/1 float decisions."""
    out = pred > cut.threshold
    if cut.at_least_one and len(pred):
        empty = ~out.any(1)
        out[empty, pred[empty].argmax(1)] = True
    return out.astype(np.float64)


def fbeta_rows(truth: np.ndarray, decided: np.ndarray, beta: float) -> np.ndarray:
    """Each row's F-beta of its decided label set against its true one (1 where both are empty), as
    sklearn's fbeta_score(average="samples", zero_division=1) averages them; written out because the
    threshold search calls it a hundred times per validation."""
    tp = (truth & decided).sum(1).astype(np.float64)
    fn, fp = truth.sum(1) - tp, decided.sum(1) - tp
    b2 = beta * beta
    denominator = (1 + b2) * tp + b2 * fn + fp
    return np.divide((1 + b2) * tp, denominator, out=np.ones_like(tp), where=denominator > 0)


def decide(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> tuple[Cut, float]:
    """The cut that maximises the F-beta metric on these rows (out-of-fold predictions, or one fold's
    validation rows), and the score there; the highest threshold among equal scores."""
    truth = target > 0.5
    beta = 2.0 if metric == "f2_samples" else 1.0
    at_least_one = bool(truth.any(1).all())
    best, best_score = Cut(0.5, at_least_one), float("nan")
    if not len(truth):
        return best, best_score
    for threshold in THRESHOLDS:
        cut = Cut(float(threshold), at_least_one)
        value = float(np.average(fbeta_rows(truth, binarize(pred, cut) > 0, beta), weights=weight))
        if np.isnan(best_score) or value >= best_score:
            best, best_score = cut, value
    return best, best_score
