"""The one training loop every template uses.

It knows nothing of images, sequences, CUDA or dtypes: a task turns a batch into {"loss", "output"} and
metric rows, the loaders hand it device batches, the precision policy owns autocast and the scaler. What it
does know is how to survive: it checkpoints every epoch and resumes from there, halves the micro-batch on an
out-of-memory error and accumulates gradients to keep the batch, skips non-finite steps and falls back to
fp32 when they persist, and stops in time for the budget.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from torch import nn

from kit.errors import KitError
from kit.runtime import checkpoint, progress
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, is_oom
from kit.train import metrics
from kit.train.step import batch_size_of, make_optimizer, train_step, warmup_cosine

Batch = dict[str, torch.Tensor]
NONFINITE_PATIENCE = 5  # consecutive non-finite steps before mixed precision is given up for fp32


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
    best_score: float = float("nan")
    best_epoch: int = 0  # 1-based; 0 if no epoch produced a finite score
    epochs_run: int = 0
    epochs_planned: int = 0
    history: list[dict] = field(default_factory=list)
    stopped: str = "completed"  # or "early stop: ...", "time budget", ...
    precision: str = ""


@dataclass
class FoldFiles:
    best: Path  # the best epoch: weights, score and validation rows (what prediction uses)
    last: Path  # the latest epoch: everything needed to resume

    @property
    def done(self) -> Path:
        """The fold's summary, written when it finishes."""
        return self.best.with_suffix(".json")


@torch.inference_mode()
def evaluate(model: nn.Module, task: Task, batches: Iterable[Batch], precision: Precision, collective=None):
    """Mean loss and the concatenated metric rows (numpy; float32 for floats) over `batches`; with a
    `collective`, over every rank's batches (each rank holds a shard), the same answer on every rank."""
    model = _unwrap(model)  # no DDP forward here: ranks hold shards of different sizes
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
    model.train()
    if collective is not None and collective.world > 1:
        shards = collective.gather((loss_sum, count, parts))
        loss_sum, count = sum(x[0] for x in shards), sum(x[1] for x in shards)
        parts = {k: [a for x in shards for a in x[2].get(k, [])] for k in shards[0][2]}
    return loss_sum / max(count, 1), {k: np.concatenate(v) for k, v in parts.items()}


class _Fallback(Exception):
    """Non-finite losses persisted under mixed precision."""


def fit(
    model: nn.Module,
    task: Task,
    train: Iterable[Batch],
    val: Iterable[Batch],
    cfg: FitConfig,
    precision: Precision,
    files: FoldFiles,
    log: Callable[[str], None] = print,
    desc: str = "",
    budget=None,  # kit.runtime.budget.Budget, or None for no deadline
    fold: tuple[int, int] = (0, 1),  # (this fold, folds in all), for the budget's plan
    monitor=None,  # kit.runtime.monitor.Monitor
    collective=None,  # kit.runtime.distributed.Collective: the data-parallel peers, if any
) -> FitResult:
    """Train for `cfg.epochs` (or fewer: early stopping, the budget), keeping the best epoch at `files.best`
    and the latest at `files.last`; a `files.last` left by an interrupted run is resumed. Under DDP every
    rank runs this; rank 0 alone logs and writes, and every decision (skip a step, stop, the plan) is taken
    together."""
    from kit.runtime.distributed import Collective

    loop = _Loop(model, task, train, val, cfg, precision, files, log, desc, budget, fold, monitor, collective or Collective())
    return loop.run()


