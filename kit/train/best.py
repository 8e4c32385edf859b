"""Which of two validation passes is the better: the metric first, and where it ties, the lower validation loss.

On a small validation set a metric of few distinct values ties often: accuracy on 10 rows moves in steps of 0.1.
GunPoint's 10 held-out sequences scored 1.0 first at epoch 24, which was kept as the best although epoch 30 scored
1.0 too with a third of its validation loss (0.20 against 0.48); early stopping counted from epoch 24, and the fold
predicted with it (0.62 test accuracy, where 1-NN DTW scores 0.907). The loss moves with every row's confidence, so
it breaks such a tie; an epoch better either way is a new best, and patience counts from it. The same rule picks
between the weights and their moving average within an epoch (kit.train.loop).

Elsewhere: the boosters judge their rounds on the loss alone (kit.models.boosters), for a small fold's AUC ties from
round to round as accuracy does from epoch to epoch. The cut searches keep rules of their own for equal scores (the
label sets' highest threshold, kit.train.metrics.decide; the masks' threshold nearest 0.5, then the smaller component,
kit.train.mask_metrics.decide): a cut leaves the loss as it was, so the loss cannot break their ties.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from kit.train import metrics

TIE = 1e-9  # scores this close (relative) are equal: the same rows summed in another order differ by less


@dataclass(frozen=True)
class Judged:
    """One validation pass: its metric and its mean loss."""

    score: float
    loss: float


def verdict(metric: str, new: Judged, best: Judged | None) -> str:
    """Whether `new` beats `best` (None: nothing yet): "metric" where it scores better, "loss" where the scores
    tie and its loss is lower, "" where it does not beat it."""
    if best is None or math.isnan(best.score):
        return "" if math.isnan(new.score) else "metric"
    if math.isclose(new.score, best.score, rel_tol=TIE, abs_tol=1e-12):
        return "loss" if new.loss < best.loss else ""  # a NaN loss on either side breaks no tie
    return "metric" if metrics.better(metric, new.score, best.score) else ""


def rule(metric: str, rows: int = 0) -> str:
    """The rule in words, for the plan's line; `rows`: the validation rows it judges on (0: not said)."""
    on = f" on {rows:,} validation rows" if rows else ""
    return f"the best epoch is judged{on}: the best {metric}, ties broken by the lower validation loss"
