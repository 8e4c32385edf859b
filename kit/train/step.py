"""One optimizer step and the pieces it is made of: the schedule, the optimizer, micro-batches.

Pure enough to test with exact numbers; the epoch loop (`kit.train.loop`) and the batch-size trials
(`kit.train.autobatch`) both take their steps here.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import torch
from torch import nn

from kit.data.batch import Batch
from kit.runtime import faults
from kit.runtime.precision import Precision
from kit.train.objectives import Objective


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor at optimizer step `step` (0-based) of `total`: linear warm-up over `warmup`
    steps, then a half cosine from 1 down to 0 at `total`."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    span = max(total - warmup, 1)
    done = min(max(step - warmup, 0) / span, 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * done))


class RunningStats:
    """A model's BatchNorm running statistics as they were before a step. An fp16 forward that overflows leaves
    them NaN although the scaler then skips the step, and every later validation (and the EMA, which averages
    them) would be NaN: they are put back, on the device, without the host waiting to know.

    The statistics are handled as one flat tensor, so that the snapshot and the put-back cost a handful of
    launches whatever the model's depth: a `where` and a `copy_` per buffer were ~200 launches a step on
    efficientnet_b0, a sixth of its step on a fast GPU."""

    def __init__(self, model: nn.Module):
        self.buffers = [b for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
                        for b in (m.running_mean, m.running_var) if b is not None]  # each 1-D: (features,)
        self.saved = torch.cat(self.buffers) if self.buffers else None  # a copy, in one launch

    def restore_unless_finite(self, loss: torch.Tensor) -> None:
        if not self.buffers:
            return
        with torch.no_grad():
            now = torch.cat(self.buffers)
            # 0 * x is NaN where x is inf or NaN: one sum tells whether the loss and every statistic are finite
            finite = torch.isfinite(loss.float() + now.sum() * 0)
            kept = torch.where(finite, now, self.saved).split([b.numel() for b in self.buffers])
            torch._foreach_copy_(self.buffers, list(kept))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float, layer_decay: float = 1.0) -> torch.optim.Optimizer:
    # timm's AdamW set-up: no weight decay on biases and norm weights (1-D parameters). Fused: one kernel for
    # the whole update, which takes the GradScaler's found-inf flag on the device instead of asking the host.
    # layer_decay < 1: timm's layer-wise groups (the model's group_matcher), each with its "lr_scale"
    from timm.optim import create_optimizer_v2

    decay = dict(layer_decay=layer_decay) if layer_decay < 1.0 and hasattr(model, "group_matcher") else {}
    try:
        return create_optimizer_v2(model, opt="adamw", lr=lr, weight_decay=weight_decay, fused=True, **decay)
    except (RuntimeError, TypeError, ValueError):  # a device or torch without a fused AdamW
        return create_optimizer_v2(model, opt="adamw", lr=lr, weight_decay=weight_decay, **decay)


def batch_size_of(batch: Batch) -> int:
    return next(iter(batch.values())).shape[0]


def split_batch(batch: Batch, size: int) -> list[Batch]:
    """Micro-batches of at most `size` rows (gradient accumulation keeps the effective batch)."""
    n = batch_size_of(batch)
    return [{k: v[i : i + size] for k, v in batch.items()} for i in range(0, n, size)]


def train_step(model: nn.Module, objective: Objective, batch: Batch, optimizer: torch.optim.Optimizer,
               scaler: torch.amp.GradScaler, precision: Precision, grad_clip: float, micro: int = 0) -> torch.Tensor:
    """One optimizer step over `batch`, in micro-batches of `micro` rows if set. Returns the loss as a device
    tensor, without waiting for the device: it is not finite when a micro-batch's loss was not, and then the
    scaler has skipped the update (a non-finite loss gives non-finite gradients; under DDP, on every rank,
    since the gradients are averaged). The host reads the loss later, every few steps (`kit.train.loop`)."""
    n = batch_size_of(batch)
    optimizer.zero_grad(set_to_none=True)
    stats = RunningStats(model)  # BatchNorm's, before this step's forwards move them
    chunks = split_batch(batch, micro) if 0 < micro < n else [batch]
    total = None
    for i, chunk in enumerate(chunks):
        # under DDP the gradients are all-reduced once, in the last micro-batch's backward (no_sync before it)
        with nullcontext() if i == len(chunks) - 1 or not hasattr(model, "no_sync") else model.no_sync():
            with precision.autocast(), faults.overflow("overflow.forward", model):
                loss = objective(model, chunk)["loss"] * (batch_size_of(chunk) / n)
            faults.oom("oom.forward")
            loss = faults.nan("nan.loss", loss)
            if precision.name != "fp32":
                loss = faults.nan("nan.amp", loss)
            scaler.scale(loss).backward()
        faults.oom("oom.backward")
        total = loss.detach() if total is None else total + loss.detach()
    stats.restore_unless_finite(total)
    scaler.unscale_(optimizer)  # records, on the device, whether every gradient is finite
    faults.oom("oom.unscale")
    if grad_clip > 0:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    faults.oom("oom.step")
    scaler.step(optimizer)
    scaler.update()
    return total