class _Loop:
    def __init__(self, model, task, train, val, cfg, precision, files, log, desc, budget, fold, monitor, collective):
        self.model, self.task, self.train, self.val, self.cfg = model, task, train, val, cfg
        self.files, self.desc, self.budget, self.fold, self.monitor = files, desc, budget, fold, monitor
        self.dist = collective
        self.log = log if collective.main else (lambda message: None)
        self.precision = precision
        self.optimizer = make_optimizer(model, cfg.lr, cfg.weight_decay)
        self.scaler = precision.grad_scaler()
        self.steps_per_epoch = len(train) if isinstance(train, Sized) else 0
        self.micro = 0
        self.step = 0
        planned = budget.current.epochs if budget is not None and budget.current else cfg.epochs
        self.result = FitResult(epochs_planned=planned, precision=precision.name)
        self.planned = budget is not None and budget.epoch_s > 0  # a first plan needs the first steps' times

    # -- checkpoints --------------------------------------------------------------------------------------
    def save_last(self) -> None:
        if not self.dist.main:
            return
        checkpoint.save(
            {
                "model": _state_dict(self.model),
                "optimizer": self.optimizer.state_dict(),
                "scaler": self.scaler.state_dict(),
                "step": self.step,
                "micro": self.micro,
                "precision": self.precision.name,
                "result": dataclasses.asdict(self.result),
            },
            self.files.last,
        )

    def load_last(self) -> None:
        state = checkpoint.load(self.files.last)
        _unwrap(self.model).load_state_dict(state["model"])
        if state["precision"] != self.precision.name:
            self.precision = Precision(state["precision"], self.precision.device_type)
            self.scaler = self.precision.grad_scaler()
        self.optimizer.load_state_dict(state["optimizer"])
        self.scaler.load_state_dict(state["scaler"])
        self.step, self.micro, self.result = state["step"], state["micro"], FitResult(**state["result"])

    # -- the loop -----------------------------------------------------------------------------------------
    def run(self) -> FitResult:
        if self.dist.broadcast(self.files.last.exists()):  # rank 0's view, so every rank resumes or none
            self.load_last()
            r = self.result
            self.log(f"{self.desc}: resuming after epoch {r.epochs_run} from {self.files.last.name}")
            r.epochs_planned = self.cfg.epochs  # a new run has a new budget: plan again from the request
        else:
            self.save_last()  # epoch 0: what a fall-back to fp32 in the first epoch restarts from
            self.dist.barrier()
        while self.result.epochs_run < self.result.epochs_planned and self.result.stopped == "completed":
            try:
                self.epoch(self.result.epochs_run + 1)
            except _Fallback:
                if self.precision.name == "fp32":
                    self.result.stopped = "non-finite loss in fp32 (lower lr?)"
                    self.log(f"WARNING: {self.desc}: the loss stays non-finite in fp32; the fold stops at its best epoch")
                    break
                failed = self.precision.name
                self.load_last()
                self.precision = self.precision.fallback()
                self.scaler = self.precision.grad_scaler()
                self.result.precision = self.precision.name
                self.log(
                    f"WARNING: {self.desc}: non-finite losses keep coming under {failed}; "
                    f"falling back to fp32 and redoing epoch {self.result.epochs_run + 1} from the last checkpoint"
                )
        return self.result

    def lr_at(self, step: int) -> float:
        total = self.result.epochs_planned * self.steps_per_epoch
        warmup = round(self.cfg.warmup_epochs * self.steps_per_epoch)
        return self.cfg.lr * warmup_cosine(step, total, min(warmup, max(total - 1, 0)))

    def epoch(self, epoch: int) -> None:
        r, cfg = self.result, self.cfg
        started = time.time()
        if self.monitor:
            self.monitor.epoch_begin()
        seen, loss_sum, wait_s, step_s, bad_in_row, skipped, deadline_hit = 0, None, 0.0, 0.0, 0, 0, False
        deadline = self.deadline()
        bar = progress.bar(total=self.steps_per_epoch, desc=f"{self.desc} epoch {epoch}/{r.epochs_planned}", leave=False)
        batches = iter(self.train)
        steps = 0
        while True:
            t0 = time.time()
            batch = next(batches, None)
            t1 = time.time()
            if batch is None:
                break
            wait_s += t1 - t0
            if self.dist.any(t1 > deadline):
                deadline_hit = True
                break
            for group in self.optimizer.param_groups:
                group["lr"] = self.lr_at(self.step)
            loss = self.step_with_recovery(batch)
            step_s += time.time() - t1
            self.step += 1
            steps += 1
            bar.update(1)
            if loss is None:
                skipped += 1
                bad_in_row += 1
                if bad_in_row >= NONFINITE_PATIENCE:
                    bar.close()
                    raise _Fallback()
                continue
            bad_in_row = 0
            loss_sum = loss if loss_sum is None else loss_sum + loss
            seen += batch_size_of(batch)
            if self.budget and not self.planned and steps == min(3, max(self.steps_per_epoch - 1, 1)):
                self.first_plan(step_s / steps, seen / max(step_s, 1e-9))
                deadline = self.deadline()
        bar.close()
        if steps and skipped == steps:
            raise _Fallback()  # not one finite step this epoch (fewer steps than the patience)
        if skipped:
            self.log(f"WARNING: {self.desc} epoch {epoch}: skipped {skipped} steps with a non-finite loss")
        train_s = time.time() - started
        v0 = time.time()
        val_loss, rows = evaluate(self.model, self.task, self.val, self.precision, self.dist)
        val_s = time.time() - v0
        score = metrics.score(cfg.metric, rows["pred"], rows["target"], rows.get("weight")) if len(rows.get("target", [])) else float("nan")
        improved = metrics.better(cfg.metric, score, r.best_score if r.best_epoch else None)
        if improved:
            r.best_score, r.best_epoch = score, epoch
            if self.dist.main:
                checkpoint.save({"model": _state_dict(self.model), "epoch": epoch, "score": score, "rows": rows}, self.files.best)
        record = {
            "epoch": epoch,
            "train_loss": float(loss_sum) / max(steps - skipped, 1) if loss_sum is not None else float("nan"),
            "val_loss": val_loss,
            cfg.metric: score,
            "lr": self.optimizer.param_groups[0]["lr"],
            "samples_per_s": seen / max(step_s, 1e-9),
            "seconds": time.time() - started,
            "steps": steps,
        }
        stats = self.monitor.epoch_end(wait_s, step_s, self._batch_size()) if self.monitor else None
        if stats:
            record.update(gpu_util=stats.util, gpu_mem_gb=stats.mem_gb, data_wait=stats.data_wait)
        r.history.append(record)
        r.epochs_run = epoch
        self.log(_epoch_line(self.desc, record, r.epochs_planned, cfg.metric, improved, stats))
        if stats and stats.diagnosis:
            self.log(f"  {stats.diagnosis}")
        if deadline_hit:
            r.stopped = "time budget"
        elif cfg.patience and r.best_epoch and epoch - r.best_epoch >= cfg.patience:
            r.stopped = f"early stop: no better {cfg.metric} for {cfg.patience} epochs"
        if self.budget and r.stopped == "completed":
            self.budget.measure_epoch(train_s, val_s, len(rows.get("target", [])))
            self.replan(epoch)
        self.save_last()
        self.dist.barrier()  # rank 0's checkpoints are on disk before any rank might read them

    def step_with_recovery(self, batch: Batch):
        """`train_step`, retried with half the micro-batch for as long as it runs out of memory."""
        while True:
            failed = False
            try:
                return train_step(self.model, self.task, batch, self.optimizer, self.scaler, self.precision,
                                  self.cfg.grad_clip, self.micro, agree=self.dist.any if self.dist.world > 1 else None)
            except Exception as e:  # noqa: BLE001 - only out-of-memory errors are handled, the rest re-raised
                if not is_oom(e):
                    raise
                if self.dist.world > 1:  # peers are already waiting in the all-reduce: stop them all, clearly
                    raise KitError(f"{self.desc}: out of memory at {batch_size_of(batch)} samples per GPU under DDP; "
                                   "set a smaller batch_size") from None
                failed = True
            if failed:  # outside the except block, so the failed step's frames and tensors are gone
                self.optimizer.zero_grad(set_to_none=True)
                free_memory()
                size = (self.micro or batch_size_of(batch)) // 2
                if size < 1:
                    raise KitError(f"{self.desc}: out of memory even with micro-batches of 1; lower image_size or use a smaller model")
                self.micro = size
                self.log(
                    f"WARNING: {self.desc}: out of memory at {batch_size_of(batch)} samples per step; now micro-batches "
                    f"of {size}, accumulating gradients to keep the batch"
                )

    def deadline(self) -> float:
        """When training steps must stop: in time to validate, then predict with the planned fold models."""
        if self.budget is None:
            return math.inf
        return self.budget.train_deadline(self.budget.current.folds if self.budget.current else self.fold[1])

    def first_plan(self, step_s: float, rows_per_s: float) -> None:
        val_rows = len(self.val) * getattr(self.val, "batch_size", 1) if isinstance(self.val, Sized) else 0
        self.budget.estimate_epoch(step_s, self.steps_per_epoch, rows_per_s, val_rows)
        self.planned = True
        self.replan(0, announce=self.budget.current is None)

    def replan(self, epochs_done: int, announce: bool = False) -> None:
        r, b = self.result, self.budget
        p = b.replan(self.fold[0], self.fold[1], epochs_done, self.cfg.epochs)
        r.epochs_planned = max(p.epochs, epochs_done)
        told = b.announced
        # re-announce only real changes: a dropped fold, or epochs moving by more than a fifth
        if announce or told is None or told.folds != p.folds or abs(p.epochs - told.epochs) > 0.2 * told.epochs:
            self.log(b.describe(p, self.fold[1], self.cfg.epochs))
            b.announced = p

    def _batch_size(self) -> int:
        return getattr(self.train, "batch_size", 0) or 0


def _unwrap(model: nn.Module) -> nn.Module:
    model = getattr(model, "module", model)  # DistributedDataParallel wraps the module
    return getattr(model, "_orig_mod", model)  # and so does torch.compile


def _state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu() for k, v in _unwrap(model).state_dict().items()}


def _epoch_line(desc: str, r: dict, epochs: int, metric: str, improved: bool, stats) -> str:
    gpu = f" | {stats.line()}" if stats else ""
    return (
        f"{desc} epoch {r['epoch']:>2}/{epochs} | train loss {r['train_loss']:.4f} | val loss {r['val_loss']:.4f}"
        f" | {metric} {r[metric]:.4f}{' *' if improved else '  '} | {r['samples_per_s']:.0f} samples/s{gpu}"
        f" | {r['seconds']:.1f} s"
    )
