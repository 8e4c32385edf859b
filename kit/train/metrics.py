"""Competition metrics on (prediction, target) rows, with optional weights (a score mask is 0/1 weights)."""
from __future__ import annotations

import numpy as np
from sklearn import metrics as skm

from kit.spec import GREATER_IS_BETTER


def score(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> float:
    """`pred`: (N, C) class probabilities, or (N,) / (N, 1) values; `target`: (N,) class indices or values."""
    if weight is not None:
        keep = weight > 0
        pred, target, weight = pred[keep], target[keep], weight[keep]
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
    values = pred.reshape(len(target), -1)[:, 0]
    if metric == "mae":
        return float(np.average(np.abs(values - target), weights=weight))
    if metric == "rmse":
        return float(np.sqrt(np.average((values - target) ** 2, weights=weight)))
    raise ValueError(f"unknown metric {metric}")


def better(metric: str, a: float, b: float | None) -> bool:
    """Whether score `a` beats `b` (None: nothing yet)."""
    if b is None or np.isnan(b):
        return not np.isnan(a)
    return a > b if GREATER_IS_BETTER[metric] else a < b
