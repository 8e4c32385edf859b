"""The threshold search of label-set metrics (F1 and F2 per sample, micro F1), counted once for every candidate
threshold at the same time: each prediction falls between two candidates, so how many of a row's labels (and of its
true ones) pass each threshold is a running count over a histogram of those places. The search it replaces cut
every candidate in turn, an (N, labels) array of float64 decisions each: at iMet's 120,801 out-of-fold rows of
3,474 labels, 3.4 GB and a second or more for each of about 200 candidates, at every validation and again for the
submission. The scores are those `metrics.binarize`, `micro_f1` and `fbeta_rows` give at each threshold."""
from __future__ import annotations

import numpy as np

ROWS = 1024  # rows counted at a time (iMet's: 3.6 million predictions, some 30 MB of places)


def passing(pred: np.ndarray, truth: np.ndarray, thresholds: np.ndarray, labels: np.ndarray | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """(N, T) how many of each row's labels pass each threshold (a prediction above it), and how many of its true
    ones do; `labels`: only these label columns count."""
    n, t = len(pred), len(thresholds)
    every, true = np.zeros((n, t + 1), np.int32), np.zeros((n, t + 1), np.int32)
    cuts = np.asarray(thresholds).astype(pred.dtype)  # compared in the predictions' precision, as `pred > t` is
    for start in range(0, n, ROWS):
        p, y = pred[start : start + ROWS], truth[start : start + ROWS]
        if labels is not None:
            p, y = p[:, labels], y[:, labels]
        place = np.searchsorted(cuts, p, side="left").astype(np.int16)  # thresholds below each prediction
        rows = np.arange(len(p))[:, None] * (t + 1)
        every[start : start + len(p)] = np.bincount((rows + place).ravel(), minlength=len(p) * (t + 1)).reshape(-1, t + 1)
        true[start : start + len(p)] = np.bincount((rows + place)[y].ravel(), minlength=len(p) * (t + 1)).reshape(-1, t + 1)
    # a prediction placed at k passes thresholds 0 .. k-1: the counts from the top down, less the row's place-0 ones
    return (np.cumsum(every[:, ::-1], axis=1)[:, ::-1][:, 1:], np.cumsum(true[:, ::-1], axis=1)[:, ::-1][:, 1:])


def scores(metric: str, pred: np.ndarray, truth: np.ndarray, thresholds: np.ndarray, at_least_one: bool,
           weight: np.ndarray | None = None) -> np.ndarray:
    """(T,) the label-set metric at each threshold: labels above it, and where `at_least_one` the likeliest label of
    a row that has none (micro F1 counts the labels the truth holds only, as the graders binarize)."""
    present = truth.any(0) if metric == "f1_micro" else None
    decided, hits = passing(pred, truth, thresholds, np.flatnonzero(present) if present is not None else None)
    if at_least_one:  # a row with no label above a threshold takes its likeliest, there and above
        likeliest = pred.argmax(1)
        empty = pred[np.arange(len(pred)), likeliest][:, None] <= np.asarray(thresholds).astype(pred.dtype)[None, :]
        counted = present[likeliest] if present is not None else np.ones(len(pred), bool)
        decided = decided + (empty & counted[:, None])
        hits = hits + (empty & (counted & truth[np.arange(len(pred)), likeliest])[:, None])
    w = np.ones(len(pred)) if weight is None else np.asarray(weight, np.float64)
    out = np.empty(len(thresholds))
    if metric == "f1_micro":
        positives = float(w @ truth.sum(1))  # the truth's labels are the present ones
        for j in range(len(thresholds)):
            tp, total = float(w @ hits[:, j]), float(w @ decided[:, j])
            wrong = (positives - tp) + (total - tp)  # false negatives and false positives
            out[j] = 2 * tp / (2 * tp + wrong) if tp + wrong > 0 else 0.0
        return out
    b2 = (2.0 if metric == "f2_samples" else 1.0) ** 2
    positives = truth.sum(1)
    for j in range(len(thresholds)):
        tp = hits[:, j].astype(np.float64)
        denominator = (1 + b2) * tp + b2 * (positives - tp) + (decided[:, j] - tp)
        out[j] = float(np.average(np.divide((1 + b2) * tp, denominator, out=np.ones_like(tp), where=denominator > 0),
                                  weights=weight))
    return out
