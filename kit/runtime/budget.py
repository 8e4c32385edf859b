"""The time budget: plan folds x epochs to fit, keep a measured reserve for prediction, stop in time.

`time_budget_s` covers the whole notebook, counted from the kernel's start. Training gets what is left after
a reserve for predicting the test set with every fold model and writing the submission; the reserve and the
epoch time are measured as the run goes, and the plan is redone after every epoch.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

KAGGLE_SESSION_S = 12 * 3600
KAGGLE_RERUN_S = 9 * 3600  # code competitions re-run the notebook under a 9 h limit
MARGIN_S = 15 * 60  # Kaggle's limit includes start-up and saving outputs; stay well clear of it
TAIL_S = 8.0  # after prediction: writing the submission, the plots, the notebook's last cells
RESERVE_SAFETY = 1.3  # the prediction estimate is scaled up by this much


def total_budget(time_budget_s: float, environ: dict | None = None) -> float:
    """Seconds the whole notebook may take: the parameter, or Kaggle's session limit less a margin."""
    if time_budget_s > 0:
        return float(time_budget_s)
    env = os.environ if environ is None else environ
    limit = KAGGLE_RERUN_S if env.get("KAGGLE_IS_COMPETITION_RERUN") else KAGGLE_SESSION_S
    return float(limit - MARGIN_S)


@dataclass(frozen=True)
class Plan:
    folds: int  # folds to train in all (the first `folds` of the split)
    epochs: int  # epochs per fold
    cut: str = ""  # what was cut to fit, "" if nothing


def min_epochs(epochs: int) -> int:
    """Fewest epochs per fold worth keeping before whole folds are dropped instead: half the request."""
    return max(1, math.ceil(epochs / 2))


def plan(available_s: float, epoch_s: float, folds: int, folds_done: int, epochs: int) -> Plan:
    """Folds and epochs that fit `available_s` of training at `epoch_s` per epoch, for `folds` folds of
    which `folds_done` are finished (the current fold is the next one and is always kept).

    Epochs per fold are cut first, down to `min_epochs(epochs)`; below that, folds are dropped from the end
    (a few well-trained folds beat many half-trained ones)."""
    left = folds - folds_done
    if epoch_s <= 0 or left * epochs * epoch_s <= available_s:
        return Plan(folds, epochs)
    fit = math.floor(available_s / (left * epoch_s))
    if fit >= min_epochs(epochs):
        return Plan(folds, fit, cut_text(folds, epochs, folds, fit))
    keep = max(1, min(left, math.floor(available_s / (min_epochs(epochs) * epoch_s))))
    fit = max(1, min(epochs, math.floor(available_s / (keep * epoch_s))))
    return Plan(folds_done + keep, fit, cut_text(folds, epochs, folds_done + keep, fit))


def cut_text(folds: int, epochs: int, new_folds: int, new_epochs: int) -> str:
    parts = []
    if new_folds < folds:
        parts.append(f"folds cut from {folds} to {new_folds}")
    if new_epochs < epochs:
        parts.append(f"epochs per fold cut from {epochs} to {new_epochs}")
    return ", ".join(parts)


class Budget:
    """Measured times and the deadline of one notebook run."""

    def __init__(self, started: float, total_s: float, predict_rows: int, clock: Callable[[], float] = time.time,
                 other_models: int = 0, writes_s: float = 0.0):
        self.started, self.total_s, self.predict_rows, self.clock = started, total_s, predict_rows, clock
        self.writes_s = writes_s  # after prediction: the blend files' and the submission's writes (the resource plan's)
        self.other_models = other_models  # fold models that exist or come from elsewhere: predicted too
        self.epoch_s = 0.0  # train + validation, latest measurement
        self.eval_rows_per_s = 0.0  # forward-only throughput, from validation passes
        self.model_s = 1.0  # building and loading one fold model
        self.val_s = 0.0
        self.current: Plan | None = None
        self.announced: Plan | None = None  # the plan last printed

    @property
    def deadline(self) -> float:
        return self.started + self.total_s

    def left(self) -> float:
        return self.deadline - self.clock()

    def predict_s(self, models: int) -> float:
        """Estimated seconds to predict the test set with `models` fold models and write everything."""
        rate = self.eval_rows_per_s or 50.0
        predicting = (models + self.other_models) * (self.model_s + self.predict_rows / rate)
        return RESERVE_SAFETY * (predicting + self.writes_s) + TAIL_S

    def train_deadline(self, models: int) -> float:
        """When training steps must stop so validation, prediction with `models` models and the tail fit."""
        return self.deadline - self.predict_s(models) - RESERVE_SAFETY * self.val_s

    def measure_epoch(self, train_s: float, val_s: float, val_rows: int, save_s: float = 0.0) -> None:
        """An epoch's measured times; `val_rows`: the rows one process validated in `val_s` (prediction runs in one
        process on one GPU); `save_s`: its checkpoint writes (20-60 s a save for a large model on Kaggle)."""
        self.epoch_s = train_s + val_s + save_s
        self.val_s = val_s
        if val_rows and val_s > 0:
            self.eval_rows_per_s = val_rows / val_s

    def estimate_epoch(self, step_s: float, steps: int, train_rows_per_s: float, val_rows: int) -> None:
        """A first estimate from the first steps: validation is forward-only, about 3x faster per row."""
        self.eval_rows_per_s = self.eval_rows_per_s or 3 * train_rows_per_s
        self.val_s = val_rows / self.eval_rows_per_s if self.eval_rows_per_s else 0.0
        self.epoch_s = step_s * steps + self.val_s

    def replan(self, fold: int, folds: int, epochs_done: int, epochs: int) -> Plan:
        """The plan from fold `fold` (0-based, `epochs_done` of its epochs finished) on.

        The current fold's finished epochs count as spent time, so its plan covers what is left of it."""
        models = folds
        for _ in range(2):  # fewer folds need a smaller prediction reserve: plan once more with it
            available = self.deadline - self.predict_s(models) - self.clock() + epochs_done * self.epoch_s
            p = plan(available, self.epoch_s, models, fold, epochs)
            if p.folds == models:
                break
            models = p.folds
        self.current = Plan(p.folds, p.epochs, cut_text(folds, epochs, p.folds, p.epochs))
        return self.current

    def describe(self, p: Plan, folds: int, epochs: int) -> str:
        want = folds * epochs * self.epoch_s
        head = (
            f"time budget: {fmt(self.total_s)} for the notebook, {fmt(self.left())} left, "
            f"{fmt(self.predict_s(p.folds))} reserved for prediction and the submission; "
            f"{self.epoch_s:.2f} s per epoch"
        )
        if not p.cut:
            return f"{head}\nplan: {folds} folds x {epochs} epochs fit (about {fmt(want)})"
        return f"{head}\nplan: {folds} folds x {epochs} epochs would need {fmt(want)}: {p.cut}"


def fmt(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
