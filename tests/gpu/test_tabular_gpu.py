"""The boosters on a CUDA GPU: XGBoost with device="cuda" and CatBoost with task_type="GPU" train a fold within its
share of the budget, predict on the GPU and come back from their bytes; the spaceship smoke on the GPU.

Run with `.venv/bin/pytest -m gpu` on a machine with a GPU (and the CUDA builds of the libraries: Kaggle's
xgboost, not the dev install's xgboost-cpu); deselected by default (and skipped without one)."""
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from kit import smoke
from kit.models import boosters
from kit.models.boosters import Settings, Task
from kit.runtime.budget import Budget
from kit.runtime.run_folder import FoldFiles
from kit.train import boosting
from kit.train.boosting import BoostConfig

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))


@pytest.mark.parametrize("name", ["xgboost", "catboost"])
def test_a_booster_trains_and_predicts_on_the_gpu(tmp_path, name):
    from test_boosters import problem

    pytest.importorskip(name, reason=f"{name} is not installed here (Kaggle's image has its CUDA build)")

    task = Task("binary")
    booster = boosters.create(name, task, Settings(learning_rate=0.1, early_stopping_rounds=20, device="cuda:0"))
    if name == "xgboost" and not boosters.library(name).build_info().get("USE_CUDA"):
        pytest.skip("this xgboost is a CPU build (xgboost-cpu); Kaggle's has CUDA")
    x, y, xv, yv = problem(task, n=4000)(booster.categories)
    budget = Budget(started=time.time(), total_s=60.0, predict_rows=0)
    result = boosting.fit([booster], x, [y], xv, [yv], lambda p: np.stack([1 - p[0], p[0]], 1), yv,
                          BoostConfig(2000, 20, "auc"), FoldFiles(tmp_path / "f.pt", tmp_path / "f.last.pt"), budget, (0, 1))
    assert result.best_score > 0.85 and budget.left() > 0
    again = boosters.restore(booster.state(), Settings(device="cuda:0"))
    assert np.allclose(again.predict(xv), booster.predict(xv), atol=1e-5)


def test_the_spaceship_smoke_trains_xgboost_on_the_gpu(tmp_path):
    pytest.importorskip("xgboost", reason="xgboost is not installed here (Kaggle's image has its CUDA build)")
    result = smoke.run("spaceship-titanic", root=tmp_path, overrides={"device": "auto"})
    log = (result.submission.parent / "kit.log").read_text()
    assert "model          xgboost" in log and "on cuda:0" in log
    assert result.score > result.baseline + 0.15
