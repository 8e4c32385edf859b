"""A toy pipeline and session for train_folds: linearly separable points, no images, no notebook."""
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kit.params import TrainParams
from kit.pipelines.base import Pipeline
from kit.runtime.hardware import Hardware, setup
from kit.runtime.session import Session
from kit.spec import Spec
from kit.train.cv import make_folds
from kit.train.objectives import Classification
from kit.train.targets import Target


class ToyData:
    def __init__(self, recipe):
        self.recipe = recipe
        self.target = Target("probs", ("a", "b", "c"), ("a", "b", "c"))


class ToyPipeline(Pipeline):
    """Linearly separable points; `fail_in_fold` makes that fold's model raise on its first forward."""

    def __init__(self, fail_in_fold=None):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(120, 6, generator=g)
        self.y = (self.x @ torch.randn(6, 3, generator=g)).argmax(1)
        self.fail_in_fold, self.models = fail_in_fold, 0

    def load(self):
        return ToyData({"prior": np.bincount(self.y.numpy(), minlength=3) / len(self.y)})

    def show_samples(self, data, n=12):
        return None

    def identity(self, data):
        return "toy points"

    def split(self, data):
        return make_folds(120, 3, seed=0, classes=self.y.numpy())

    def model(self, data, pretrained=True, fit_rows=None):
        self.models += 1
        if self.fail_in_fold is not None and self.models == self.fail_in_fold + 1:
            return Exploding()
        return nn.Linear(6, 3)

    def objective(self, data):
        return Classification("x")

    def batches(self, data, rows, train, batch_size, seed=0, test=False, shard=(0, 1), precision=None, workers=None):
        rows = np.asarray(rows)[shard[0] :: shard[1]]
        return [{"x": self.x[rows[i : i + batch_size]], "target": self.y[rows[i : i + batch_size]]}
                for i in range(0, len(rows), batch_size)]

    def predict_rows(self, data):
        return 50

    def predict(self, model, data, precision, batch_size):
        with torch.no_grad():
            return model(self.x[:50]).softmax(-1).double().numpy()

    def trial_rows(self, data):
        return np.arange(120)


class Exploding(nn.Linear):
    def __init__(self):
        super().__init__(6, 3)

    def forward(self, x):
        raise RuntimeError("a bug in fold 2")


def session(tmp_path: Path, **params) -> Session:
    hw = Hardware("cpu", cpu_count=2, ram_gb=8)
    p = TrainParams(**{"epochs": 3, "folds": 3, "batch_size": 16, "patience": 0, "warmup_epochs": 0, **params})
    return Session("cnn", p, Spec(slug="toy", metric="log_loss"), hw, setup(hw), tmp_path, tmp_path / "out")


def run_folder(out: Path) -> Path:
    """The latest run's folder in output_dir `out` (kit.runtime.runs)."""
    import json

    return out / "checkpoints" / json.loads((out / "checkpoints" / "latest.json").read_text())["run"]


def resume_folder(out: Path) -> Path:
    """Where the latest run's resume states are: in the scratch folder, not the output (kit.train.resume)."""
    from kit.runtime import paths

    return paths.scratch_dir() / "resume" / run_folder(out).name
