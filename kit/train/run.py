"""Cross-validated training: every fold through the one loop, under the time budget, resumable.

Files in the run's folder, <output_dir>/checkpoints/<run>/ (kit.runtime.runs): fold<k>.pt (the best epoch:
weights, score, validation rows), fold<k>.last.pt (the latest epoch, while the fold is unfinished),
fold<k>.json (written when it finishes), batch.json (the automatic batch size, and the GPU it was tuned on).
A run with the same settings reuses finished folds untouched and resumes an unfinished one from its last
epoch; a run with other settings gets a folder of its own.
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
from kit.runtime import checkpoint, faults, hardware, preflight, runs
from kit.runtime.budget import Budget, total_budget
from kit.runtime.monitor import Monitor
from kit.runtime.precision import InForce
from kit.runtime.recovery import describe_error, free_memory
from kit.runtime.session import Session, maybe_compile, seed_everything
from kit.train import metrics
from kit.train.loop import FitConfig, FoldFiles, fit
from kit.train.predict import fold_checkpoints

TUNED = "the fastest that fits"
RAM_SHARE = 0.8  # parallel workers start only if their copies of the data fit in this share of free RAM


@dataclass
class CVResult:
    metric: str
    folds: list[dict] = field(default_factory=list)  # one summary per finished fold
    score: float = float("nan")  # out-of-fold score over the finished folds
    baseline: float = float("nan")  # the same rows predicted with the training mean (or class prior)
    baseline_name: str = "the training mean"
    threshold: float | None = None  # F-score metrics of label sets: where the out-of-fold score is taken
    planned: int = 0
    monitor: Monitor | None = None
    error: str = ""  # what stopped training early, if something failed after a fold checkpoint existed

    @property
    def finished(self) -> list[int]:
        return [f["fold"] for f in self.folds]


def fold_files(session: Session, fold: int) -> FoldFiles:
    d = session.checkpoint_dir
    return FoldFiles(best=d / f"fold{fold}.pt", last=d / f"fold{fold}.last.pt")


def stamp(session: Session, pipe, data) -> dict:
    """What travels in every fold checkpoint so that an inference kernel can rebuild and use the model with
    only the test files (kit.runtime.trained): format, kit version, template, the run's parameters and the
    pipeline's recipe of the training data."""
    import kit

    return {"format": runs.FORMAT, "version": kit.__version__, "template": session.template,
            "params": runs.deciding(session), "recipe": pipe.recipe(data)}


def fit_config(session: Session) -> FitConfig:
    p = session.params
    return FitConfig(
        epochs=p.epochs,
        lr=p.lr,
        weight_decay=p.weight_decay,
        warmup_epochs=p.warmup_epochs,
        patience=p.patience,
        metric=session.spec.metric,
        ema=p.ema,
        layer_decay=getattr(p, "layer_decay", 1.0),
    )


def resolve_batch(session: Session, pipe, data, train_rows: int, peers=None, replicas: int = 1,
                  train: bool = True) -> tuple[int, float]:
    """(batch size per worker, learning rate): as given, or for "auto" tuned once where the training runs
    (kept in batch.json for later runs and for prediction) with the learning rate scaled to the batch of all
    `replicas`. `peers`: the workers that tune together and agree (kit.runtime.distributed)."""
    from kit.runtime.distributed import Collective

    p = session.params
    peers = peers or Collective()
    if isinstance(p.batch_size, int):
        return p.batch_size, p.lr
    saved = session.checkpoint_dir / "batch.json"
    tuned_on = {"device": session.hardware.gpu_name or session.hardware.device, "ddp": replicas > 1}
    earlier = checkpoint.load_json(saved) if saved.exists() else {}
    if peers.broadcast(all(earlier.get(k) == v for k, v in tuned_on.items())):  # rank 0's view: all tune, or none
        size, how = earlier["batch_size"], "chosen by an earlier run"
    elif not session.plan.autotune or not train:
        size, how = batch_tuning.CPU_BATCH, "on the CPU" if train else "nothing tuned yet"
    else:
        size, how = tune_batch(session, pipe, data, train_rows, peers, ddp=replicas > 1)
        if peers.main and how == TUNED:  # a fixed batch after failed trials is not kept: the next run tries again
            checkpoint.save_json({"batch_size": size, **tuned_on}, saved)
    total = size * replicas * getattr(p, "accumulate", 1)  # rows per optimizer step
    lr = batch_tuning.scaled_lr(p.lr, total)
    per = f" per worker, {total} in all" if replicas > 1 else ""
    if peers.main:
        ref = batch_tuning.REFERENCE_BATCH
        cap = batch_tuning.MAX_LR_FACTOR
        rule = f"lr {p.lr:g} x min(sqrt({total}/{ref}), {cap:g}) = {lr:.3g}" if total > ref else f"lr {p.lr:g} (a batch of {ref} or fewer keeps it)"
        session.log(f"batch_size auto: {size}{per} ({how}); {rule}")
    return size, lr


