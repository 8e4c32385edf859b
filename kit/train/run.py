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

from kit import files
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


def resolve_batch(session: Session, pipe, data, train_rows: int) -> tuple[int, float]:
    """(batch size, learning rate): as given, or for "auto" tuned once and kept for later runs."""
    p = session.params
    if isinstance(p.batch_size, int):
        return p.batch_size, p.lr
    saved = session.checkpoint_dir / "batch.json"
    if saved.exists():
        chosen = checkpoint.load_json(saved)
        session.log(f"batch_size auto: {chosen['batch_size']} (chosen by the earlier run), lr {chosen['lr']:.3g}")
        return chosen["batch_size"], chosen["lr"]
    if session.hardware.device != "cuda":
        size = batch_tuning.CPU_BATCH
        session.log(f"batch_size auto: {size} on the CPU")
    else:
        session.log(f"batch_size auto: trying batch sizes on {session.hardware.gpu_name}")
        model = pipe.model(data)
        size = batch_tuning.autotune(
            model, pipe.task(data), lambda n: pipe.make_batch(data, n), session.precision, train_rows, session.log
        )
        del model
        free_memory()
    lr = batch_tuning.scaled_lr(p.lr, size)
    session.log(f"batch_size auto: {size}; lr {p.lr:g} x sqrt({size}/{batch_tuning.REFERENCE_BATCH}) = {lr:.3g}")
    checkpoint.save_json({"batch_size": size, "lr": lr}, saved)
    return size, lr


def train_folds(session: Session, pipe, data) -> CVResult:
    """Train each fold of `pipe.split(data)` within the time budget."""
    splits = pipe.split(data)
    session.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    size, lr = resolve_batch(session, pipe, data, len(splits[0][0]))
    pipe.batch_size = size
    cfg = replace(fit_config(session), lr=lr)
    budget = Budget(session.started, total_budget(session.params.time_budget_s), pipe.predict_rows(data))
    monitor = Monitor(session.hardware.device).start()
    result = CVResult(metric=cfg.metric, planned=len(splits), monitor=monitor)
    try:
        for fold, (train_idx, val_idx) in enumerate(splits):
            saved = fold_files(session, fold)
            done = saved.best.with_suffix(".json")
            desc = f"fold {fold + 1}/{len(splits)}"
            if done.exists() and saved.best.exists():
                summary = checkpoint.load_json(done)
                session.log(f"{desc}: finished earlier ({cfg.metric} {summary['best_score']:.4f}), reusing its checkpoint")
                result.folds.append(summary)
                continue
            if budget.epoch_s > 0 and fold >= budget.replan(fold, len(splits), 0, cfg.epochs).folds:
                session.log(f"{desc}: skipped, and the folds after it: the time budget has no room for them")
                break
            seed_everything(session.params.seed + fold)
            session.log(f"{desc}: {len(train_idx)} train / {len(val_idx)} validation")
            try:
                fitted = fit(
                    maybe_compile(session, pipe.model(data, fit_rows=train_idx)),
                    pipe.task(data),
                    pipe.batches(data, train_idx, train=True, batch_size=size, seed=session.params.seed + fold),
                    pipe.batches(data, val_idx, train=False, batch_size=size),
                    cfg,
                    session.precision,
                    saved,
                    log=session.log,
                    desc=desc,
                    budget=budget,
                    fold=(fold, len(splits)),
                    monitor=monitor,
                )
            except Exception as e:  # noqa: BLE001
                # With a fold checkpoint on disk, a submission from it beats none: log, stop training, predict.
                # Without one, nothing is lost by failing now, and a mistake is best seen at once.
                if not fold_checkpoints(session):
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
            checkpoint.save_json(summary, done)
            os.unlink(saved.last)  # the fold is finished: its resume state is no longer needed
            result.folds.append(summary)
            if fitted.stopped == "time budget":
                if fold + 1 < len(splits):
                    session.log(f"time budget: training stops after {desc}; predicting with the folds that exist")
                break
    finally:
        monitor.stop()
    rows = [checkpoint.load(fold_files(session, f["fold"]).best)["rows"] for f in result.folds]
    if rows:
        joined = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        result.score = metrics.score(cfg.metric, joined["pred"], joined["target"], joined.get("weight"))
        prior = np.tile(pipe.prior(data), (len(joined["target"]), 1))
        result.baseline = metrics.score(cfg.metric, prior, joined["target"], joined.get("weight"))
        result.baseline_name = "the training mean" if len(pipe.prior(data)) == 1 else "the class prior"
    session.log(summary_table(result))
    files.write_text(session.output_dir / "cv.json", json.dumps(
        {"metric": cfg.metric, "score": result.score, "baseline": result.baseline, "folds": result.folds},
        indent=1, default=float))
    return result


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
