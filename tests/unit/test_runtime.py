"""Budget plans, batch-size search and the monitor's diagnosis, with exact expectations."""
import pytest
import torch
from torch import nn

from kit.errors import KitError
from kit.runtime import budget, monitor
from kit.runtime.budget import Budget, Plan
from kit.runtime.precision import Precision
from kit.runtime.recovery import is_oom
from kit.train import autobatch
from kit.train.objectives import Classification


@pytest.mark.parametrize(
    "available, epoch_s, folds, done, epochs, expected",
    [
        (100, 1, 5, 0, 10, Plan(5, 10, "")),
        (40, 1, 5, 0, 10, Plan(5, 8, "epochs per fold cut from 10 to 8")),
        (20, 1, 5, 0, 10, Plan(4, 5, "folds cut from 5 to 4, epochs per fold cut from 10 to 5")),
        (3, 1, 5, 2, 10, Plan(3, 3, "folds cut from 5 to 3, epochs per fold cut from 10 to 3")),
        (0, 1, 2, 0, 1, Plan(1, 1, "folds cut from 2 to 1")),
        (35, 0.25, 2, 0, 1000, Plan(1, 140, "folds cut from 2 to 1, epochs per fold cut from 1000 to 140")),
        (10, 0, 5, 0, 10, Plan(5, 10, "")),  # nothing measured yet: the request stands
    ],
)
def test_plan(available, epoch_s, folds, done, epochs, expected):
    assert budget.plan(available, epoch_s, folds, done, epochs) == expected


def test_total_budget():
    assert budget.total_budget(60, {}) == 60
    assert budget.total_budget(0, {}) == 12 * 3600 - 15 * 60
    assert budget.total_budget(0, {"KAGGLE_IS_COMPETITION_RERUN": "1"}) == 9 * 3600 - 15 * 60


def test_reserve_and_deadline_follow_measurements():
    b = Budget(started=0.0, total_s=1000.0, predict_rows=1000, clock=lambda: 100.0)
    assert b.predict_s(2) == pytest.approx(1.3 * 2 * (1 + 1000 / 50) + 8)
    b.measure_epoch(train_s=9.0, val_s=1.0, val_rows=500)
    assert b.epoch_s == 10.0 and b.eval_rows_per_s == 500.0
    assert b.predict_s(2) == pytest.approx(1.3 * 2 * 3 + 8)
    assert b.train_deadline(2) == pytest.approx(1000 - 15.8 - 1.3)
    assert b.left() == 900.0


def test_replan_cuts_folds_then_uses_the_smaller_reserve():
    b = Budget(started=0.0, total_s=1000.0, predict_rows=1000, clock=lambda: 100.0)
    b.measure_epoch(train_s=9.0, val_s=1.0, val_rows=500)
    p = b.replan(fold=0, folds=5, epochs_done=0, epochs=100)
    assert p == Plan(1, 88, "folds cut from 5 to 1, epochs per fold cut from 100 to 88")
    text = b.describe(p, 5, 100)
    assert "plan: 5 folds x 100 epochs would need 83.3 min: folds cut from 5 to 1" in text
    assert b.replan(fold=0, folds=1, epochs_done=40, epochs=50) == Plan(1, 50, "")


def fake_trial(fits_up_to: int, speed):
    seen = []

    def trial(b):
        seen.append(b)
        return autobatch.Trial(b, fits=b <= fits_up_to, samples_per_s=speed(b) if b <= fits_up_to else 0.0, oom=b > fits_up_to)

    return trial, seen


def test_search_doubles_until_oom_and_prefers_the_smaller_of_near_ties():
    trial, seen = fake_trial(64, lambda b: {16: 160, 32: 320, 64: 325}[b])
    assert autobatch.search(trial, start=16, limit=1024)[0] == 32
    assert seen == [16, 32, 64, 128]


def test_search_takes_the_fastest_not_the_largest():
    trial, _ = fake_trial(256, lambda b: {16: 100, 32: 300, 64: 250, 128: 240, 256: 200}[b])
    assert autobatch.search(trial, start=16, limit=1024)[0] == 32


def test_search_halves_below_start_and_gives_up_clearly():
    trial, seen = fake_trial(4, lambda b: 10.0 * b)
    assert autobatch.search(trial, start=16, limit=1024)[0] == 4 and seen == [16, 8, 4]
    trial, _ = fake_trial(0, lambda b: 1.0)
    with pytest.raises(KitError, match="not even a batch of 1 fits"):
        autobatch.search(trial, start=16, limit=1024)
    trial, seen = fake_trial(10**6, lambda b: float(b))
    assert autobatch.search(trial, start=16, limit=64)[0] == 64 and seen == [16, 32, 64]


def test_limits_and_lr_rule():
    assert (autobatch.limit_for(30), autobatch.limit_for(300), autobatch.limit_for(10**6)) == (4, 64, 1024)
    assert autobatch.scaled_lr(1e-3, 256) == pytest.approx(2e-3)
    assert autobatch.scaled_lr(1e-3, 64) == pytest.approx(1e-3)


class OomAbove(Classification):
    def __init__(self, rows):
        super().__init__("x")
        self.rows = rows

    def __call__(self, model, b):
        if len(b["x"]) > self.rows:
            raise RuntimeError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return super().__call__(model, b)


def test_autotune_with_faked_ooms_restores_the_weights():
    torch.manual_seed(0)
    model = nn.Linear(8, 3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lines = []

    def batches(n):
        return ({"x": torch.randn(n, 8), "target": torch.randint(0, 3, (n,))} for _ in range(6))

    chosen = autobatch.autotune(model, OomAbove(40), batches, Precision("fp32", "cpu"), train_rows=10_000, log=lines.append)
    assert chosen in (16, 32)
    assert lines[-1] == "  batch   64: out of memory" and len(lines) == 3
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_run_trial_reraises_other_errors():
    class Broken(Classification):
        def __call__(self, model, b):
            raise ValueError("a bug, not memory")

    with pytest.raises(ValueError):
        autobatch.run_trial(nn.Linear(8, 3), Broken("x"),
                            lambda n: iter([{"x": torch.randn(n, 8), "target": torch.zeros(n, dtype=torch.long)}] * 6),
                        Precision("fp32", "cpu"), 4)


@pytest.mark.parametrize(
    "error, oom",
    [
        (RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"), True),
        (RuntimeError("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous "
                      "input."), True),
        (torch.OutOfMemoryError("CUDA out of memory."), True),
        (RuntimeError("CUDA error: device-side assert triggered"), False),
        (ValueError("CUDA out of memory."), False),
    ],
)
def test_is_oom(error, oom):
    assert is_oom(error) is oom


def test_diagnosis():
    assert monitor.diagnose(None, 0.9, 32) == ""
    assert monitor.diagnose(95, 0.9, 32) == ""
    assert monitor.diagnose(40, 0.5, 32).startswith("data-bound: the GPU is 40% busy and each step waits 50% of its time")
    assert "raise num_workers" in monitor.diagnose(40, 0.5, 32)
    assert monitor.diagnose(40, 0.05, 32).startswith(
        "compute-light: the GPU is 40% busy though batches arrive in time; steps of 32")


def test_cpu_monitor_reports_the_data_wait_only():
    m = monitor.Monitor("cpu").start()
    m.epoch_begin()
    stats = m.epoch_end(wait_s=1.0, step_s=3.0, batch_size=16)
    m.stop()
    assert stats.line() == "data wait 25%" and stats.diagnosis == ""