def tune_batch(session: Session, pipe, data, train_rows: int, peers, ddp: bool = False) -> tuple[int, str]:
    """batch_size="auto" on this GPU: trials on the real model and data path (kit.runtime.batch), with DDP's
    share added when the batch is for DDP. Trials that fail for another reason than memory leave a fixed
    batch, with one line: the run goes on."""
    say = session.log if peers.main else (lambda message: None)
    say(f"batch_size auto: trying batch sizes on {session.hardware.gpu_name or session.hardware.device}")
    pool = pipe.trial_rows(data)

    def batches(n: int):  # enough rows for the trial's steps and the batch in flight, no loader processes
        rows = np.resize(pool, n * 6)
        return pipe.batches(data, rows, train=True, batch_size=n, seed=session.params.seed, workers=0)

    model = pipe.model(data, pretrained=False, fit_rows=pool)
    failure = ""
    try:
        faults.fail("fail.autotune")
        size = batch_tuning.autotune(model, pipe.task(data), batches, session.precision, train_rows, say,
                                     batch_tuning.Probe(session.device), peers, batch_tuning.ddp_extra(model) if ddp else 0)
    except Exception as e:  # noqa: BLE001 - an accelerant that fails is turned off, whatever the error
        failure = describe_error(e)
    del model
    free_memory()
    failed = peers.any(bool(failure))  # every worker keeps the same batch
    if not failed:
        return size, TUNED
    if failure:
        session.warn(f"batch_size auto: the trials failed ({failure}); a fixed batch of {batch_tuning.CPU_BATCH} instead")
    return batch_tuning.CPU_BATCH, "fixed, after failed trials"


def train_folds(session: Session, pipe, data) -> CVResult:
    """Train each fold of `pipe.split(data)` within the time budget: here, or in worker processes on
    several GPUs (`parallel`, `world_size`); either way the result is collected from the fold files."""
    from kit.runtime import distributed

    p = session.params
    if session.trained is not None:
        return trained_folds(session, pipe, data)
    runs.open_run(session, pipe, data)
    splits = pipe.split(data)
    gpus = session.hardware.gpu_count if session.hardware.device == "cuda" else 0
    pending = tuple(f for f in range(len(splits)) if not fold_done(session, f))
    # the folds left to train decide: a fold-parallel worker without a fold would wait for the others in vain
    mode, world, why = distributed.choose(p.parallel, p.world_size, len(pending), gpus) if pending else ("none", 1, "")
    if world == 1:
        mode = "none"
    if mode != "none":
        need, available = pipe.host_bytes(data) * (world + 1), hardware.available_ram_bytes()
        if available and need > RAM_SHARE * available:  # each worker loads its own copy of the data
            session.warn(f"parallel: {world} workers would need about {need / 2**30:.1f} GB of RAM for their copies of "
                         f"the data, and {available / 2**30:.1f} GB are free; training in this process instead")
            mode = "none"
    if mode == "none":
        return train_local(session, pipe, data)
    session.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    session.log(f"parallel: {mode} on {world} workers ({why}); folds to train: {[f + 1 for f in pending]}")
    # the workers take the GPUs: this process gives back what it holds there (they tune the batch themselves)
    pipe.release(data)
    free_memory()
    failure = distributed.launch(session, mode, world, pending)
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


