"""The shared loop: schedule, micro-batching, early stopping, best checkpoint."""
import math

import pytest
import torch
from torch import nn

from kit.runtime import checkpoint
from kit.runtime.precision import Precision
from kit.train.loop import FitConfig, fit, split_batch, train_step, warmup_cosine
from kit.train.tasks import Classification

CPU = Precision("fp32", "cpu")


def test_warmup_cosine_exact():
    assert [warmup_cosine(s, 10, 2) for s in (0, 1)] == [0.5, 1.0]
    assert warmup_cosine(2, 10, 2) == 1.0
    assert warmup_cosine(6, 10, 2) == pytest.approx(0.5)
    assert warmup_cosine(10, 10, 2) == pytest.approx(0.0)
    assert warmup_cosine(99, 10, 2) == pytest.approx(0.0)
    assert warmup_cosine(3, 8, 0) == pytest.approx(0.5 * (1 + math.cos(math.pi * 3 / 8)))


def test_split_batch():
    batch = {"x": torch.arange(10), "y": torch.arange(10) * 2}
    parts = split_batch(batch, 4)
    assert [len(p["x"]) for p in parts] == [4, 4, 2]
    assert torch.equal(parts[2]["y"], torch.tensor([16, 18]))


def toy(n=64, d=8, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, classes, generator=g)
    return x, (x @ w).argmax(1)


def test_micro_batches_give_the_same_step_as_the_whole_batch():
    x, y = toy(12)
    grads = []
    for micro in (0, 5):
        torch.manual_seed(0)
        model = nn.Linear(8, 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = train_step(model, Classification("x"), {"x": x, "target": y}, opt, CPU.grad_scaler(), CPU, 0.0, micro=micro)
        grads.append((float(loss), model.weight.detach().clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-5)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-6)


def batches(x, y, size):
    return [{"x": x[i : i + size], "target": y[i : i + size]} for i in range(0, len(x), size)]


def test_fit_learns_keeps_best_and_stops_early(tmp_path):
    torch.manual_seed(0)
    x, y = toy(256)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    cfg = FitConfig(epochs=30, lr=0.01, weight_decay=0.0, warmup_epochs=1, patience=3, metric="log_loss")
    lines = []
    result = fit(model, Classification("x"), batches(x[:192], y[:192], 32), batches(x[192:], y[192:], 64), cfg, CPU,
                 tmp_path / "best.pt", log=lines.append, desc="toy")
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"] * 0.5
    assert result.best_score == min(r["log_loss"] for r in result.history)
    saved = checkpoint.load(tmp_path / "best.pt")
    assert saved["epoch"] == result.best_epoch and saved["score"] == result.best_score
    assert len(result.rows["pred"]) == 64 and result.rows["target"].dtype.kind == "i"
    if result.epochs_run < 30:
        assert result.stopped.startswith("early stop") and result.epochs_run - result.best_epoch == 3
    assert lines[0].startswith("toy epoch  1/30 | train loss") and "samples/s" in lines[0]
