"""One fold of gradient-boosted trees: kit.train.loop.fit's counterpart for the boosters, with the same result
(FitResult) and the same fold checkpoint (its boosters' own serialized models in place of weights), so the
fold table, the ensemble, predict mode and the inference kernel are every template's.

Rounds are planned from measured rounds per second against the time budget. A fold gets its share of the
training time the budget leaves (the time left, less the reserve for prediction, over the folds still to
train, so the time early stopping saves goes to the folds after it); a few rounds in, the rounds per second
are measured and the rounds cut to what the share fits, and the booster stops at that round or at the
share's end, whichever comes first. A booster that takes no callback (CatBoost on a GPU) is timed on two
probes of PROBE_ROUNDS rounds first, whose difference is its rounds' time net of its start-up, and then
trained for the rounds that fit. The learning curve is the boosters' stop
metric per round, and the competition's metric at CURVE_POINTS rounds of the fold.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kit.models.boosters import Booster
from kit.runtime import checkpoint
from kit.runtime.budget import Budget, fmt
from kit.runtime.run_folder import FoldFiles
from kit.train import metrics
from kit.train.results import FitResult

WARM_ROUNDS = 3  # rounds before the rate is measured: the first ones build the histograms and caches
MEASURE_S = 0.2  # and at least this long, so that a fast booster's rate is more than noise
# a booster that takes no callback is timed on this many rounds, then on this many: each fit pays the start-up
# (CatBoost moves the data to the GPU and quantizes it first), so the difference is the rounds' own time
PROBE_ROUNDS = (5, 25)
# and planned for this share of what the probe's rate fits in its time: its rounds may slow down as they go
# (CatBoost's 2,000th round took twice its 200th on wine), and it cannot be stopped at the deadline
PROBED_SHARE = 0.6
CURVE_POINTS = 16  # rounds at which the competition's metric is scored for the learning curve
CURVE_ROWS = 5000  # validation rows those scores are taken on (every prediction there is a partial one)
# rows a second a booster predicts until a fold has measured it (the budget's prior is a network's, 50): the
# prediction reserve of the first fold's plan
ROWS_PER_S = 100_000
SHARE = "its share of the time budget"  # why a fold the plan cut stopped


@dataclass(frozen=True)
class BoostConfig:
    rounds: int  # at most, per booster
    early_stopping: int  # rounds without a better validation score; 0 never
    metric: str


class Plan:
    """Asked after every round with the rounds done: measures the rounds per second once the first rounds are
    past, cuts the rounds to what is left of the share, and stops at that round or at the deadline."""

    def __init__(self, rounds: int, deadline: float, clock: Callable[[], float] = time.time):
        self.rounds, self.deadline, self.clock = rounds, deadline, clock
        self.started = clock()
        self.rate = 0.0  # rounds per second, once measured
        self.cap = rounds
        self.warm: tuple[int, float] | None = None
        self.stopped = False  # whether it stopped the booster (else early stopping or the rounds did)

    def __call__(self, done: int) -> bool:
        now = self.clock()
        if self.warm is None and done >= WARM_ROUNDS:
            self.warm = (done, now)
        elif self.warm is not None and not self.rate and now - self.warm[1] >= MEASURE_S:
            self.rate = (done - self.warm[0]) / (now - self.warm[1])
            self.cap = int(min(self.rounds, done + self.rate * max(self.deadline - now, 0.0)))  # inf: no deadline
        stop = done >= self.cap or now >= self.deadline
        self.stopped = stop and done < self.rounds
        return stop

    def fits(self) -> int:
        """The rounds the share fits at the measured rate (all of them if the booster finished before measuring)."""
        if not self.rate:
            return self.rounds
        return int(min(self.rounds, self.rate * max(self.deadline - self.started, 0.0)))


def probed(booster: Booster, train: pd.DataFrame, y: np.ndarray, val: pd.DataFrame, yv: np.ndarray, rounds: int,
           deadline: float, clock: Callable[[], float] = time.time) -> Plan:
    """The plan of a booster that takes no callback, so cannot be asked as it goes: timed on each of PROBE_ROUNDS,
    its rate is the rounds between over the time between (the start-up each fit pays cancels out); where that is
    too short to be more than noise (quick rounds), the longer probe's rounds over its whole time, a rate that can
    only be short. It is planned for PROBED_SHARE of the rounds that rate fits before `deadline`."""
    took = []
    for probe in PROBE_ROUNDS:
        begun = clock()
        booster.fit(train, y, val, yv, probe, Plan(probe, math.inf, clock))
        took.append(clock() - begun)
    (few, many), between = PROBE_ROUNDS, took[1] - took[0]
    plan = Plan(rounds, deadline, clock)
    plan.rate = (many - few) / between if between >= MEASURE_S else many / max(took[1], 1e-9)
    plan.cap = max(1, min(rounds, int(PROBED_SHARE * plan.rate * max(deadline - plan.started, 0.0))))
    plan.stopped = plan.cap < rounds
    return plan


def fold_deadline(budget: Budget | None, fold: tuple[int, int], now: float) -> float:
    """When this fold's boosters must stop: its share of the training time the budget leaves to the folds left."""
    if budget is None:
        return math.inf
    position, folds = fold
    return now + max(budget.train_deadline(folds) - now, 0.0) / max(folds - position, 1)


