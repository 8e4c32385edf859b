"""The batch size a run trains and predicts with: the parameter, or for "auto" tuned once where the training
runs (kit.train.autobatch), kept in the run's batch.json for later runs and for prediction."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kit.pipelines.base import Pipeline
from kit.run.preflight import Probe
from kit.runtime import checkpoint, faults
from kit.runtime.collective import Collective, main_only
from kit.runtime.recovery import describe_error, free_memory
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session
from kit.train import autobatch

TUNED = "the fastest that fits"


def device_name(session: Session) -> str:
    return session.hardware.gpu_name or session.hardware.device


def prediction_batch(session: Session, folder: Path) -> int:
    """The batch a run's folds predict with (twice it, halved on out-of-memory errors): the parameter, else the
    size tuned on this kind of device (one process predicts, so a DDP worker's size serves), else the fixed one."""
    if isinstance(session.params.batch_size, int):
        return session.params.batch_size
    path = RunFolder(folder).batch
    saved = checkpoint.load_json(path) if path.exists() else {}
    return saved["batch_size"] if saved.get("device") == device_name(session) else autobatch.CPU_BATCH


def resolve_batch(session: Session, pipe: Pipeline, data: Any, folder: Path, train_rows: int,
                  peers: Collective | None = None, replicas: int = 1, probe: Probe | None = None) -> tuple[int, float]:
    """(batch size per worker, learning rate): as given, or for "auto" tuned once where the training runs
    (kept in the run `folder`'s batch.json for later runs and for prediction) with the learning rate scaled to
    the batch of all `replicas`. `peers`: the workers that tune together and agree (kit.runtime.workers)."""
    p = session.params
    peers = peers or Collective()
    if isinstance(p.batch_size, int):
        return p.batch_size, p.lr
    saved = RunFolder(folder).batch
    tuned_on = {"device": device_name(session), "ddp": replicas > 1}
    earlier = checkpoint.load_json(saved) if saved.exists() else {}
    if peers.broadcast(all(earlier.get(k) == v for k, v in tuned_on.items())):  # rank 0's view: all tune, or none
        size, how = earlier["batch_size"], "chosen by an earlier run"
    elif not session.setup.autotune:
        size, how = autobatch.CPU_BATCH, "on the CPU"
    else:
        size, how = tune_batch(session, pipe, data, train_rows, peers, ddp=replicas > 1,
                               probe=probe or Probe(session, pipe, data))
        if peers.main and how == TUNED:  # a fixed batch after failed trials is not kept: the next run tries again
            checkpoint.save_json({"batch_size": size, **tuned_on}, saved)
    total = size * replicas * getattr(p, "accumulate", 1)  # rows per optimizer step
    lr = autobatch.scaled_lr(p.lr, total)
    per = f" per worker, {total} in all" if replicas > 1 else ""
    if peers.main:
        ref = autobatch.REFERENCE_BATCH
        cap = autobatch.MAX_LR_FACTOR
        rule = (f"lr {p.lr:g} x min(sqrt({total}/{ref}), {cap:g}) = {lr:.3g}" if total > ref
                else f"lr {p.lr:g} (a batch of {ref} or fewer keeps it)")
        session.log(f"batch_size auto: {size}{per} ({how}); {rule}")
    return size, lr


def tune_batch(session: Session, pipe: Pipeline, data: Any, train_rows: int, peers: Collective,
               ddp: bool = False, probe: Probe | None = None) -> tuple[int, str]:
    """batch_size="auto" on this GPU: trials on the real model and data path (kit.train.autobatch), with DDP's
    share added when the batch is for DDP. Trials that fail for another reason than memory leave a fixed
    batch, with one line: the run goes on."""
    say = main_only(session.log, peers)
    say(f"batch_size auto: trying batch sizes on {session.hardware.gpu_name or session.hardware.device}")
    pool = pipe.trial_rows(data)

    def batches(n: int):  # enough rows for the trial's steps and the batch in flight, no loader processes
        rows = np.resize(pool, n * 6)
        return pipe.batches(data, rows, train=True, batch_size=n, seed=session.params.seed, workers=0)

    model = (probe or Probe(session, pipe, data)).model
    failure = ""
    try:
        faults.fail("fail.autotune")
        # what the run holds beside the trial's model: DDP's buckets, the moving average of the weights
        extra = (autobatch.ddp_extra(model) if ddp else 0) + (autobatch.ema_extra(model) if session.params.ema else 0)
        size = autobatch.autotune(model, pipe.objective(data), batches, session.precision, train_rows, say,
                                  autobatch.Probe(session.device), peers, extra)
    except Exception as e:  # noqa: BLE001 - an accelerant that fails is turned off, whatever the error
        failure = describe_error(e)
    del model
    if probe is not None:
        probe.discard()
    free_memory()
    failed = peers.any(bool(failure))  # every worker keeps the same batch
    if not failed:
        return size, TUNED
    if failure:
        session.warn(f"batch_size auto: the trials failed ({failure}); a fixed batch of {autobatch.CPU_BATCH} instead")
    return autobatch.CPU_BATCH, "fixed, after failed trials"
