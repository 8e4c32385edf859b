"""Cross-validated training: every fold through the one loop (or a pipeline's own `fit_fold`, the boosters'),
under the time budget, resumable.

Each fold writes its files in the run's folder (kit.runtime.run_folder names them): its best epoch (weights, score,
validation rows), its summary when it finishes, and its latest epoch in the scratch folder while it is unfinished.
A run with the same settings reuses finished folds untouched and resumes an unfinished one from its last
epoch; a run with other settings gets a folder of its own.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

import kit
from kit import files
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.pipelines.base import Pipeline
from kit.run import footprint, preflight
from kit.run.batch import resolve_batch
from kit.run.fallback import LabelsOnly
from kit.run.start import start
from kit.run.this_run import run_record
from kit.runtime import checkpoint, hardware, runs, workers
from kit.runtime.budget import Budget, total_budget
from kit.runtime.collective import Collective, main_only, sync_batchnorm
from kit.runtime.monitor import Monitor
from kit.runtime.precision import InForce
from kit.runtime.recovery import free_memory
from kit.runtime.run_folder import FoldFiles, RunFolder
from kit.runtime.session import Session, maybe_compile, seed_everything
from kit.train import metrics
from kit.train.loop import fit
from kit.train.results import FitConfig, FitResult, FoldFit

RAM_SHARE = 0.8  # parallel workers start only if their copies of the data fit in this share of free RAM


@dataclass
class CVResult:
    metric: str
    folds: list[dict] = field(default_factory=list)  # one summary per finished fold
    score: float = float("nan")  # out-of-fold score over the finished folds
    baseline: float = float("nan")  # the same rows predicted with the training mean (or class prior)
    baseline_name: str = "the training mean"
    threshold: float | None = None  # F-score metrics of label sets: where the out-of-fold score is taken
    cut: str = ""  # a pipeline's own cut (Pipeline.judge), in words: where the out-of-fold score is taken
    planned: int = 0
    monitor: Monitor | None = None
    error: str = ""  # what stopped training early, if something failed after a fold checkpoint existed
    folder: Path | None = None  # the run's folder (kit.runtime.runs), where its fold checkpoints are

    @property
    def finished(self) -> list[int]:
        return [f["fold"] for f in self.folds]


def stamp(session: Session, data: Any) -> dict:
    """What travels in every fold checkpoint so that an inference kernel can rebuild and use the model with
    only the test files (kit.runtime.trained): format, kit version, template, the run's parameters and the
    pipeline's recipe of the training data."""
    return {"format": runs.FORMAT, "version": kit.__version__, "template": session.template,
            "params": runs.deciding(session.params), "recipe": data.recipe}


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


