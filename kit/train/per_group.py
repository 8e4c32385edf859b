"""A booster per group of rows (`[params] models_by`: champs' eight coupling types), behind the one Booster
interface, so that kit.train.boosting plans, checkpoints and scores it as it does one.

Each group's booster trains on the group's training rows, early-stopped on its validation rows, within an equal share
of what is left of the fold's plan; rows of a group no booster saw (or a group too small to train on) are predicted
at the training rows' median (their mean, or each class's share, where the task predicts those). Why not one model
with the group as a feature: on champs' smoke data a booster per type scored a lower log-MAE out of fold than one
booster reading the type (kit/competitions/champs-scalar-coupling.toml), the types' constants differing by two
orders of magnitude."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict

import numpy as np
import pandas as pd

from kit.models import boosters
from kit.models.boosters import Booster, Curves
from kit.train.boosting import Plan, at

LIBRARY = "per_group"  # the name its state goes by in a fold checkpoint
SMALLEST = 2  # training rows a group needs for a booster of its own


def keys(x: pd.DataFrame, column: str) -> np.ndarray:
    """(rows,) each row's group: a category's code, else the value as text."""
    values = x[column]
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy().astype(str)
    return values.astype(str).to_numpy()


class PerGroup(Booster):
    """One booster for each value of `column`, made by `make`."""

    name = LIBRARY

    def __init__(self, make: Callable[[], Booster], column: str):
        self.make, self.column = make, column
        first = make()
        super().__init__(first.task, first.settings)
        self.categories, self.stoppable, self.kind = first.categories, first.stoppable, first.name
        self.members: dict[str, Booster] = {}
        self.fallback = 0.0

    def fit(self, x, y, xv, yv, rounds, clock) -> None:
        train_keys, valid_keys = keys(x, self.column), keys(xv, self.column)
        self.fallback = prior(self.task, y)
        groups = [g for g, n in zip(*np.unique(train_keys, return_counts=True)) if n >= SMALLEST]
        deadline = getattr(clock, "deadline", None)
        self.members = {}
        for k, g in enumerate(groups):
            rows, held = train_keys == g, valid_keys == g
            if not held.any():  # no validation row of the group in this fold: it stops on its own training rows
                held_x, held_y = x[rows], y[rows]
            else:
                held_x, held_y = xv[held], yv[held]
            member = self.make()
            now = time.time()
            plan = Plan(rounds, now + (deadline - now) / (len(groups) - k)) if deadline is not None else clock
            member.fit(x[rows], y[rows], held_x, held_y, plan.cap if isinstance(plan, Plan) else rounds, plan)
            self.members[g] = member
            if k == 0 and isinstance(clock, Plan) and isinstance(plan, Plan):
                clock.rate = plan.rate
            if isinstance(clock, Plan) and isinstance(plan, Plan):
                clock.stopped = clock.stopped or plan.stopped
        self._settle()

    def _settle(self) -> None:
        members = list(self.members.values())
        self.best = max((m.best for m in members), default=0)
        self.rounds = max((m.rounds for m in members), default=0)
        metric = members[0].curves.metric if members else ""
        self.curves = Curves(metric, *[[float(np.mean([at(getattr(m.curves, side), r) for m in members]))
                                        for r in range(1, self.rounds + 1)] for side in ("train", "valid")])

    def predict(self, x: pd.DataFrame, rounds: int = 0) -> np.ndarray:
        """Each row by its group's booster (at `rounds`, or each booster's best), else at the training rows' prior."""
        found = keys(x, self.column)
        out = None
        for g, member in self.members.items():
            rows = found == g
            if not rows.any():
                continue
            pred = member.predict(x[rows], min(rounds, member.rounds) if rounds else 0)
            if out is None:
                out = np.empty((len(x), *pred.shape[1:]), np.float64)
                out[:] = self.fallback
            out[rows] = pred
        if out is None:  # no row of a group any booster saw
            out = np.empty((len(x), *np.shape(self.fallback)), np.float64)
            out[:] = self.fallback
        return out

    def importance(self, names: tuple[str, ...]) -> dict[str, float]:
        shares = [m.importance(names) for m in self.members.values()]
        return {n: float(np.mean([s[n] for s in shares])) if shares else 0.0 for n in names}

    def state(self) -> dict:
        return {"library": LIBRARY, "kind": self.kind, "task": asdict(self.task), "column": self.column,
                "fallback": self.fallback, "best": self.best,
                "rounds": self.rounds, "members": {g: m.state() for g, m in self.members.items()}}


def prior(task: boosters.Task, y: np.ndarray) -> float | list[float]:
    """What a row of a group no booster saw is predicted: the training rows' median under the absolute error, else
    their mean (a binary probability), or each class's share."""
    if task.kind == "multiclass":
        return (np.bincount(y.astype(np.int64), minlength=task.classes) / max(len(y), 1)).tolist()
    return float(np.median(y)) if task.l1 else float(np.mean(y))


def restore(state: dict, settings: boosters.Settings) -> Booster:
    """A fold's booster from its state: a PerGroup where it was one (kit.models.boosters.restore otherwise)."""
    if state.get("library") != LIBRARY:
        return boosters.restore(state, settings)
    members = {g: boosters.restore(s, settings) for g, s in state["members"].items()}
    task = boosters.Task(**state["task"])
    grouped = PerGroup(lambda: boosters.create(state["kind"], task, settings), state["column"])
    grouped.members, grouped.fallback = members, state["fallback"]
    grouped.best, grouped.rounds = state["best"], state["rounds"]
    return grouped
