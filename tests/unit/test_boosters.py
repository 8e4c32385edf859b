"""The three booster libraries behind one interface (kit.models.boosters), and a fold of them (kit.train.boosting):
early stopping, a clock that stops them, their own serialized models in kit's checkpoint, the time plan."""
import time
import types

import numpy as np
import pandas as pd
import pytest

from kit.errors import KitError
from kit.models import boosters
from kit.models.boosters import Settings, Task
from kit.pipelines.tabular import BoosterPipeline
from kit.runtime import checkpoint
from kit.runtime.budget import Budget
from kit.runtime.run_folder import FoldFiles
from kit.train import boosting
from kit.train.boosting import BoostConfig, Plan

LIBRARIES = ("xgboost", "lightgbm", "catboost")


def problem(task: Task, n: int = 400, seed: int = 0):
    """Numbers and a category whose sum decides the target; (train, y, val, yv) frames for both kinds of frame."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    kind = rng.integers(-1, 3, n)  # -1: missing
    signal = x[:, 0] + 0.5 * x[:, 1] + (kind == 1) - 0.3
    if task.kind == "binary":
        y = (signal + rng.normal(0, 0.3, n) > 0).astype(np.int64)
    elif task.kind == "multiclass":
        y = np.digitize(signal, [-0.8, 0.3]).astype(np.int64)
    else:
        y = (2 * signal + rng.normal(0, 0.1, n)).astype(np.float32)

    def frame(rows, categories):
        out = pd.DataFrame(x[rows], columns=["a", "b", "noise"])
        out["kind"] = pd.Categorical.from_codes(kind[rows], categories=range(3)) if categories == "category" \
            else kind[rows].astype(np.int32)
        return out

    tr, va = np.arange(300), np.arange(300, n)
    return lambda categories: (frame(tr, categories), y[tr], frame(va, categories), y[va])


@pytest.mark.parametrize("name", LIBRARIES)
@pytest.mark.parametrize("task", [Task("binary"), Task("multiclass", classes=3), Task("regression")],
                         ids=["binary", "multiclass", "regression"])
def test_each_library_learns_stops_early_and_comes_back_from_its_own_bytes(name, task):
    booster = boosters.create(name, task, Settings(learning_rate=0.3, early_stopping_rounds=10))
    x, y, xv, yv = problem(task)(booster.categories)
    booster.fit(x, y, xv, yv, 500, lambda done: False)
    assert 0 < booster.best <= booster.rounds < 500  # early stopping ended it, with every round kept
    assert len(booster.curves.valid) == booster.rounds
    pred = booster.predict(xv)
    assert pred.shape == ((len(yv), 3) if task.kind == "multiclass" else (len(yv),))
    if task.kind == "regression":
        assert np.corrcoef(pred, yv)[0, 1] > 0.9
    else:
        assert ((pred.argmax(1) if pred.ndim == 2 else pred > 0.5) == yv).mean() > 0.8
    again = boosters.restore(checkpoint_round_trip(booster.state()), Settings())
    assert np.allclose(again.predict(xv), pred, atol=1e-6)
    assert not np.allclose(booster.predict(xv, 1), pred)  # an earlier round predicts otherwise
    shares = booster.importance(tuple(x.columns))
    assert sum(shares.values()) == pytest.approx(1.0) and shares["a"] > shares["noise"]


def checkpoint_round_trip(state: dict) -> dict:
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("name", ["xgboost", "lightgbm"])  # CatBoost takes no callback: its rounds are planned
def test_the_clock_stops_each_library_where_it_says(name):
    booster = boosters.create(name, Task("regression"), Settings(early_stopping_rounds=0))
    x, y, xv, yv = problem(Task("regression"))(booster.categories)
    booster.fit(x, y, xv, yv, 1000, lambda done: done >= 7)
    assert booster.rounds == 7 and booster.best == 7


def test_the_plan_measures_the_rate_and_cuts_the_rounds_to_the_time_left():
    now = [100.0]
    plan = Plan(10_000, deadline=110.0, clock=lambda: now[0])
    for done in range(1, 200):
        now[0] += 0.01  # 100 rounds a second
        if plan(done):
            break
    assert plan.rate == pytest.approx(100.0) and plan.fits() == pytest.approx(1000, abs=2)
    assert 990 <= plan.cap <= 1010 and not plan.stopped  # not yet
    while not plan(done):
        done += 1
        now[0] += 0.01
    assert plan.stopped and done == plan.cap and now[0] <= 110.0 + 0.02


def test_a_fold_has_its_share_of_the_time_left_and_none_once_it_is_spent():
    budget = Budget(started=time.time(), total_s=100.0, predict_rows=0)
    first = boosting.fold_deadline(budget, (0, 4), time.time()) - time.time()
    assert 100 / 4 - 12 < first < 100 / 4  # a quarter of what the prediction reserve leaves
    late = Budget(started=time.time() - 99.0, total_s=100.0, predict_rows=0)
    result = boosting.fit([], None, [], None, [], None, None, BoostConfig(10, 0, "rmse"), None, late, (1, 2))
    assert result.best_epoch == 0 and result.stopped == "time budget"


def test_a_fold_of_boosters_writes_the_loops_checkpoint_with_their_models_and_a_curve(tmp_path):
    task = Task("binary")
    made = [boosters.create("xgboost", task, Settings(learning_rate=0.3, early_stopping_rounds=10))]
    x, y, xv, yv = problem(task)("category")
    files = FoldFiles(best=tmp_path / "fold0.pt", last=tmp_path / "fold0.last.pt", stamp={"format": 3})
    lines = []
    result = boosting.fit(made, x, [y], xv, [yv], lambda p: np.stack([1 - p[0], p[0]], 1), yv,
                          BoostConfig(500, 10, "accuracy"), files, log=lines.append, desc="fold 1/1")
    saved = checkpoint.load(files.meta)
    assert set(checkpoint.load(files.best)) == {"model"}  # the models apart: prediction reads the rest without them
    assert saved["epoch"] == result.best_epoch == made[0].best and saved["kit"] == {"format": 3}
    assert saved["rows"]["pred"].shape == (len(yv), 2) and saved["score"] == result.best_score > 0.8
    assert result.unit == "round" and result.stopped.startswith("early stop: no better logloss for 10 rounds")
    assert 2 <= len(result.history) <= boosting.CURVE_POINTS and result.history[-1]["epoch"] == result.epochs_run
    assert {"train_loss", "val_loss", "accuracy"} <= set(result.history[0])
    assert set(saved["importance"]) == set(x.columns)
    assert lines[-1].startswith(f"fold 1/1: {result.best_epoch} of {result.epochs_run} rounds kept")


def test_a_booster_that_takes_no_callback_is_timed_first_then_trained_for_the_rounds_that_fit(tmp_path, monkeypatch):
    """CatBoost takes no callback: a probe of a few rounds measures it, and the fit gets the rounds the fold's
    share fits (its GPU path, which is the CPU's)."""
    task = Task("regression")
    booster = boosters.create("catboost", task, Settings(learning_rate=0.05, early_stopping_rounds=0))
    assert not booster.stoppable
    x, y, xv, yv = problem(task)(booster.categories)
    budget = Budget(started=time.time(), total_s=12.0, predict_rows=0)
    lines = []
    result = boosting.fit([booster], x, [y], xv, [yv], lambda p: np.stack(p, 1), yv, BoostConfig(10**7, 0, "rmse"),
                          FoldFiles(tmp_path / "f.pt", tmp_path / "f.last.pt"), budget, (0, 1), lines.append, "fold 1/1")
    assert result.stopped == boosting.SHARE and 20 < booster.rounds < 10**7
    assert "rounds cut from 10,000,000 to" in lines[1]
    assert budget.left() > 0  # it stopped within the budget


def test_a_booster_library_missing_or_too_old_is_one_line(monkeypatch):
    def missing(name):
        raise ImportError(name)

    monkeypatch.setattr(boosters.importlib, "import_module", missing)
    with pytest.raises(KitError, match=r"^model_name 'xgboost' needs the xgboost package, which this Python lacks; pip "
                                       r"install xgboost-cpu \(Kaggle's image has it\)$"):
        boosters.library("xgboost")
    monkeypatch.setattr(boosters.importlib, "import_module", lambda name: types.SimpleNamespace(__version__="1.7.6"))
    with pytest.raises(KitError, match=r"^xgboost 1.7.6 is older than kit's tabular template supports \(xgboost>=2.0: "):
        boosters.library("xgboost")


class SlowToStart:
    """A booster that takes no callback and pays `start_s` at every fit (CatBoost moving and quantizing the data for
    the GPU) before `round_s` a round, on the fake clock `now`."""

    stoppable = False

    def __init__(self, now: list, start_s: float, round_s: float):
        self.now, self.start_s, self.round_s, self.fits = now, start_s, round_s, []

    def fit(self, x, y, xv, yv, rounds, clock):
        self.now[0] += self.start_s + rounds * self.round_s
        self.fits.append(rounds)


def test_a_booster_that_takes_no_callback_is_planned_on_its_rounds_time_net_of_its_start_up():
    """30 s of start-up and 0.1 s a round: 10 rounds a second. One probe of 20 rounds timed whole took it for 0.6
    (20 rounds in 32 s) and planned a sixteenth of the rounds that fit."""
    now = [1000.0]
    booster = SlowToStart(now, start_s=30.0, round_s=0.1)
    plan = boosting.probed(booster, None, None, None, None, 10**6, deadline=1000.0 + 3600.0, clock=lambda: now[0])
    assert booster.fits == list(boosting.PROBE_ROUNDS)
    assert plan.rate == pytest.approx(10.0)
    left = 1000.0 + 3600.0 - now[0]
    assert plan.cap == int(boosting.PROBED_SHARE * 10.0 * left) and plan.stopped


def test_quick_rounds_whose_difference_is_noise_are_planned_on_the_probes_whole_time():
    now = [0.0]
    booster = SlowToStart(now, start_s=2.0, round_s=0.001)  # 20 rounds between the probes take 0.02 s
    plan = boosting.probed(booster, None, None, None, None, 500, deadline=10**6, clock=lambda: now[0])
    assert plan.rate == pytest.approx(boosting.PROBE_ROUNDS[1] / (2.0 + 0.001 * boosting.PROBE_ROUNDS[1]))
    assert plan.cap == 500 and not plan.stopped


@pytest.mark.parametrize("name, loss", [("xgboost", "logloss"), ("lightgbm", "binary_logloss"), ("catboost", "Logloss")])
def test_boosters_of_an_auc_competition_stop_on_the_loss(name, loss):
    """Issue 42: early stopping on the AUC of a small validation fold kept its first maximum, which comes by chance and
    early (breast cancer's folds kept rounds 1, 11, 25, 27 and 217); the loss breaks those ties."""
    spec = types.SimpleNamespace(metric="auc")
    pipe = BoosterPipeline(types.SimpleNamespace(params=None, spec=spec))
    task = pipe.task(types.SimpleNamespace(multilabel=False, classification=True, outputs=2))
    booster = boosters.create(name, task, Settings(learning_rate=0.3, early_stopping_rounds=10))
    x, y, xv, yv = problem(task)(booster.categories)
    booster.fit(x, y, xv, yv, 500, lambda done: False)
    assert booster.curves.metric == loss and booster.best < booster.rounds
    old = {**booster.state(), "task": {"kind": "binary", "classes": 2, "l1": False, "auc": True}}  # a run of before
    assert np.allclose(boosters.restore(old, Settings()).predict(xv), booster.predict(xv))
