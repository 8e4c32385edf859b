"""train_folds with a toy pipeline: resume, the budget's cuts, and a failing fold after a checkpoint exists."""
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from kit.params import TrainParams
from kit.runtime.hardware import Hardware, plan
from kit.runtime.precision import Precision
from kit.runtime.session import Session
from kit.spec import Spec
from kit.train.cv import make_folds
from kit.train.run import train_folds
from kit.train.tasks import Classification


class ToyPipeline:
    """Linearly separable points; `fail_in_fold` makes that fold's model raise on its first forward."""

    def __init__(self, fail_in_fold=None):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(120, 6, generator=g)
        self.y = (self.x @ torch.randn(6, 3, generator=g)).argmax(1)
        self.fail_in_fold, self.models = fail_in_fold, 0
        self.batch_size = 16

    def split(self, data):
        return make_folds(120, 3, seed=0, classes=self.y.numpy())

    def model(self, data, pretrained=True, fit_rows=None):
        self.models += 1
        if self.fail_in_fold is not None and self.models == self.fail_in_fold + 1:
            return Exploding()
        return nn.Linear(6, 3)

    def task(self, data):
        return Classification("x")

    def batches(self, data, rows, train, batch_size, seed=0, test=False, shard=(0, 1)):
        rows = np.asarray(rows)[shard[0] :: shard[1]]
        return [{"x": self.x[rows[i : i + batch_size]], "target": self.y[rows[i : i + batch_size]]} for i in range(0, len(rows), batch_size)]

    def predict_rows(self, data):
        return 50

    def prior(self, data):
        return np.bincount(self.y.numpy(), minlength=3) / len(self.y)

    def make_batch(self, data, n):
        return {"x": self.x[:n], "target": self.y[:n]}


class Exploding(nn.Linear):
    def __init__(self):
        super().__init__(6, 3)

    def forward(self, x):
        raise RuntimeError("a bug in fold 2")


def session(tmp_path: Path, **params) -> Session:
    hw = Hardware("cpu", cpu_count=2, ram_gb=8)
    p = TrainParams(**{"epochs": 3, "folds": 3, "batch_size": 16, "patience": 0, "warmup_epochs": 0, **params})
    return Session("cnn", p, Spec(slug="toy", metric="log_loss"), hw, plan(hw), Precision("fp32", "cpu"), tmp_path, tmp_path / "out")


@pytest.fixture
def out(tmp_path):
    (tmp_path / "out").mkdir()
    return tmp_path


def test_three_folds_then_a_rerun_reuses_them(out):
    s = session(out, lr=0.05)
    cv = train_folds(s, ToyPipeline(), None)
    assert cv.finished == [0, 1, 2] and np.isfinite(cv.score)
    assert cv.score < cv.baseline and cv.baseline_name == "the class prior"
    assert sorted(p.name for p in s.checkpoint_dir.iterdir()) == [
        "fold0.json", "fold0.pt", "fold1.json", "fold1.pt", "fold2.json", "fold2.pt"]
    stamps = {p.name: p.stat().st_mtime_ns for p in s.checkpoint_dir.iterdir()}
    again = train_folds(s, ToyPipeline(fail_in_fold=0), None)  # would explode if it trained anything
    assert again.finished == [0, 1, 2] and again.score == cv.score
    assert {p.name: p.stat().st_mtime_ns for p in s.checkpoint_dir.iterdir()} == stamps


def test_a_fold_failing_after_a_checkpoint_exists_stops_training_but_not_the_run(out, capsys):
    s = session(out)
    cv = train_folds(s, ToyPipeline(fail_in_fold=1), None)
    assert cv.finished == [0] and cv.error == "RuntimeError: a bug in fold 2"
    assert "fold 2/3 failed (RuntimeError: a bug in fold 2); training stops" in capsys.readouterr().out


def test_a_failure_before_any_checkpoint_is_raised(out):
    with pytest.raises(RuntimeError, match="a bug in fold 2"):
        train_folds(session(out), ToyPipeline(fail_in_fold=0), None)


def test_an_exhausted_budget_trains_one_cut_fold_and_stops(out, capsys):
    s = session(out, epochs=50, time_budget_s=20)
    s.started = time.time() - 15  # 5 s left: less than the prediction reserve
    cv = train_folds(s, ToyPipeline(), None)
    assert cv.finished == [0] and cv.folds[0]["stopped"] == "time budget"
    assert cv.folds[0]["epochs_run"] == 1
    assert "training stops after fold 1/3" in capsys.readouterr().out
