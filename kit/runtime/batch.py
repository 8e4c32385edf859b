"""`batch_size="auto"`: the largest batch that fits with a margin, then the one that trains fastest.

Each trial runs real optimizer steps and one validation step on the real model at a batch size, with cuDNN's
autotuner on (so its workspace counts), and records samples/s and the peak memory the caching allocator
reserved. Doubling stops at the first batch that runs out of memory or passes the margin; among those that
fit, the fastest wins, and a smaller batch wins a near tie (more updates per epoch for the same time).
The model's weights are restored after the trials.

Learning-rate rule: `lr` is the rate for a batch of 64 (REFERENCE_BATCH); an automatically chosen batch
scales it by sqrt(batch / 64), the square-root rule for Adam-type optimizers.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from kit.errors import KitError
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, is_oom
from kit.train.step import make_optimizer, train_step

REFERENCE_BATCH = 64
MEMORY_MARGIN = 0.85  # a batch fits if its trial's peak stays under this share of GPU memory
TIE = 0.03  # throughputs within 3% of the best count as equal
CPU_BATCH = 32  # on the CPU there is no memory wall and speed barely depends on the batch
MAX_BATCH = 1024


@dataclass(frozen=True)
class Trial:
    batch: int
    fits: bool
    samples_per_s: float = 0.0
    peak: float = 0.0  # share of GPU memory reserved at the peak (0 where unknown)
    oom: bool = False


def search(trial: Callable[[int], Trial], start: int = 16, limit: int = MAX_BATCH) -> tuple[int, list[Trial]]:
    """Double from `start` up to `limit` until a batch does not fit (halving below `start` if even that
    fails); choose the fastest batch that fits, the smaller one on a near tie."""
    trials: list[Trial] = []
    batch = start
    while batch <= limit:
        t = trial(batch)
        trials.append(t)
        if not t.fits:
            break
        batch *= 2
    fitting = [t for t in trials if t.fits]
    batch = start // 2
    while not fitting and batch >= 1:
        t = trial(batch)
        trials.append(t)
        fitting = [t] if t.fits else []
        batch //= 2
    if not fitting:
        raise KitError("not even a batch of 1 fits in GPU memory; use a smaller model or image_size")
    best = max(t.samples_per_s for t in fitting)
    return min(t.batch for t in fitting if t.samples_per_s >= best * (1 - TIE)), trials


def scaled_lr(lr: float, batch: int) -> float:
    return lr * math.sqrt(batch / REFERENCE_BATCH)


def limit_for(train_rows: int) -> int:
    """The largest batch worth trying: at most MAX_BATCH and a quarter of the training rows (an epoch
    should have several steps), as a power of two."""
    cap = max(1, min(MAX_BATCH, train_rows // 4))
    return 1 << (cap.bit_length() - 1)


def run_trial(
    model: nn.Module,
    task,
    make_batch: Callable[[int], dict[str, torch.Tensor]],
    precision: Precision,
    batch: int,
    steps: int = 3,
    warmup: int = 2,
) -> Trial:
    """Train `warmup + steps` steps and validate once at `batch`; an out-of-memory error is a result."""
    cuda = precision.device_type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    optimizer = make_optimizer(model, 1e-6, 0.0)
    scaler = precision.grad_scaler()
    oom, rate = False, 0.0
    try:
        data = make_batch(batch)
        model.train()
        for i in range(warmup + steps):
            if i == warmup:
                if cuda:
                    torch.cuda.synchronize()
                started = time.perf_counter()
            train_step(model, task, data, optimizer, scaler, precision, grad_clip=1.0)
        if cuda:
            torch.cuda.synchronize()
        rate = batch * steps / max(time.perf_counter() - started, 1e-9)
        with torch.inference_mode(), precision.autocast():
            model.eval()
            task(model, data)
        model.train()
        if cuda:
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - only out-of-memory errors are results; the rest re-raised
        if not is_oom(e):
            raise
        oom = True
    data = optimizer = scaler = None  # drop the references before freeing (outside the except block)
    free_memory()
    peak = 0.0
    if cuda:
        peak = torch.cuda.max_memory_reserved() / torch.cuda.get_device_properties(0).total_memory
    return Trial(batch, fits=not oom and peak <= MEMORY_MARGIN, samples_per_s=rate, peak=peak, oom=oom)


def autotune(model: nn.Module, task, make_batch, precision: Precision, train_rows: int, log=print) -> int:
    """The batch size for this model on this GPU (see the module's docstring); the weights are restored."""
    saved = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def trial(b: int) -> Trial:
        t = run_trial(model, task, make_batch, precision, b)
        state = "out of memory" if t.oom else f"{t.samples_per_s:.0f} samples/s, peak {t.peak:.0%} of memory"
        log(f"  batch {b:>4}: {state}{'' if t.fits or t.oom else ' (over the margin)'}")
        return t

    try:
        choice, _ = search(trial, start=16, limit=limit_for(train_rows))
    finally:
        model.load_state_dict(saved)
        free_memory()
    return choice