def train_local(session: Session, pipe, data, folds=None, collective=None, train: bool = True, peers=None) -> CVResult:
    """Train `folds` (default: all) in this process, one after the other; with `train=False`, only collect
    the folds already finished. In a DDP worker, `collective` joins this process to its peers; in a
    fold-parallel worker, `peers` are the other workers, with whom only the batch size is agreed."""
    from kit.runtime import distributed

    collective = collective or distributed.Collective()
    say = session.log if collective.main else (lambda message: None)  # DDP: rank 0 speaks for all
    runs.open_run(session, pipe, data)  # in a worker: the notebook's run, made of the same settings and data
    splits = pipe.split(data)
    session.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    mine = [f for f in range(len(splits)) if (folds is None or f in folds) and not fold_done(session, f)]
    peers = peers or collective
    if train and mine:
        preflight.run(session, pipe, data, peers)
    size, lr = resolve_batch(session, pipe, data, len(splits[0][0]), peers=peers, replicas=collective.world, train=train)
    pipe.batch_size = size
    # gradient accumulation: batches of `accumulate` x the batch size, stepped in micro-batches of the batch size
    accumulate = getattr(session.params, "accumulate", 1)
    cfg = replace(fit_config(session), lr=lr, micro=size if accumulate > 1 else 0)
    budget = Budget(session.started, total_budget(session.params.time_budget_s), pipe.predict_rows(data),
                    other_models=len(splits) - len(mine))  # folds trained elsewhere are predicted too
    monitor = Monitor("cuda" if session.plan.monitor else "cpu",
                      device_index=torch.cuda.current_device() if session.hardware.device == "cuda" else 0)
    if train:  # collecting finished folds samples nothing
        monitor.start()
    result = CVResult(metric=cfg.metric, planned=len(splits), monitor=monitor)
    shard = (collective.rank, collective.world)
    stamped = stamp(session, pipe, data)
    try:
        for fold, (train_idx, val_idx) in enumerate(splits):
            saved = replace(fold_files(session, fold), stamp=stamped)
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
            # rank 0's plan: ranks that skipped on their own clocks would leave the others waiting
            room = budget.epoch_s <= 0 or position < budget.replan(position, len(mine), 0, cfg.epochs).folds
            if not collective.broadcast(room):
                say(f"{desc}: skipped, and the folds after it here: the time budget has no room for them")
                break
            if session.worker is not None:
                distributed.worker_faults(session.worker)
            seed_everything(session.params.seed + fold)
            say(f"{desc}: {len(train_idx)} train / {len(val_idx)} validation")
            precision = InForce(session.precision)  # what this fold trains with: the loop may switch it
            try:
                fitted = fit(
                    maybe_compile(session, collective.wrap(pipe.model(data, fit_rows=train_idx))),
                    pipe.task(data),
                    pipe.batches(data, train_idx, train=True, batch_size=size * accumulate, seed=session.params.seed + fold, shard=shard,
                                 precision=precision),
                    pipe.batches(data, val_idx, train=False, batch_size=size, shard=shard, precision=precision),
                    cfg,
                    precision,
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
    return summarize(session, pipe, data, result)


def trained_folds(session: Session, pipe, data) -> CVResult:
    """Predict mode: no training; the training run's finished folds, as it summarised them, and the batch
    size its tuning chose where it ran on this kind of device."""
    folder = session.checkpoint_dir
    session.log(f"predict mode: nothing trains here; the folds of {folder}")
    result = CVResult(metric=session.spec.metric, planned=len(session.trained.folds))
    for fold in session.trained.folds:
        saved = fold_files(session, fold)
        if saved.done.exists():
            result.folds.append(checkpoint.load_json(saved.done))
    pipe.batch_size, _ = resolve_batch(session, pipe, data, 0, train=False)
    return summarize(session, pipe, data, result)


def summarize(session: Session, pipe, data, result: CVResult) -> CVResult:
    """The out-of-fold score of the finished folds (from the validation rows their checkpoints keep), against
    the prior's, logged as a table and written to cv.json."""
    result.folds.sort(key=lambda f: f["fold"])
    rows = [checkpoint.load(fold_files(session, f["fold"]).best)["rows"] for f in result.folds]
    if rows:
        joined = metrics.join_rows(rows)
        multilabel = joined["target"].ndim == 2 and result.metric not in metrics.VALUE_METRICS  # not several values
        if multilabel and result.metric in metrics.THRESHOLDED:  # the score is taken at the threshold it searches for
            cut, result.score = metrics.decide(result.metric, joined["pred"], joined["target"], joined.get("weight"))
            result.threshold = cut.threshold
        else:
            result.score = metrics.score(result.metric, joined["pred"], joined["target"], joined.get("weight"))
        prior = pipe.prior(data)
        result.baseline = metrics.score(result.metric, np.tile(prior, (len(joined["target"]), 1)), joined["target"],
                                        joined.get("weight"))
        result.baseline_name = ("each label's frequency" if multilabel else
                                "the training mean" if len(prior) == 1 or joined["target"].ndim == 2 else "the class prior")
    if session.worker is None:
        session.log(summary_table(result))
        files.write_text(session.output_dir / "cv.json", json.dumps(
            {"metric": result.metric, "score": result.score, "baseline": result.baseline,
             "baseline_name": result.baseline_name, "threshold": result.threshold, "folds": result.folds},
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
        f"{'' if result.threshold is None else f'at threshold {result.threshold:.2f} '}(predicting {result.baseline_name}: {result.baseline:.4f})"
    )
    return "\n".join(lines)