def train_folds(session: Session, pipe: Pipeline, data: Any) -> CVResult:
    """Train each fold of `pipe.split(data)` within the time budget: here, or in worker processes on
    several GPUs (`parallel`, `world_size`); either way the result is collected from the fold files. In
    predict mode nothing trains: the training run's folds are collected."""
    p = session.params
    if isinstance(data, LabelsOnly):  # the data could not be read for training: the submission is the prior
        session.log("nothing trains: the data could not be read for training (the lines above say why)")
        return summarize(session, data, CVResult(metric=session.spec.metric, error=data.why))
    if session.trained is not None:
        return trained_folds(session, pipe, data)
    splits = pipe.split(data)
    folder = runs.open_run(session.output_dir, run_record(session, pipe, data, splits), session.log)
    pipe.run_files(data, folder)
    run = RunFolder(folder)
    gpus = session.hardware.gpu_count if session.hardware.device == "cuda" else 0
    pending = tuple(f for f in range(len(splits)) if not run.finished(f))
    # the folds left to train decide: a fold-parallel worker without a fold would wait for the others in vain
    mode, world, why = workers.choose(p.parallel, p.world_size, len(pending), gpus) if pending else ("none", 1, "")
    if mode == "ddp" and pipe.fits_folds:  # a model of its own (a booster) trains in one process: folds
        mode, world, why = "folds", min(world, len(pending)), "a fold per worker: these models train in one process each"
    if world == 1:
        mode = "none"
    if mode != "none":
        need, available = pipe.host_bytes(data) * (world + 1), hardware.available_ram_bytes()
        if available and need > RAM_SHARE * available:  # each worker loads its own copy of the data
            session.warn(f"parallel: {world} workers would need about {need / 2**30:.1f} GB of RAM for their copies of "
                         f"the data, and {available / 2**30:.1f} GB are free; training in this process instead")
            mode = "none"
    try:  # before anything trains, with the worker processes it starts: one line where nothing fits
        planned = footprint.kernel_plan(session, data, workers=world if mode != "none" else 0)
    except KitError as e:
        if p.fallback == "none":
            raise
        return failed(session, data, folder, len(splits), str(e))
    if mode == "none":
        try:
            return train_local(session, pipe, data, folder, writes_s=planned.tail_s)
        except Exception as e:  # noqa: BLE001  every fold failed before a checkpoint (after one, train_local predicts)
            if p.fallback == "none" or run.checkpoints():
                raise
            if not isinstance(e, KitError):  # a failure kit did not foresee: its traceback, for a report
                session.log("".join(traceback.format_exception(e)).rstrip())
            return failed(session, data, folder, len(splits), str(e) if isinstance(e, KitError) else f"{type(e).__name__}: {e}")
    session.log(f"parallel: {mode} on {world} workers ({why}); folds to train: {[f + 1 for f in pending]}")
    # the workers take the GPUs: this process gives back what it holds there (they tune the batch themselves)
    pipe.release(data)
    free_memory()
    failure = workers.launch("kit.run.folds:train_in_worker", _payload(session, folder, pending, world, planned.tail_s),
                             mode, world,
                             session.hardware.device, session.output_dir / "workers", session.warn)
    if failure:
        session.warn(f"a worker failed ({failure}); the others were stopped; predicting with the folds that exist")
    if failure and not run.checkpoints():
        if p.fallback == "none":
            raise KitError(f"training failed before any fold had a checkpoint: {failure}")
        return failed(session, data, folder, len(splits), failure)
    return collect(session, pipe, data, folder, len(splits), failure)


def failed(session: Session, data: Any, folder: Path, planned: int, error: str) -> CVResult:
    """A run whose training failed before any fold had a checkpoint: said loudly, and nothing to summarise; the
    submission step writes the training labels' prior (kit.run.fallback)."""
    session.warn(f"training failed before any fold had a checkpoint ({error}); the submission will be the training "
                 "labels' prior (fallback = \"prior\")")
    shutil.rmtree(RunFolder(folder).resume, ignore_errors=True)  # its resume state holds nothing to go on from
    return summarize(session, data, CVResult(metric=session.spec.metric, planned=planned, folder=folder, error=error))


def collect(session: Session, pipe: Pipeline, data: Any, folder: Path, planned: int, failure: str = "") -> CVResult:
    """The folds trained in `folder` by others (the workers, or predict mode's training run): the finished ones
    as they were summarised, and those a failure stopped after a best epoch was saved (they predict too)."""
    result = CVResult(metric=session.spec.metric, planned=planned, folder=folder, error=failure)
    run = RunFolder(folder)
    for fold in run.checkpoints():  # a finished fold has its checkpoint too
        saved = run.fold(fold)
        if saved.done.exists():
            result.folds.append(checkpoint.load_json(saved.done))
        else:
            meta = checkpoint.load(saved.meta)
            why = f"unfinished ({failure[:60]})" if failure else "unfinished"
            result.folds.append({"fold": fold, "best_score": meta["score"], "best_epoch": meta["epoch"],
                                 "epochs_run": meta["epoch"], "stopped": why, "history": []})
    return summarize(session, data, result, pipe)


