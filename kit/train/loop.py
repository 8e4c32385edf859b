"""The one training loop every template uses.

It knows nothing of images, sequences, CUDA or dtypes: a task turns a batch into {"loss", "output"} and
metric rows, the loaders hand it device batches, the precision policy owns autocast and the scaler.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn

from kit.runtime import checkpoint, progress
from kit.runtime.precision import Precision
from kit.train import metrics

Batch = dict[str, torch.Tensor]


class Task(Protocol):
    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        """{"loss": scalar, "output": the model's raw output}"""

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """Metric rows: {"pred": (N, C) probabilities or (N,) values, "target": (N,), optional "weight": (N,)}"""


@dataclass(frozen=True)
class FitConfig:
    epochs: int
    lr: float
    weight_decay: float
    warmup_epochs: float  # linear warm-up, then cosine decay to zero over the remaining steps
    patience: int  # stop after this many epochs without a better validation score; 0 never stops early
    metric: str
    grad_clip: float = 1.0  # clip the gradient norm at this value, or disable if == 0.0


@dataclass
class FitResult:
    best_score: float
    best_epoch: int  # 1-based; 0 if no epoch produced a finite score
    epochs_run: int
    history: list[dict] = field(default_factory=list)
    rows: dict[str, np.ndarray] = field(default_factory=dict)  # validation rows of the best epoch
    stopped: str = "completed"  # or "early stop", ...


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """Learning-rate factor at optimizer step `step` (0-based) of `total`: linear warm-up over `warmup`
    steps, then a half cosine from 1 down to 0 at `total`."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    span = max(total - warmup, 1)
    progress_ = min(max(step - warmup, 0) / span, 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress_))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    # timm's AdamW setup: no weight decay on biases and norm weights (1-D parameters).
    from timm.optim import create_optimizer_v2

    return create_optimizer_v2(model, opt="adamw", lr=lr, weight_decay=weight_decay)


def batch_size_of(batch: Batch) -> int:
    return next(iter(batch.values())).shape[0]


def split_batch(batch: Batch, size: int) -> list[Batch]:
    """Micro-batches of at most `size` rows (gradient accumulation keeps the effective batch)."""
    n = batch_size_of(batch)
    return [{k: v[i : i + size] for k, v in batch.items()} for i in range(0, n, size)]


def train_step(model, task, batch, optimizer, scaler, precision: Precision, grad_clip: float, micro: int = 0):
    """One optimizer step over `batch`, in micro-batches of `micro` rows if set; returns the loss tensor."""
    n = batch_size_of(batch)
    optimizer.zero_grad(set_to_none=True)
    total = None
    for chunk in split_batch(batch, micro) if 0 < micro < n else [batch]:
        with precision.autocast():
            loss = task(model, chunk)["loss"] * (batch_size_of(chunk) / n)
        scaler.scale(loss).backward()
        total = loss.detach() if total is None else total + loss.detach()
    if grad_clip > 0:
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    return total


@torch.inference_mode()
def evaluate(model: nn.Module, task: Task, batches: Iterable[Batch], precision: Precision):
    """Mean loss and the concatenated metric rows (numpy; float32 for floats) over `batches`."""
    model.eval()
    loss_sum, count, parts = 0.0, 0, {}
    for batch in batches:
        with precision.autocast():
            out = task(model, batch)
        n = batch_size_of(batch)
        loss_sum += float(out["loss"]) * n
        count += n
        for k, v in task.rows(out["output"], batch).items():
            parts.setdefault(k, []).append((v.float() if v.is_floating_point() else v).cpu().numpy())
    return loss_sum / max(count, 1), {k: np.concatenate(v) for k, v in parts.items()}


def fit(
    model: nn.Module,
    task: Task,
    train: Iterable[Batch],
    val: Iterable[Batch],
    cfg: FitConfig,
    precision: Precision,
    best_path: Path,
    log: Callable[[str], None] = print,
    desc: str = "",
) -> FitResult:
    """Train for `cfg.epochs` (or until early stopping), keeping the best epoch's weights at `best_path`."""
    optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
    scaler = precision.grad_scaler()
    steps_per_epoch = len(train)
    total_steps = cfg.epochs * steps_per_epoch
    warmup = round(cfg.warmup_epochs * steps_per_epoch)
    result = FitResult(best_score=float("nan"), best_epoch=0, epochs_run=0)
    step = 0
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        started, seen, loss_sum = time.time(), 0, None
        bar = progress.bar(train, total=steps_per_epoch, desc=f"{desc} epoch {epoch}/{cfg.epochs}", leave=False)
        for batch in bar:
            for group in optimizer.param_groups:
                group["lr"] = cfg.lr * warmup_cosine(step, total_steps, warmup)
            loss = train_step(model, task, batch, optimizer, scaler, precision, cfg.grad_clip)
            loss_sum = loss if loss_sum is None else loss_sum + loss
            seen += batch_size_of(batch)
            step += 1
            if step % 25 == 0:
                bar.set_postfix(loss=f"{float(loss):.4f}", refresh=False)
        bar.close()
        train_seconds = time.time() - started
        train_loss = float(loss_sum) / max(steps_per_epoch, 1) if loss_sum is not None else float("nan")
        val_loss, rows = evaluate(model, task, val, precision)
        score = metrics.score(cfg.metric, rows["pred"], rows["target"], rows.get("weight"))
        improved = metrics.better(cfg.metric, score, None if result.best_epoch == 0 else result.best_score)
        if improved:
            result.best_score, result.best_epoch, result.rows = score, epoch, rows
            checkpoint.save({"model": _state_dict(model), "epoch": epoch, "score": score}, best_path)
        record = {
            "epoch": epoch,
            "train_loss": train_loss,
            "val_loss": val_loss,
            cfg.metric: score,
            "lr": optimizer.param_groups[0]["lr"],
            "samples_per_s": seen / max(train_seconds, 1e-9),
            "seconds": time.time() - started,
        }
        result.history.append(record)
        result.epochs_run = epoch
        log(_epoch_line(desc, record, cfg, improved))
        if cfg.patience and epoch - max(result.best_epoch, 0) >= cfg.patience and result.best_epoch:
            result.stopped = f"early stop: no better {cfg.metric} for {cfg.patience} epochs"
            break
    return result


def _state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    model = getattr(model, "_orig_mod", model)  # torch.compile wraps the module
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def _epoch_line(desc: str, r: dict, cfg: FitConfig, improved: bool) -> str:
    mem = ""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        total = torch.cuda.get_device_properties(0).total_memory / 2**30
        mem = f" | gpu mem {torch.cuda.max_memory_allocated() / 2**30:.1f}/{total:.1f} GB"
        torch.cuda.reset_peak_memory_stats()
    return (
        f"{desc} epoch {r['epoch']:>2}/{cfg.epochs} | train loss {r['train_loss']:.4f} | val loss {r['val_loss']:.4f}"
        f" | {cfg.metric} {r[cfg.metric]:.4f}{' *' if improved else '  '} | {r['samples_per_s']:.0f} samples/s"
        f"{mem} | {r['seconds']:.1f}s"
    )
