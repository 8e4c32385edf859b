"""The loop's recovery under mixed precision on the CPU (fp16 with a live GradScaler, bf16): out-of-memory
retries after `unscale_`, no host sync per step, torch.compile failures, and what the budget plans for; and the
collector's settling once the libraries are imported (settle_imports)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import kit
from kit.runtime.budget import Budget
from kit.runtime.precision import Precision
from kit.runtime.run_folder import FoldFiles
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFit

FP16 = Precision("fp16", "cpu")
ROOT = Path(kit.__file__).parent.parent


def toy(n=128, d=8, classes=3):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=g)
    return x, (x @ torch.randn(d, classes, generator=g)).argmax(1)


def run(tmp_path, precision=FP16, epochs=2, size=16, model=None, name="a", budget=None, task=None):
    torch.manual_seed(0)
    x, y = toy()
    model = model if model is not None else nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    cfg = FitConfig(epochs=epochs, lr=0.05, weight_decay=0.0, warmup_epochs=0, patience=0, metric="accuracy")
    train = [{"x": x[i : i + size], "target": y[i : i + size]} for i in range(0, 96, size)]
    val = [{"x": x[96:], "target": y[96:]}]
    lines = []
    files = FoldFiles(tmp_path / f"{name}.pt", tmp_path / f"{name}.last.pt")
    result = fit(FoldFit(model, task or Classification("x"), train, val, cfg, precision, files, log=lines.append, budget=budget))
    return model, result, lines


@pytest.fixture
def armed():
    from kit.runtime import faults

    yield faults.arm
    faults.arm("")


def test_oom_after_unscale_under_fp16_is_retried_with_half_the_batch(tmp_path, monkeypatch):
    reference, _, _ = run(tmp_path, name="ref")
    real, calls = nn.utils.clip_grad_norm_, []

    def clip_then_fail_once(*args, **kwargs):  # as clip_grad_norm_ does when its norm buffer cannot be allocated
        calls.append(1)
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(nn.utils, "clip_grad_norm_", clip_then_fail_once)
    model, result, lines = run(tmp_path, name="oom")
    assert result.epochs_run == 2 and result.precision == "fp16"
    assert "out of memory at 16 samples per step; now micro-batches of 8" in "\n".join(lines)
    assert all(torch.allclose(a, b, atol=1e-3) for a, b in zip(model.parameters(), reference.parameters()))


def test_an_oom_while_adam_first_allocates_its_state_is_retried(tmp_path, monkeypatch):
    real, calls = torch.zeros_like, []

    def zeros_like(*args, **kwargs):  # Adam's moments, a parameter at a time, in its first step: the 3rd fails
        calls.append(1)
        if len(calls) == 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "zeros_like", zeros_like)
    model, result, lines = run(tmp_path, Precision("fp32", "cpu"))
    assert result.epochs_run == 2 and result.best_epoch and len(calls) > 3
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("site", ["oom.forward", "oom.backward", "oom.unscale", "oom.step"])
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_oom_anywhere_in_the_step_is_retried(tmp_path, armed, site, precision):
    armed(f"{site}:3")
    model, result, lines = run(tmp_path, Precision(precision, "cpu"))
    assert result.epochs_run == 2 and result.precision == precision and result.best_epoch
    assert sum("out of memory at 16 samples per step" in line for line in lines) == 1
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_oom_in_validation_takes_the_batch_in_halves(tmp_path, armed):
    armed("oom.validation:1")
    _, result, lines = run(tmp_path)
    assert "WARNING: out of memory in validation at 32 samples; validating 16 at a time" in lines
    assert result.epochs_run == 2 and result.best_epoch


class _Reads(TorchDispatchMode):
    """Counts reads of a tensor's value by the host (.item(), float(), bool()): each is a device sync on a GPU."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.count += 1
        return func(*args, **(kwargs or {}))


def test_a_step_does_not_wait_for_the_device(tmp_path):
    steps = 48  # 96 rows in batches of 2, one epoch
    with _Reads() as reads:
        run(tmp_path, Precision("fp32", "cpu"), epochs=1, size=2)
    # a look at the loss figures every few steps (kit.train.loop.CHECK_EVERY), a handful at the epoch's end
    assert reads.count < steps // 2, reads.count


