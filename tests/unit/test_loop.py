"""The shared loop: schedule, micro-batching, early stopping, best checkpoint."""
import math
import time

import pytest
import torch
from torch import nn

from kit.runtime import checkpoint
from kit.runtime.budget import Budget
from kit.runtime.precision import Precision
from kit.runtime.run_folder import FoldFiles
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFit
from kit.train.step import split_batch, train_step, warmup_cosine

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
    files = FoldFiles(tmp_path / "best.pt", tmp_path / "last.pt")
    result = fit(FoldFit(model, Classification("x"), batches(x[:192], y[:192], 32), batches(x[192:], y[192:], 64), cfg, CPU,
                 files, log=lines.append, desc="toy"))
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"] * 0.5
    assert result.best_score == min(r["log_loss"] for r in result.history)
    saved = checkpoint.load(files.meta)  # the epoch, score and rows, apart from the weights
    assert saved["epoch"] == result.best_epoch and saved["score"] == result.best_score
    assert len(saved["rows"]["pred"]) == 64 and saved["rows"]["target"].dtype.kind == "i"
    last = checkpoint.load(tmp_path / "last.pt")
    assert last["result"]["epochs_run"] == result.epochs_run and last["step"] == result.epochs_run * 6
    if result.epochs_run < 30:
        assert result.stopped.startswith("early stop") and result.epochs_run - result.best_epoch >= 3 and result.epochs_run >= 15
    assert lines[0].startswith("toy epoch  1/30 | train loss") and "samples/s" in lines[0]


class Faulty(Classification):
    """Raises a CUDA-style OOM for chunks above `max_rows`, and returns a NaN loss on the listed calls
    (or whenever autocast is on, with `nan_under_autocast`)."""

    def __init__(self, max_rows=10**9, nan_calls=(), nan_under_autocast=False):
        super().__init__("x")
        self.max_rows, self.nan_calls, self.nan_under_autocast, self.calls = max_rows, set(nan_calls), nan_under_autocast, 0

    def __call__(self, model, batch):
        if torch.is_grad_enabled():
            self.calls += 1
            if len(batch["x"]) > self.max_rows:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (fake)")
        out = super().__call__(model, batch)
        autocast_nan = self.nan_under_autocast and torch.is_autocast_enabled("cpu")
        if torch.is_grad_enabled() and (self.calls in self.nan_calls or autocast_nan):
            out["loss"] = out["loss"] * float("nan")
        return out


def run_toy(tmp_path, task, precision=CPU, epochs=3, name="a", metric="accuracy"):
    torch.manual_seed(0)
    x, y = toy(128)
    model = nn.Linear(8, 3)
    cfg = FitConfig(epochs=epochs, lr=0.05, weight_decay=0.0, warmup_epochs=0, patience=0, metric=metric)
    lines = []
    files = FoldFiles(tmp_path / f"{name}.pt", tmp_path / f"{name}.last.pt")
    result = fit(FoldFit(model, task, batches(x[:96], y[:96], 32), batches(x[96:], y[96:], 32), cfg, precision, files,
                         log=lines.append))
    return model, result, lines


def test_oom_halves_the_micro_batch_and_keeps_the_same_updates(tmp_path):
    reference, _, _ = run_toy(tmp_path, Classification("x"), name="ref")
    model, result, lines = run_toy(tmp_path, Faulty(max_rows=8), name="oom")
    assert result.epochs_run == 3
    assert [line for line in lines if "out of memory" in line][:2] == [
        "WARNING: : out of memory at 32 samples per step; now micro-batches of 16, accumulating gradients to keep the batch",
        "WARNING: : out of memory at 32 samples per step; now micro-batches of 8, accumulating gradients to keep the batch",
    ]
    assert torch.allclose(model.weight, reference.weight, atol=1e-5)


def test_non_finite_steps_are_skipped(tmp_path):
    model, result, lines = run_toy(tmp_path, Faulty(nan_calls={2, 5}), epochs=2)
    assert result.epochs_run == 2 and result.history[0]["steps"] == 3
    assert "skipped 1 steps with a non-finite loss" in "\n".join(lines)
    assert torch.isfinite(model.weight).all()


def test_persistent_nan_under_mixed_precision_falls_back_to_fp32(tmp_path):
    bf16 = Precision("bf16", "cpu")
    model, result, lines = run_toy(tmp_path, Faulty(nan_under_autocast=True), precision=bf16, epochs=2)
    assert any("falling back to fp32 and redoing epoch 1" in line for line in lines)
    assert result.precision == "fp32" and result.epochs_run == 2 and result.best_epoch >= 1
    assert torch.isfinite(model.weight).all()


def test_a_killed_fold_resumes_from_its_last_epoch(tmp_path):
    _, full, _ = run_toy(tmp_path, Classification("x"), epochs=4, name="full")
    run_toy(tmp_path, Classification("x"), epochs=2, name="cut")  # as if killed after epoch 2 of 4
    saved = checkpoint.load(tmp_path / "cut.last.pt")
    saved["result"]["epochs_planned"] = 4
    checkpoint.save(saved, tmp_path / "cut.last.pt")
    model, resumed, lines = run_toy(tmp_path, Classification("x"), epochs=4, name="cut")
    assert lines[0] == ": resuming after epoch 2 from cut.last.pt (fp32)"
    assert resumed.epochs_run == 4 and [h["epoch"] for h in resumed.history] == [1, 2, 3, 4]


