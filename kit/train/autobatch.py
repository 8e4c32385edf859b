"""`batch_size="auto"`: the largest batch that fits with a margin, then the one that trains fastest.

Each trial runs real optimizer steps and one validation step on the real model at a batch size, fed by the
real data path (so the batch in flight on the side stream and the augmentation's buffers count), with
cuDNN's autotuner on (so its workspace counts), and records samples/s and the memory the trial needed: the
caching allocator's peak plus what the device holds outside it (CUDA contexts, NCCL's buffers, the notebook
process and other workers on the same GPU), read from the driver. Under DDP the trials run on the bare model
on every rank at once (an out-of-memory error inside a collective would leave the peer waiting), the
reducer's share is added (`ddp_extra`), and the ranks agree after every trial. Doubling stops at the first
batch that runs out of memory or passes the margin; among those that fit, the fastest wins, and a smaller
batch wins a near tie (more updates per epoch for the same time). The model's weights are restored after.

Learning-rate rule: `lr` is the rate for a batch of 64 (REFERENCE_BATCH) or fewer; an automatically chosen
larger batch scales it by sqrt(batch / 64), the square-root rule for Adam-type optimizers. A smaller batch
keeps `lr`: scaled down, it starved small datasets (a Transformer on 480 simulated breaths, batch 32, 30
epochs: MAE 0.647 with its lr lowered to 3.5e-4, 0.618 at 1e-3). The factor stops at MAX_LR_FACTOR (2x, at
a batch of 256): the larger batches autotune finds for small sequence models would otherwise take lr to 4x.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from kit.errors import KitError
from kit.runtime import faults
from kit.runtime.collective import Collective
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, is_oom
from kit.train.objectives import Objective
from kit.train.step import make_optimizer, train_step

REFERENCE_BATCH = 64
MEMORY_MARGIN = 0.85  # a batch fits if its trial's peak stays under this share of GPU memory
TIE = 0.03  # throughputs within 3% of the best count as equal
CPU_BATCH = 32  # on the CPU there is no memory wall and speed barely depends on the batch
MAX_BATCH = 1024
MAX_LR_FACTOR = 2.0


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
    """`lr` for an automatically chosen `batch`: raised for batches above REFERENCE_BATCH, never lowered."""
    return lr * min(math.sqrt(max(batch, REFERENCE_BATCH) / REFERENCE_BATCH), MAX_LR_FACTOR)


def limit_for(train_rows: int) -> int:
    """The largest batch worth trying: at most MAX_BATCH and a quarter of the training rows (an epoch
    should have several steps), as a power of two."""
    cap = max(1, min(MAX_BATCH, train_rows // 4))
    return 1 << (cap.bit_length() - 1)


@dataclass(frozen=True)
class Memory:
    """Bytes on the device during a trial."""

    peak: int  # the caching allocator's peak reserve
    others: int  # held outside it: CUDA contexts, NCCL's buffers, other processes on the same GPU
    total: int

    @property
    def share(self) -> float:
        return (self.peak + self.others) / self.total if self.total else 0.0


class Probe:
    """Reads a CUDA device's memory for a trial; on the CPU there is nothing to read and a batch fits
    unless it runs out of memory."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self.others = 0

    def start(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.others = self._outside()

    def stop(self, extra: int = 0) -> Memory:
        if not self.cuda:
            return Memory(0, 0, 0)
        torch.cuda.synchronize(self.device)
        total = torch.cuda.get_device_properties(self.device).total_memory  # this device's, not device 0's
        return Memory(torch.cuda.max_memory_reserved(self.device) + extra, max(self.others, self._outside()), total)

    def _outside(self) -> int:
        free, total = torch.cuda.mem_get_info(self.device)  # the driver's view: every process on the GPU
        return max(total - free - torch.cuda.memory_reserved(self.device), 0)


def ema_extra(model: nn.Module) -> int:
    """Bytes a moving average of the weights adds (kit.train.ema): a copy of the model's state, on its device."""
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def ddp_extra(model: nn.Module) -> int:
    """Bytes DDP adds to a bare model's training step: its gradient buckets, a copy of the fp32 gradients
    that the all-reduce works on (SyncBatchNorm's gathered statistics are small beside them)."""
    return 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)