def test_an_lstm_step_reads_no_device_value():
    """The LSTM's packing needs the lengths on the host; the batch brings them, so the model never reads
    its mask back from the device. On the meta device any such read raises."""
    from kit.models.sequence import create_model
    from kit.train.objectives import SequenceObjective

    model = create_model("lstm", features=3, cardinalities=[2], outputs=1, per_step=True, d_model=8, hidden_size=8,
                         num_layers=1).to("meta")
    batch = {"x": torch.empty(2, 5, 3, device="meta"), "cat": torch.empty(2, 5, 1, dtype=torch.long, device="meta"),
             "mask": torch.empty(2, 5, dtype=torch.bool, device="meta"), "weight": torch.empty(2, 5, device="meta"),
             "target": torch.empty(2, 5, device="meta"), "lengths": torch.tensor([5, 5])}
    out = SequenceObjective(False, True, "mae")(model, batch)
    assert out["output"].shape == (2, 5, 1) and out["loss"].device.type == "meta"


def _failing_backend(graph, example_inputs):
    raise RuntimeError("Triton cannot compile for this GPU (a stand-in)")


def test_a_compile_error_falls_back_to_eager(tmp_path):
    model = torch.compile(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), backend=_failing_backend)
    _, result, lines = run(tmp_path, Precision("fp32", "cpu"), model=model)
    assert result.epochs_run == 2 and result.best_epoch
    fallback = [line for line in lines if "torch.compile failed" in line]
    assert len(fallback) == 1 and fallback[0].endswith("; training in eager mode") and "BackendCompilerFailed" in fallback[0]


def test_is_compile_error():
    from kit.runtime.recovery import is_compile_error

    with pytest.raises(Exception) as caught:  # noqa: PT011 - whatever Dynamo wraps the backend's error in
        torch.compile(lambda x: x * 2, backend=_failing_backend)(torch.ones(2))
    assert is_compile_error(caught.value)
    assert not is_compile_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_compile_error(torch.OutOfMemoryError("CUDA out of memory."))


class SlowFirstCall(Classification):
    """The first forward takes `seconds` (as compiling does); the rest are quick."""

    def __init__(self, seconds):
        super().__init__("x")
        self.seconds, self.calls = seconds, 0

    def __call__(self, model, batch):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.seconds)
        return super().__call__(model, batch)


def test_the_budget_does_not_plan_for_the_first_steps_one_off_time(tmp_path):
    budget = Budget(time.time(), total_s=40.0, predict_rows=10)
    _, result, lines = run(tmp_path, Precision("fp32", "cpu"), epochs=20, size=8, budget=budget, task=SlowFirstCall(2.0))
    plan = [line for line in "\n".join(lines).splitlines() if line.startswith("plan:")]
    assert plan and plan[0].startswith("plan: 1 folds x 20 epochs fit"), lines[:3]
    assert result.epochs_planned == 20 and result.epochs_run == 20


def test_fault_specs():
    from kit.runtime import faults

    assert faults.parse("oom.step:2, nan.amp:3-5,fail.prefetch,nan.loss:4-") == {
        "oom.step": (2, 2), "nan.amp": (3, 5), "fail.prefetch": (1, 1), "nan.loss": (4, float("inf"))}
    with pytest.raises(ValueError, match="'oom.nowhere:1' is not site"):
        faults.parse("oom.nowhere:1")
    faults.arm("oom.step:2-3")
    try:
        assert [faults.hit("oom.step") for _ in range(4)] == [False, True, True, False]
        assert not faults.hit("oom.forward")
    finally:
        faults.arm("")


def test_the_first_pipeline_freezes_the_libraries_once_and_no_garbage(tmp_path):
    """create_pipeline (settle_imports) freezes what is alive after the imports (gc.freeze: the kernel's exit took
    2.9 to 4.3 s to sweep torch's objects, 1.6 s so), collecting the garbage first, and only once: a second pipeline in the same
    kernel leaves the first one's objects to the collector (the count only falls as frozen objects are freed)."""
    data = tmp_path / "data"
    data.mkdir()
    probe = ("import gc, weakref\nfrom kit import config\nfrom kit.run import create_pipeline, start\n"
             "class Node: pass\n"  # the collector off: only settle_imports' own collect can free the cycle
             "gc.disable(); cycle = Node(); cycle.me = cycle; dead = weakref.ref(cycle); del cycle\n"
             f"ns = {{**config.load('dog-breed').parameters(smoke=True), 'data_dir': {str(data)!r}, "
             f"'output_dir': {str(tmp_path / 'out')!r}}}\n"
             "before = gc.get_freeze_count()\ncreate_pipeline(start('cnn', ns))\nfirst = gc.get_freeze_count()\n"
             "later = [[i] for i in range(1000)]\ncreate_pipeline(start('cnn', ns))\n"
             "print(before, first, gc.get_freeze_count(), dead() is None)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    before, first, second, collected = out.stdout.splitlines()[-1].split()  # after the set-up's log
    assert int(before) == 0 and int(first) > 100_000 and int(second) <= int(first) and collected == "True", out.stdout