def fit(boosters: list[Booster], train: pd.DataFrame, ys: list[np.ndarray], val: pd.DataFrame, yvs: list[np.ndarray],
        convert: Callable[[list[np.ndarray]], np.ndarray], target: np.ndarray, cfg: BoostConfig, files: FoldFiles,
        budget: Budget | None = None, fold: tuple[int, int] = (0, 1), log: Callable[[str], None] = print,
        desc: str = "", groups: np.ndarray | None = None, weight: np.ndarray | None = None) -> FitResult:
    """Train each of `boosters` (one per target column) on `train`/`ys`, early-stopped on `val`/`yvs`, within the
    fold's share of the time budget; `convert` turns their validation predictions into the metric's (target is
    the validation rows' truth, `groups` their groups under a grouped metric, `weight` 1 where a row counts in the
    metric and 0 where it does not: a score mask). The fold's checkpoint goes to
    `files.best`; its summary is the result."""
    started = time.time()
    if budget is not None and not budget.eval_rows_per_s:
        budget.eval_rows_per_s = ROWS_PER_S
    deadline = fold_deadline(budget, fold, started)
    if fold[0] > 0 and deadline - started < 1.0:
        return FitResult(stopped="time budget", unit="round")
    if budget is not None and fold[0] == 0:
        folds = f"{fold[1]} folds share" if fold[1] > 1 else "1 fold takes"
        log(f"time budget: {fmt(budget.total_s)} for the notebook, {fmt(budget.left())} left, "
            f"{fmt(budget.predict_s(fold[1]))} reserved for prediction; {folds} the rest")
    plans = []
    for k, booster in enumerate(boosters):
        now = time.time()
        plan = Plan(cfg.rounds, now + (deadline - now) / (len(boosters) - k))
        if not booster.stoppable:  # timed on a few rounds, then trained for the rounds that fit
            plan = probed(booster, train, ys[k], val, yvs[k], cfg.rounds, plan.deadline)
        fitted = time.time()
        booster.fit(train, ys[k], val, yvs[k], plan.cap, plan)
        plans.append(plan)
        if k == 0:
            plan.rate = plan.rate or booster.rounds / max(time.time() - fitted, 1e-9)  # too quick to measure: its own
            fits = plan.fits() if booster.stoppable else plan.cap
            cut = "" if fits >= cfg.rounds else f": rounds cut from {cfg.rounds:,} to {fits:,}"
            where = "the CPU" if booster.device() == "cpu" else booster.device()
            log(f"{desc}: {plan.rate:,.0f} rounds/s on {where}; its share of the time budget, "
                f"{fmt(plan.deadline - plan.started)}, fits {fits:,} rounds{cut}")
    v0 = time.time()
    rows = {"pred": convert([b.predict(val) for b in boosters]), "target": target,
            **({} if groups is None else {"groups": groups}), **({} if weight is None else {"weight": weight})}
    if budget is not None:  # the prediction reserve's rate, from these rows (the loop's measure_epoch plans epochs)
        budget.eval_rows_per_s = len(target) / max(time.time() - v0, 1e-6)
    score = metrics.score(cfg.metric, rows["pred"], target, weight, groups)
    history = curve(boosters, val, convert, target, cfg.metric, groups, weight)
    best, run = max(b.best for b in boosters), max(b.rounds for b in boosters)
    names = tuple(train.columns)
    shares = [b.importance(names) for b in boosters]
    importance = {n: float(np.mean([share[n] for share in shares])) for n in names}
    checkpoint.save({"model": {"boosters": [b.state() for b in boosters]}}, files.best)  # the models, then what is read
    checkpoint.save({"epoch": best, "score": score, "rows": rows, "ema": False, "precision": "fp32", "kit": files.stamp,
                     "importance": importance, "unit": "round"}, files.meta)  # without them (kit.run.ensemble)
    if any(p.stopped for p in plans):  # not "time budget", which ends the training (kit.run.folds): the next fold has its share
        stopped = SHARE
    elif any(b.rounds < cfg.rounds for b in boosters):
        stopped = f"early stop: no better {boosters[0].curves.metric} for {cfg.early_stopping} rounds"
    else:
        stopped = "completed"
    log(f"{desc}: {best:,} of {run:,} rounds kept ({stopped}); {cfg.metric} {score:.4f}, {time.time() - started:.1f} s")
    return FitResult(best_score=score, best_epoch=best if np.isfinite(score) else 0, epochs_run=run,
                     epochs_planned=cfg.rounds, history=history, stopped=stopped, precision="fp32", unit="round")


def curve(boosters: list[Booster], val: pd.DataFrame, convert: Callable[[list[np.ndarray]], np.ndarray],
          target: np.ndarray, metric: str, groups: np.ndarray | None = None,
          weight: np.ndarray | None = None) -> list[dict]:
    """The learning curve: at CURVE_POINTS rounds, the boosters' stop metric on the training and validation
    rows (their mean over the boosters) and the competition's metric on up to CURVE_ROWS validation rows."""
    run = max(b.rounds for b in boosters)
    points = np.unique(np.linspace(1, run, min(CURVE_POINTS, run)).round().astype(int))
    take = np.linspace(0, len(val) - 1, min(CURVE_ROWS, len(val))).round().astype(int)
    sub = val.iloc[take]
    records = []
    for r in points:
        pred = convert([b.predict(sub, int(r)) for b in boosters])
        records.append({"epoch": int(r), "train_loss": float(np.mean([at(b.curves.train, r) for b in boosters])),
                        "val_loss": float(np.mean([at(b.curves.valid, r) for b in boosters])),
                        metric: metrics.score(metric, pred, target[take], None if weight is None else weight[take],
                                              None if groups is None else groups[take])})
    return records


def at(values: list[float], rounds: int) -> float:
    """A per-round curve's value after `rounds` (its last, for a booster that stopped before)."""
    return values[min(rounds, len(values)) - 1] if values else float("nan")