def run_trial(
    model: nn.Module,
    objective: Objective,
    batches: Callable[[int], Iterable[dict[str, torch.Tensor]]],
    precision: Precision,
    batch: int,
    probe: Probe | None = None,
    extra: int = 0,
    steps: int = 3,
    warmup: int = 2,
) -> Trial:
    """Train `warmup + steps` steps on `batches(batch)` and validate once; an out-of-memory error is a result.
    `extra`: bytes the run will need beyond what the trial allocates (`ddp_extra`)."""
    probe = probe or Probe(torch.device("cpu"))
    probe.start()
    optimizer = make_optimizer(model, 1e-6, 0.0)
    scaler = precision.grad_scaler()
    oom, rate, data, source, loss = False, 0.0, None, None, None
    try:
        model.train()
        source = iter(batches(batch))
        for i in range(warmup + steps):
            data = next(source)
            faults.oom("oom.autotune")
            if i == warmup:
                float(loss)  # wait for the device: the timed steps start here
                started = time.perf_counter()
            loss = train_step(model, objective, data, optimizer, scaler, precision, grad_clip=1.0)
        float(loss)
        rate = batch * steps / max(time.perf_counter() - started, 1e-9)
        with torch.inference_mode(), precision.autocast():
            model.eval()
            float(objective(model, data)["loss"])
        model.train()
    except Exception as e:  # noqa: BLE001 - only out-of-memory errors are results; the rest re-raised
        if not is_oom(e):
            raise
        oom = True
    data = source = optimizer = scaler = loss = None  # drop the references before freeing (outside the except block)
    model.zero_grad(set_to_none=True)
    free_memory()
    memory = probe.stop(extra)
    return Trial(batch, fits=not oom and memory.share <= MEMORY_MARGIN, samples_per_s=rate, peak=memory.share, oom=oom)


def autotune(model: nn.Module, objective: Objective, batches: Callable[[int], Iterable[dict[str, torch.Tensor]]],
             precision: Precision, train_rows: int, log: Callable[[str], None] = print, probe: Probe | None = None,
             collective: Collective | None = None, extra: int = 0) -> int:
    """The batch size for this model on this GPU (see the module's docstring); the weights are restored.
    With a `collective` of several ranks, every rank runs the same trials and they agree: a batch fits if it
    fits on every rank, and rank 0's speed decides; an error on any rank is raised on all of them (a rank
    that left alone would pair its next collective with another's). `extra`: bytes DDP adds (`ddp_extra`)."""
    # in host memory: a copy on the GPU would count in every trial as memory the run will not use
    saved = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    world = collective.world if collective is not None else 1

    def trial(b: int) -> Trial:
        error = None
        try:
            t = run_trial(model, objective, batches, precision, b, probe, extra)
        except Exception as e:  # noqa: BLE001 - raised below, on every rank at once
            error, t = e, Trial(b, fits=False)
        if world > 1:
            if collective.any(error is not None):
                raise error or RuntimeError("the batch trials failed on another worker")
            t = Trial(b, not collective.any(not t.fits), collective.broadcast(t.samples_per_s), max(collective.gather(t.peak)),
                      collective.any(t.oom))
        elif error is not None:
            raise error
        state = "out of memory" if t.oom else f"{t.samples_per_s:.0f} samples/s, peak {t.peak:.0%} of memory"
        log(f"  batch {b:>4}: {state}{'' if t.fits or t.oom else ' (over the margin)'}")
        return t

    try:
        choice, _ = search(trial, start=16, limit=limit_for(train_rows))
    finally:
        model.load_state_dict(saved)
        free_memory()
    return choice
