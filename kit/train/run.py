"""Cross-validated training: every fold through the one loop, under the time budget, resumable.

Files in <output_dir>/checkpoints/: fold<k>.pt (the best epoch: weights, score, validation rows),
fold<k>.last.pt (the latest epoch, while the fold is unfinished), fold<k>.json (written when it finishes),
batch.json (the batch size and learning rate the run settled on). A run into the same output_dir reuses
finished folds untouched and resumes an unfinished one from its last epoch.
"""
from __future__ import annotations

import json
import os
import traceback
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from kit import files
from kit.errors import KitError
from kit.runtime import batch as batch_tuning
from kit.runtime import checkpoint
from kit.runtime.budget import Budget, total_budget
from kit.runtime.monitor import Monitor
from kit.runtime.recovery import free_memory
from kit.runtime.session import Session, maybe_compile, seed_everything
from kit.train import metrics
from kit.train.loop import FitConfig, FoldFiles, fit
from kit.train.predict import fold_checkpoints


@dataclass
class CVResult:
    metric: str
    folds: list[dict] = field(default_factory=list)  # one summary per finished fold
    score: float = float("nan")  # out-of-fold score over the finished folds
    baseline: float = float("nan")  # the same rows predicted with the training mean (or class prior)
    baseline_name: str = "the training mean"
    planned: int = 0
    monitor: Monitor | None = None
    error: str = ""  # what stopped training early, if something failed after a fold checkpoint existed

    @property
    def finished(self) -> list[int]:
        return [f["fold"] for f in self.folds]


def fold_files(session: Session, fold: int) -> FoldFiles:
    d = session.checkpoint_dir
    return FoldFiles(best=d / f"fold{fold}.pt", last=d / f"fold{fold}.last.pt")


def fit_config(session: Session) -> FitConfig:
    p = session.params
    return FitConfig(
        epochs=p.epochs,
        lr=p.lr,
        weight_decay=p.weight_decay,
        warmup_epochs=p.warmup_epochs,
        patience=p.patience,
        metric=session.spec.metric,
    )


def resolve_batch(session: Session, pipe, data, train_rows: int, replicas: int = 1) -> tuple[int, float]:
    """(batch size per worker, learning rate): as given, or for "auto" tuned once (kept in batch.json for
    later runs and for the workers) with the learning rate scaled to the batch of all `replicas`."""
    p = session.params
    if isinstance(p.batch_size, int):
        return p.batch_size, p.lr
    saved = session.checkpoint_dir / "batch.json"
    if saved.exists():
        size = checkpoint.load_json(saved)["batch_size"]
        how = "chosen by an earlier run"
    elif session.hardware.device != "cuda":
        size, how = batch_tuning.CPU_BATCH, "on the CPU"
    else:
        session.log(f"batch_size auto: trying batch sizes on {session.hardware.gpu_name}")
        model = pipe.model(data)
        size = batch_tuning.autotune(
            model, pipe.task(data), lambda n: pipe.make_batch(data, n), session.precision, train_rows, session.log
        )
        del model
        free_memory()
        how = "the fastest that fits"
        checkpoint.save_json({"batch_size": size}, saved)
    total = size * replicas
    lr = batch_tuning.scaled_lr(p.lr, total)
    per = f" per worker, {total} in all" if replicas > 1 else ""
    session.log(f"batch_size auto: {size}{per} ({how}); lr {p.lr:g} x sqrt({total}/{batch_tuning.REFERENCE_BATCH}) = {lr:.3g}")
    return size, lr


def train_folds(session: Session, pipe, data) -> CVResult:
    """Train each fold of `pipe.split(data)` within the time budget: here, or in worker processes on
    several GPUs (`parallel`, `world_size`); either way the result is collected from the fold files."""
    from kit.runtime import distributed

    p = session.params
    splits = pipe.split(data)
    gpus = session.hardware.gpu_count if session.hardware.device == "cuda" else 0
    mode, world, why = distributed.choose(p.parallel, p.world_size, len(splits), gpus)
    if mode == "none":
        return train_local(session, pipe, data)
    session.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    resolve_batch(session, pipe, data, len(splits[0][0]), replicas=world if mode == "ddp" else 1)
    pending = tuple(f for f in range(len(splits)) if not fold_done(session, f))
    session.log(f"parallel: {mode} on {world} workers ({why}); folds to train: {[f + 1 for f in pending]}")
    failure = distributed.launch(session, mode, world, pending) if pending else ""
    if failure:
        session.warn(f"a worker failed ({failure}); the others were stopped; predicting with the folds that exist")
    result = train_local(session, pipe, data, train=False)
    if failure and not result.folds:
        raise KitError(f"training failed before any fold finished: {failure}")
    result.error = failure
    return result


def fold_done(session: Session, fold: int) -> bool:
    saved = fold_files(session, fold)
    return saved.best.exists() and saved.done.exists()


