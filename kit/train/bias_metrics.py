"""Jigsaw's unintended-bias AUC (jigsaw-unintended-bias-in-toxicity-classification's `bias_auc`), at every
candidate threshold at once: kit.train.metrics chooses the cut on the out-of-fold rows with it (`bias_decide`)."""
from __future__ import annotations

import numpy as np

BIAS_POWER, BIAS_WEIGHT = -5.0, 0.25  # the power mean of each kind of subgroup AUC, and the weight of each part


def bias_auc(pred: np.ndarray, target: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """(T,) Jigsaw's unintended-bias AUC at each threshold, as MLE-bench's grader computes it: predictions
    binarized (toxic at or above the threshold), column 0 of `target` the toxicity and the rest the identity
    columns, each cut at 0.5; 0.25 x the overall AUC + 0.25 x the power mean (p = -5) over the identities of each
    of the subgroup, BPSN and BNSP AUCs. An AUC of 0/1 decisions is (TPR - FPR + 1) / 2, so every threshold
    is counted in one pass. An identity whose rows hold one class (where sklearn's AUC is undefined) is left out."""
    toxic, identities = target[:, 0] >= 0.5, target[:, 1:] >= 0.5
    level = np.searchsorted(thresholds, pred[:, 0], side="right")  # how many thresholds each row reaches

    def auc(rows: np.ndarray) -> np.ndarray:
        positives, negatives = rows & toxic, rows & ~toxic
        if not positives.any() or not negatives.any():
            return np.full(len(thresholds), np.nan)
        tp, fp = (np.cumsum(np.bincount(level[r], minlength=len(thresholds) + 1)[::-1])[::-1][1:] for r in (positives, negatives))
        return (tp / positives.sum() - fp / negatives.sum() + 1.0) / 2.0

    every = np.ones(len(toxic), bool)
    kinds = [[auc(s), auc((~toxic & s) | (toxic & ~s)), auc((toxic & s) | (~toxic & ~s))] for s in identities.T]
    total = BIAS_WEIGHT * auc(every)
    with np.errstate(divide="ignore"):  # an AUC of 0 makes the power mean 0
        for k in range(3):
            values = np.array([aucs[k] for aucs in kinds if not np.isnan(aucs[k]).all()])
            mean = np.mean(values**BIAS_POWER, axis=0) ** (1.0 / BIAS_POWER) if len(values) else np.nan
            total = total + BIAS_WEIGHT * mean
    return total