@pytest.mark.parametrize("metric", ["log_loss", "accuracy"])
def test_epoch_lines_explain_the_star_once_and_print_a_loss_that_is_the_metric_once(tmp_path, metric):
    _, result, lines = run_toy(tmp_path, Classification("x"), metric=metric)
    epochs = [line for line in lines if " epoch " in line]
    ties = "" if metric == "log_loss" else ", or the same accuracy at a lower validation loss"  # the loss: no tie to break
    note = f"s  (*: a new best {metric}{ties}; those weights are kept for prediction)"
    assert [line.endswith(note) for line in epochs] == [True, False, False]
    if metric == "log_loss":  # cross-entropy's mean is the log loss: one number, printed once
        assert all(" | val log_loss " in line and "val loss" not in line for line in epochs), epochs
        assert all(r["val_loss"] == pytest.approx(r["log_loss"], abs=1e-5) for r in result.history)
    else:
        assert all(" | val loss " in line and " | accuracy " in line for line in epochs), epochs


def test_an_overflowing_forward_leaves_batchnorm_statistics_as_they_were():
    """fp16 activations that overflow inside the forward make BatchNorm's running statistics NaN before the
    scaler skips the step; every later validation was NaN and the fold was lost. They are put back, on the device."""
    from kit.runtime import faults
    from kit.runtime.precision import Precision
    from kit.train.step import make_optimizer, train_step

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    fp16 = Precision("fp16", "cpu")
    batch = {"x": torch.randn(16, 4), "target": torch.randint(0, 3, (16,))}
    optimizer, scaler = make_optimizer(model, 1e-2, 0.0), fp16.grad_scaler()
    train_step(model, Classification("x"), batch, optimizer, scaler, fp16, 1.0)
    before = {k: v.clone() for k, v in model[1].state_dict().items() if k.startswith("running")}
    faults.arm("overflow.forward:1")
    try:
        loss = train_step(model, Classification("x"), batch, optimizer, scaler, fp16, 1.0)
    finally:
        faults.arm("")
    assert not torch.isfinite(loss)  # the step overflowed, and the scaler skipped it
    for name, value in before.items():
        assert torch.equal(model[1].state_dict()[name], value), name
    model.eval()
    assert torch.isfinite(model(batch["x"])).all()



def apart(n, seed=0):
    """Two classes apart on the first feature (4 standard deviations of the noise): a linear model separates them."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 8, generator=g) * 0.3
    x[:, 0] += 2.0 * y - 1.0
    return x, y


def test_a_tie_on_the_metric_goes_to_the_lower_validation_loss_and_patience_counts_from_it(tmp_path):
    """Issue 42's GunPoint: accuracy on 10 validation rows reached 1.0 at epoch 24 and stayed there while the loss
    fell to a third; epoch 24 was kept, and early stopping counted from it. Here accuracy is 1.0 from the first epoch
    and the loss alone falls: the last epoch is the best, and patience (2, from epoch 4 of 8) does not stop the fold."""
    torch.manual_seed(0)
    x, y = apart(74)
    model = nn.Linear(8, 2)
    cfg = FitConfig(epochs=8, lr=0.2, weight_decay=0.0, warmup_epochs=0, patience=2, metric="accuracy")
    lines = []
    files = FoldFiles(tmp_path / "best.pt", tmp_path / "last.pt")
    result = fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16), batches(x[64:], y[64:], 10), cfg, CPU, files,
                 log=lines.append, desc="toy", budget=Budget(time.time(), 3600.0, predict_rows=10), val_rows=10))
    plan = [line for line in "\n".join(lines).splitlines() if line.startswith("plan: ")]
    assert plan[0].endswith("; the best epoch is judged on 10 validation rows: the best accuracy, ties broken by the lower "
                            "validation loss"), plan
    lines = [line for line in lines if line.startswith("toy epoch ")]
    losses = [r["val_loss"] for r in result.history]
    assert [r["accuracy"] for r in result.history] == [1.0] * 8  # the tie the issue saw
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0] / 3  # while the loss keeps falling
    assert result.epochs_run == 8 and result.stopped == "completed"
    assert result.best_epoch == 8 and result.best_loss == losses[-1]
    assert checkpoint.load(files.meta)["epoch"] == 8  # the weights that predict
    assert lines[0].endswith("(*: a new best accuracy, or the same accuracy at a lower validation loss; those weights are "
                             "kept for prediction)")
    assert lines[1].split(" | ")[3] == "accuracy 1.0000 * (a tie on accuracy, broken by the lower val loss)"


def test_a_resume_state_of_another_model_is_not_loaded_and_the_fold_trains_afresh(tmp_path):
    """The same settings with another model (a run swapped its model, a test its pipeline's) found the first model's
    resume state and failed loading it, leaving no fold and the prior as the submission."""
    x, y = apart(74)
    cfg = FitConfig(epochs=2, lr=0.1, weight_decay=0.0, warmup_epochs=0, patience=0, metric="accuracy")
    files = FoldFiles(tmp_path / "best.pt", tmp_path / "last.pt")
    files.last.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.save({"model": nn.Linear(8, 2).state_dict(), "ema": None, "optimizer": {}, "scaler": {}, "step": 3,
                     "micro": 0, "precision": "fp32", "lr": 0.1, "result": {}}, files.last)
    lines = []
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 2))
    result = fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16), batches(x[64:], y[64:], 10), cfg, CPU, files,
                 log=lines.append, desc="toy"))
    assert result.epochs_run == 2
    assert any("holds another model's weights; training the fold afresh" in line for line in lines), lines
