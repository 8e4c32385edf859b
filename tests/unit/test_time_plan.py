"""The time plan on a T4: what an epoch costs (its checkpoint writes), how fast one GPU predicts (not the two of
DDP's validation), how long a fold model takes to build, and a learning-rate schedule that never rises when a
plan gives epochs back."""
import time

import pytest
import torch
from test_recipe import fit_toy
from toys import ToyPipeline, session

from kit.run import train_folds
from kit.runtime import checkpoint
from kit.runtime.budget import Budget, Plan
from kit.runtime.collective import Collective


def test_checkpoint_writes_count_in_the_epoch_time(tmp_path, monkeypatch):
    """A large model's save takes 20-60 s on Kaggle's disk: the plan left it out and overran."""
    save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", lambda obj, path: time.sleep(0.3) or save(obj, path))
    budget = Budget(time.time(), total_s=1e6, predict_rows=10)
    result, _, _ = fit_toy(tmp_path, budget=budget, epochs=3)
    assert result.epochs_run == 3 and budget.epoch_s >= 0.3  # the resume state's write, at least


class TwoRanks(Collective):
    """What DDP's loop sees of two ranks holding the same shard, in one process: validation rows gathered twice."""

    world = 2

    def gather(self, obj):
        return [obj, obj]


def test_the_prediction_reserve_uses_one_gpus_rate(tmp_path, monkeypatch):
    """Under DDP validation runs on both GPUs at once; the test set is predicted by one process on one GPU."""
    seen = []
    measure = Budget.measure_epoch
    monkeypatch.setattr(Budget, "measure_epoch",
                        lambda self, train_s, val_s, rows, save_s=0.0: seen.append(rows) or measure(self, train_s, val_s,
                                                                                                      rows, save_s))
    from test_recipe import CPU, batches, toy

    from kit.runtime.run_folder import FoldFiles
    from kit.train.loop import fit
    from kit.train.objectives import Classification
    from kit.train.results import FitConfig, FoldFit

    x, y = toy()
    budget = Budget(time.time(), total_s=1e6, predict_rows=10)
    cfg = FitConfig(epochs=2, lr=0.05, weight_decay=0.0, warmup_epochs=0, patience=0, metric="accuracy")
    fit(FoldFit(torch.nn.Linear(8, 3), Classification("x"), batches(x[:96], y[:96], 16), batches(x[96:], y[96:], 32), cfg, CPU,
        FoldFiles(tmp_path / "b.pt", tmp_path / "l.pt"), log=lambda m: None, budget=budget, collective=TwoRanks()))
    assert seen and all(rows == 32 for rows in seen)  # the 32 validation rows one rank holds, not both ranks' 64


def test_a_fold_models_build_time_is_measured_for_the_prediction_reserve(tmp_path, capsys):
    """Building and loading a large encoder takes 10-30 s; the reserve assumed 1 s a fold model."""
    pipe = ToyPipeline()
    model = pipe.model
    pipe.model = lambda data, pretrained=True, fit_rows=None: time.sleep(1.5) or model(data, pretrained, fit_rows)
    train_folds(session(tmp_path, epochs=2, time_budget_s=3600), pipe, pipe.load())
    reserves = [float(line.split(" left, ")[1].split(" s reserved")[0]) for line in capsys.readouterr().out.splitlines()
                if " s reserved for prediction" in line]
    assert reserves and max(reserves) >= 1.3 * 3 * 1.5 + 8  # three fold models, each built in 1.5 s


class Giving(Budget):
    """A plan that cuts the epochs to 2 first (a few noisy steps timed), then gives them back (6)."""

    def replan(self, fold, folds, epochs_done, epochs):
        self.current = Plan(1, 2 if epochs_done == 0 else 6)
        return self.current


def test_the_learning_rate_never_rises_after_the_warm_up(tmp_path):
    """A first plan that halved the epochs halved the rate by the end of epoch 1; the re-plan that restored
    them raised it again (a jump an optimizer's moments are not ready for)."""
    budget = Giving(time.time(), total_s=1e6, predict_rows=10)
    result, _, _ = fit_toy(tmp_path, budget=budget, epochs=6)
    rates = [r["lr"] for r in result.history]
    assert result.epochs_run == 6 and rates == sorted(rates, reverse=True), rates
    assert rates[0] < 0.05 * 0.9  # the cut plan's decay did happen


@pytest.fixture(autouse=True)
def _out(tmp_path):
    (tmp_path / "out").mkdir(exist_ok=True)