def train_local(session: Session, pipe, data, folds=None, collective=None, train: bool = True) -> CVResult:
    """Train `folds` (default: all) in this process, one after the other; with `train=False`, only collect
    the folds already finished. In a DDP worker, `collective` joins this process to its peers."""
    from kit.runtime.distributed import Collective

    collective = collective or Collective()
    say = session.log if collective.main else (lambda message: None)  # DDP: rank 0 speaks for all
    splits = pipe.split(data)
    session.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    size, lr = resolve_batch(session, pipe, data, len(splits[0][0]), replicas=collective.world)
    pipe.batch_size = size
    cfg = replace(fit_config(session), lr=lr)
    mine = [f for f in range(len(splits)) if (folds is None or f in folds) and not fold_done(session, f)]
    budget = Budget(session.started, total_budget(session.params.time_budget_s), pipe.predict_rows(data),
                    other_models=len(splits) - len(mine))  # folds trained elsewhere are predicted too
    monitor = Monitor(session.hardware.device, device_index=torch.cuda.current_device() if session.hardware.device == "cuda" else 0)
    if train:  # collecting finished folds samples nothing
        monitor.start()
    result = CVResult(metric=cfg.metric, planned=len(splits), monitor=monitor)
    shard = (collective.rank, collective.world)
    try:
        for fold, (train_idx, val_idx) in enumerate(splits):
            saved = fold_files(session, fold)
            desc = f"fold {fold + 1}/{len(splits)}"
            if fold_done(session, fold):
                summary = checkpoint.load_json(saved.done)
                if train and folds is None:
                    say(f"{desc}: finished earlier ({cfg.metric} {summary['best_score']:.4f}), reusing its checkpoint")
                result.folds.append(summary)
                continue
            if not train or fold not in mine:
                continue
            position = mine.index(fold)  # the budget plans this process's folds
            if budget.epoch_s > 0 and position >= budget.replan(position, len(mine), 0, cfg.epochs).folds:
                say(f"{desc}: skipped, and the folds after it here: the time budget has no room for them")
                break
            _injected_fault(session, fold)
            seed_everything(session.params.seed + fold)
            say(f"{desc}: {len(train_idx)} train / {len(val_idx)} validation")
            try:
                fitted = fit(
                    collective.wrap(maybe_compile(session, pipe.model(data, fit_rows=train_idx))),
                    pipe.task(data),
                    pipe.batches(data, train_idx, train=True, batch_size=size, seed=session.params.seed + fold, shard=shard),
                    pipe.batches(data, val_idx, train=False, batch_size=size, shard=shard),
                    cfg,
                    session.precision,
                    saved,
                    log=session.log,
                    desc=desc,
                    budget=budget,
                    fold=(position, len(mine)),
                    monitor=monitor,
                    collective=collective,
                )
            except Exception as e:  # noqa: BLE001
                # With a fold checkpoint on disk, a submission from it beats none: log, stop training, predict.
                # Without one, nothing is lost by failing now, and a mistake is best seen at once. A worker
                # re-raises: its peers must stop too, and the notebook then predicts.
                if not fold_checkpoints(session) or collective.world > 1 or session.worker is not None:
                    raise
                session.log("".join(traceback.format_exception(e)).rstrip())
                session.warn(f"{desc} failed ({type(e).__name__}: {e}); training stops, predicting with the fold checkpoints that exist")
                result.error = f"{type(e).__name__}: {e}"
                break
            free_memory()
            if not fitted.best_epoch:
                session.warn(f"{desc}: no epoch gave a finite {cfg.metric}; this fold is left out")
                break
            summary = {"fold": fold, "best_score": fitted.best_score, "best_epoch": fitted.best_epoch,
                       "epochs_run": fitted.epochs_run, "stopped": fitted.stopped, "precision": fitted.precision,
                       "history": fitted.history}  # fmt: skip
            if collective.main:
                checkpoint.save_json(summary, saved.done)
                os.unlink(saved.last)  # the fold is finished: its resume state is no longer needed
            collective.barrier()
            result.folds.append(summary)
            if fitted.stopped == "time budget":
                if position + 1 < len(mine):
                    say(f"time budget: training stops after {desc}; predicting with the folds that exist")
                break
    finally:
        monitor.stop()
    result.folds.sort(key=lambda f: f["fold"])
    rows = [checkpoint.load(fold_files(session, f["fold"]).best)["rows"] for f in result.folds]
    if rows:
        joined = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        result.score = metrics.score(cfg.metric, joined["pred"], joined["target"], joined.get("weight"))
        prior = pipe.prior(data)
        result.baseline = metrics.score(cfg.metric, np.tile(prior, (len(joined["target"]), 1)), joined["target"],
                                        joined.get("weight"))
        result.baseline_name = "the training mean" if len(prior) == 1 else "the class prior"
    if session.worker is None:
        session.log(summary_table(result))
        files.write_text(session.output_dir / "cv.json", json.dumps(
            {"metric": cfg.metric, "score": result.score, "baseline": result.baseline,
             "baseline_name": result.baseline_name, "folds": result.folds},
            indent=1, default=float))
    return result


def _injected_fault(session: Session, fold: int) -> None:
    """Fault injection for the tests of worker failures: KIT_INJECT_FAULT=<worker>:<fold> raises in that
    worker as it starts that fold (0-based), the way a crash would."""
    where = os.environ.get("KIT_INJECT_FAULT", "")
    if where and session.worker is not None and where == f"{session.worker}:{fold}":
        raise RuntimeError(f"injected fault in worker {session.worker} at fold {fold + 1}")


def summary_table(result: CVResult) -> str:
    lines = [f"{'fold':>4}  {'best epoch':>10}  {'epochs':>6}  {result.metric:>10}  stopped"]
    for f in result.folds:
        lines.append(
            f"{f['fold'] + 1:>4}  {f['best_epoch']:>10}  {f['epochs_run']:>6}  {f['best_score']:>10.4f}  {f['stopped']}"
        )
    lines.append(
        f"out-of-fold {result.metric} over {len(result.folds)} of {result.planned} folds: {result.score:.4f} "
        f"(predicting {result.baseline_name}: {result.baseline:.4f})"
    )
    return "\n".join(lines)
