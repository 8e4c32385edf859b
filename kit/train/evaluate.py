"""Validation: the model over batches without gradients, and the metric rows gathered from every rank."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

import torch
from torch import nn

from kit.data.batch import Batch
from kit.runtime import faults
from kit.runtime.collective import Collective
from kit.runtime.precision import InForce, Precision
from kit.runtime.recovery import halving
from kit.train import topk
from kit.train.objectives import Objective
from kit.train.step import batch_size_of


@torch.inference_mode()
def evaluate(model: nn.Module, objective: Objective, batches: Iterable[Batch], precision: Precision | InForce,
             collective: Collective | None = None, log: Callable[[str], None] = print):
    """Mean loss and the concatenated metric rows (numpy; float32 for floats) over `batches`; with a
    `collective`, over every rank's batches (each rank holds a shard), the same answer on every rank. A batch
    that runs out of memory is taken in halves, and so are the batches after it."""
    model = unwrap(model)  # no DDP forward here (ranks hold shards of different sizes), no compiled graph
    model.eval()
    loss_sum, count, parts, micro = 0.0, 0, {}, 0
    for batch in batches:
        n = batch_size_of(batch)
        start = 0
        while start < n:
            asked = min(micro or n, n - start)
            (out, chunk), size = halving(
                partial(_forward, model, objective, batch, start, precision=precision), asked,
                lambda old, new: log(f"WARNING: out of memory in validation at {old} samples; validating {new} at a time"))
            if size < asked:
                micro = size
            loss_sum += float(out["loss"]) * size
            count += size
            for k, v in objective.rows(out["output"], chunk).items():
                parts.setdefault(k, []).append(topk.host(v))
            start += size
    model.train()
    if collective is not None and collective.world > 1:
        shards = collective.gather((loss_sum, count, parts))
        loss_sum, count = sum(x[0] for x in shards), sum(x[1] for x in shards)
        parts = {k: [a for x in shards for a in x[2].get(k, [])] for k in shards[0][2]}
    return loss_sum / max(count, 1), {k: topk.join(v) for k, v in parts.items()}


def _forward(model: nn.Module, objective: Objective, batch: Batch, start: int, size: int, *,
              precision: Precision | InForce) -> tuple[dict[str, torch.Tensor], Batch]:
    """The objective's output on rows start:start+size of `batch`, and those rows."""
    chunk = batch if start == 0 and size == batch_size_of(batch) else {k: v[start : start + size] for k, v in batch.items()}
    with precision.autocast():
        out = objective(model, chunk)
    faults.oom("oom.validation")
    return out, chunk


def unwrap(model: nn.Module) -> nn.Module:
    """The module itself, out of torch.compile's and DistributedDataParallel's wrappers (in either order)."""
    while True:
        inner = getattr(model, "_orig_mod", None) or getattr(model, "module", None)
        if not isinstance(inner, nn.Module):
            return model
        model = inner