def _payload(session: Session, folder: Path, folds: tuple[int, ...], world: int, writes_s: float) -> dict[str, Any]:
    """What a worker needs to rebuild the run, and nothing it cannot pickle."""
    params = {**dataclasses.asdict(session.params), "data_dir": str(session.data_dir), "output_dir": str(session.output_dir)}
    if params["num_workers"] < 0:  # the CPUs are shared: each worker gets its part for its loaders
        params["num_workers"] = max(1, session.hardware.cpu_count // world) if session.hardware.device == "cuda" else 0
    return {"template": session.template, "params": params, "competition": session.spec.to_dict(),
            "started": session.started, "folder": str(folder), "folds": folds, "writes_s": writes_s}


def train_in_worker(rank: int, job: workers.Job, collective: Collective, peers: Collective) -> None:
    """A worker's share of the training (kit.runtime.workers runs it): the run rebuilt from the job, then its
    folds (every `world`-th of them, or all of them together under DDP) into the notebook's run folder."""
    payload = job.payload
    session = start(payload["template"], {**payload["params"], "competition": payload["competition"]}, worker=rank)
    session.started = payload["started"]
    pipe = create_pipeline(session)
    data = pipe.load()
    folds = payload["folds"][rank :: job.world] if job.mode == "folds" else payload["folds"]
    train_local(session, pipe, data, Path(payload["folder"]), folds=folds, collective=collective, peers=peers,
                writes_s=payload.get("writes_s", 0.0))
    print(f"worker {rank} done in {time.time() - payload['started']:.0f} s since the notebook started")


@dataclass(frozen=True)
class Shared:
    """What every fold this process trains shares: the settings, the batch size (and the gradient accumulation's
    multiple of it), the time budget, the monitor, the data-parallel peers and this process's shard of the rows,
    the stamp its checkpoints carry, and whether BatchNorm is synchronised across the peers."""

    cfg: FitConfig
    size: int
    accumulate: int
    budget: Budget
    monitor: Monitor
    collective: Collective
    stamped: dict
    sync_bn: bool = False

    @property
    def shard(self) -> tuple[int, int]:
        return self.collective.rank, self.collective.world


def train_local(session: Session, pipe: Pipeline, data: Any, folder: Path, folds: list[int] | None = None,
                collective: Collective | None = None, peers: Collective | None = None, writes_s: float = 0.0) -> CVResult:
    """Train `folds` (default: all) of the run in `folder` in this process, one after the other. In a DDP
    worker, `collective` joins this process to its peers; in a fold-parallel worker, `peers` are the other
    workers, with whom only the batch size is agreed. `writes_s`: the writes after prediction the time budget
    keeps room for (the resource plan's tail)."""
    collective = collective or Collective()
    say = main_only(session.log, collective)  # DDP: rank 0 speaks for all
    splits = pipe.split(data)
    folder.mkdir(parents=True, exist_ok=True)
    run = RunFolder(folder)
    mine = [f for f in range(len(splits)) if (folds is None or f in folds) and not run.finished(f)]
    shared = share(session, pipe, data, folder, splits, mine, collective, peers or collective, writes_s)
    result = CVResult(metric=shared.cfg.metric, planned=len(splits), monitor=shared.monitor, folder=folder)
    try:
        for fold, (train_idx, val_idx) in enumerate(splits):
            saved = replace(run.fold(fold), stamp=shared.stamped)
            desc = f"fold {fold + 1}/{len(splits)}"
            if run.finished(fold):
                summary = checkpoint.load_json(saved.done)
                if folds is None:
                    say(f"{desc}: finished earlier ({shared.cfg.metric} {summary['best_score']:.4f}), reusing its checkpoint")
                result.folds.append(summary)
                continue
            if fold not in mine:
                continue
            position = mine.index(fold)  # the budget plans this process's folds
            # rank 0's plan: ranks that skipped on their own clocks would leave the others waiting
            budget = shared.budget
            room = budget.epoch_s <= 0 or position < budget.replan(position, len(mine), 0, shared.cfg.epochs).folds
            if not collective.broadcast(room):
                say(f"{desc}: skipped, and the folds after it here: the time budget has no room for them")
                break
            if session.worker is not None:
                workers.worker_faults(session.worker)
            seed_everything(session.params.seed + fold)
            say(f"{desc}: {len(train_idx)} train / {len(val_idx)} validation")
            try:
                fitted = train_fold(session, pipe, data, shared, fold, (train_idx, val_idx), saved, (position, len(mine)), desc)
            except Exception as e:  # noqa: BLE001
                # With a fold checkpoint on disk, a submission from it beats none: log, stop training, predict.
                # Without one, nothing is lost by failing now, and a mistake is best seen at once. A worker
                # re-raises: its peers must stop too, and the notebook then predicts.
                if not run.checkpoints() or collective.world > 1 or session.worker is not None:
                    raise
                session.log("".join(traceback.format_exception(e)).rstrip())
                session.warn(f"{desc} failed ({type(e).__name__}: {e}); training stops, predicting with the fold "
                             "checkpoints that exist")
                result.error = f"{type(e).__name__}: {e}"
                break
            free_memory()
            if not fitted.best_epoch:
                no_room = fitted.stopped == "time budget"  # a pipeline's own fit_fold found no time left to train
                session.warn(f"{desc}: the time budget has no room for it; it is left out, and the folds after it" if no_room
                             else f"{desc}: no epoch gave a finite {shared.cfg.metric}; this fold is left out")
                break
            result.folds.append(finish_fold(fold, fitted, saved, collective))
            if fitted.stopped == "time budget":
                if position + 1 < len(mine):
                    say(f"time budget: training stops after {desc}; predicting with the folds that exist")
                break
    finally:
        shared.monitor.stop()
    return summarize(session, data, result, pipe)


def share(session: Session, pipe: Pipeline, data: Any, folder: Path, splits: list, mine: list[int],
          collective: Collective, peers: Collective, writes_s: float) -> Shared:
    """What this process's folds share: the batch size (after the preflight, agreed with `peers`; a pipeline that
    trains its folds its own way, the boosters, has no batches), the settings at its rate, the time budget, and the
    monitor, started."""
    if not pipe.fits_folds:
        probe = preflight.Probe(session, pipe, data)  # one model for the preflight and the batch trials
        if mine:
            preflight.run(session, pipe, data, probe, peers)
        size, lr = resolve_batch(session, pipe, data, folder, len(splits[0][0]), peers=peers, replicas=collective.world,
                                 probe=probe)
        probe.discard()
    else:
        size, lr = session.params.batch_size if isinstance(session.params.batch_size, int) else 1, session.params.lr
    # gradient accumulation: batches of `accumulate` x the batch size, stepped in micro-batches of the batch size
    accumulate = getattr(session.params, "accumulate", 1)
    cfg = replace(fit_config(session), lr=lr, micro=size if accumulate > 1 else 0)
    budget = Budget(session.started, total_budget(session.params.time_budget_s), pipe.predict_rows(data),
                    other_models=len(splits) - len(mine), writes_s=writes_s)  # folds trained elsewhere are predicted too
    monitor = Monitor("cuda" if session.setup.monitor else "cpu",
                      device_index=torch.cuda.current_device() if session.hardware.device == "cuda" else 0)
    monitor.start()
    stamped = stamp(session, data)
    sync_bn = False
    if collective.world > 1 and hasattr(session.params, "sync_bn"):  # the BatchNorm templates under DDP
        sync_bn, why = sync_batchnorm(session.params.sync_bn, size)
        main_only(session.log, collective)(f"sync_bn        {'on' if sync_bn else 'off'} ({why})")
    return Shared(cfg, size, accumulate, budget, monitor, collective, stamped, sync_bn)


def train_fold(session: Session, pipe: Pipeline, data: Any, shared: Shared, fold: int, rows: tuple, saved: FoldFiles,
               place: tuple[int, int], desc: str) -> FitResult:
    """One fold through the one loop (or the pipeline's own `fit_fold`): its (train, validation) `rows`, its files,
    its `place` in this process's plan (this fold, folds in all)."""
    train_idx, val_idx = rows
    precision = InForce(session.precision)  # what this fold trains with: the loop may switch it
    if pipe.fits_folds:
        return pipe.fit_fold(data, train_idx, val_idx, shared.cfg, saved, shared.budget, place, session.log, desc)
    built = time.time()
    model = pipe.model(data, fit_rows=train_idx)
    shared.budget.model_s = time.time() - built  # prediction builds each fold's model too, and loads its weights
    size, shard = shared.size, shared.shard
    return fit(FoldFit(
        maybe_compile(session, shared.collective.wrap(model, shared.sync_bn)),
        pipe.objective(data),
        pipe.batches(data, train_idx, train=True, batch_size=size * shared.accumulate, seed=session.params.seed + fold,
                     shard=shard, precision=precision),
        pipe.batches(data, val_idx, train=False, batch_size=size, shard=shard, precision=precision),
        shared.cfg,
        precision,
        saved,
        log=session.log,
        desc=desc,
        budget=shared.budget,
        fold=place,
        monitor=shared.monitor,
        collective=shared.collective,
        val_rows=len(val_idx),
    ))


def finish_fold(fold: int, fitted: FitResult, saved: FoldFiles, collective: Collective) -> dict:
    """A finished fold's summary, written (by rank 0) beside its checkpoint; its resume state is no longer needed."""
    summary = {"fold": fold, "best_score": fitted.best_score, "best_epoch": fitted.best_epoch,
               "epochs_run": fitted.epochs_run, "stopped": fitted.stopped, "precision": fitted.precision,
               "history": fitted.history, "unit": fitted.unit}  # fmt: skip
    if collective.main:
        checkpoint.save_json(summary, saved.done)
        saved.last.unlink(missing_ok=True)
    collective.barrier()
    return summary


def trained_folds(session: Session, pipe: Pipeline, data: Any) -> CVResult:
    """Predict mode: no training; the training run's finished folds, as it summarised them, and the batch
    size its tuning chose where it ran on this kind of device."""
    folder = session.trained.folder
    session.log(f"predict mode: nothing trains here; the folds of {folder}")
    return collect(session, pipe, data, folder, len(session.trained.folds))


def summarize(session: Session, data: Any, result: CVResult, pipe: Pipeline | None = None) -> CVResult:
    """The out-of-fold score of the finished folds (from the validation rows their checkpoints keep), as the
    pipeline judges them (Pipeline.judge: against the prior's, unless a template reads its rows its own way), logged
    as a table and written to cv.json."""
    result.folds.sort(key=lambda f: f["fold"])
    rows = [checkpoint.load(RunFolder(result.folder).fold(f["fold"]).meta)["rows"] for f in result.folds]
    if rows and pipe is not None:  # no pipeline: nothing trained, no rows
        judged = pipe.judge(data, metrics.join_rows(rows), result.metric)  # segmentation's: its overlap counts, its cut
        result.score, result.baseline, result.baseline_name = judged.score, judged.baseline, judged.baseline_name
        result.threshold, result.cut = judged.threshold, judged.cut
    if session.worker is None:
        session.log(summary_table(result))
        files.write_text(session.output_dir / "cv.json", json.dumps(
            {"metric": result.metric, "score": result.score, "baseline": result.baseline,
             "baseline_name": result.baseline_name, "threshold": result.threshold, "cut": result.cut,
             "folds": result.folds},
            indent=1, default=float))
    return result


def summary_table(result: CVResult) -> str:
    if not result.folds:
        return f"no fold finished: no out-of-fold {result.metric}{f' ({result.error})' if result.error else ''}"
    unit = result.folds[0].get("unit", "epoch") if result.folds else "epoch"
    lines = [f"{'fold':>4}  {f'best {unit}':>10}  {f'{unit}s':>6}  {result.metric:>10}  stopped"]
    for f in result.folds:
        lines.append(
            f"{f['fold'] + 1:>4}  {f['best_epoch']:>10}  {f['epochs_run']:>6}  {f['best_score']:>10.4f}  {f['stopped']}"
        )
    lines.append(
        f"out-of-fold {result.metric} over {len(result.folds)} of {result.planned} folds: {result.score:.4f} "
        f"{'' if result.threshold is None else f'at threshold {metrics.threshold_text(result.threshold)} '}"
        f"{f'at {result.cut} ' if result.cut else ''}"
        f"(predicting {result.baseline_name}: {result.baseline:.4f})"
    )
    return "\n".join(lines)
