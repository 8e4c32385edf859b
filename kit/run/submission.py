"""Predict with every fold checkpoint that exists, and write a submission that is checked before it lands."""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit import files
from kit.errors import KitError
from kit.pipelines.base import Pipeline, csv_text, validate
from kit.run import fallback, footprint, predictions
from kit.run.batch import prediction_batch
from kit.run.this_run import run_folder
from kit.runtime import checkpoint, trained
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, halving
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session
from kit.train import topk
from kit.train.topk import TopK


def ensemble(session: Session, pipe: Pipeline, data: Any, folder: Path, oof: list | None = None,
             kept: predictions.Kept | None = None) -> tuple[np.ndarray | TopK | None, list[int]]:
    """Mean of the test predictions of every fold checkpoint in the run's `folder`, and which folds took part
    (their validation rows appended to `oof`, and each fold's predictions written by `kept` for blends, when
    given). One fold's predictions are in memory at a time beside the running sum, which is added to in place
    (Severstal's test masks are 5.9 GB a fold). Each fold predicts in the precision it was trained in (a fold that
    fell back to fp32 may overflow in fp16)."""
    total, used = None, []
    size = 2 * prediction_batch(session, folder)  # no gradients, no optimizer state: twice the training batch
    run = RunFolder(folder)
    for fold, path in run.checkpoints().items():
        state = checkpoint.load(run.fold(fold).meta)
        if session.trained is not None:  # another run's checkpoint: it must be one this notebook can rebuild
            trained.compatible(state.get("kit") or {}, path, session.template)
        model = pipe.model(data, pretrained=False)
        try:
            model.load_state_dict(checkpoint.load(path)["model"])
        except RuntimeError as e:  # another model or other sizes: never a state_dict traceback
            first = str(e).splitlines()[1].strip() if len(str(e).splitlines()) > 1 else str(e)
            raise KitError(f"{path} does not fit this run's model ({first}); delete {path.parent} to train it afresh") from None
        precision = Precision(state.get("precision", session.precision.name), session.precision.device_type)
        pred = predict_fold(session, pipe, data, model, precision, size, f"fold {fold + 1}")
        del model
        free_memory()
        if pred is None:
            continue
        if kept is not None:  # written before the sum takes over its memory
            kept.add(fold, pred, state.get("rows"))
        total = accumulate(total, pred)
        del pred
        used.append(fold)
        if oof is not None and state.get("rows"):
            oof.append(state["rows"])
        session.log(f"predicted the test set with fold {fold + 1} ({state.get('unit', 'epoch')} {state['epoch']}, "
                    f"score {state['score']:.4f}, "
                    f"{precision.name})")
    return mean(total, len(used)), used


def accumulate(total: np.ndarray | TopK | None, pred: np.ndarray | TopK) -> np.ndarray | TopK:
    """The running sum of the folds' predictions: the first fold's array itself, then added to in place (rows of
    the likeliest classes: over the union of the classes each keeps, none let go before the last fold)."""
    if total is None:
        return pred
    if isinstance(total, TopK):  # the union, up to UNION classes a row (5 folds' 32 each would be 160)
        return topk.weighted_sum([total, pred], [1.0, 1.0], k=min(total.index.shape[1] + pred.index.shape[1], topk.UNION))
    np.add(total, pred, out=total, casting="unsafe")
    return total


def mean(total: np.ndarray | TopK | None, n: int) -> np.ndarray | TopK | None:
    """The sum of `n` folds' predictions divided in place."""
    if total is None or n == 1:
        return total
    if isinstance(total, TopK):
        total.value /= n
    else:
        np.divide(total, n, out=total, casting="unsafe")
    return total


def predict_fold(session: Session, pipe: Pipeline, data: Any, model, precision: Precision, batch_size: int,
                 desc: str) -> np.ndarray | None:
    """`pipe.predict` at `batch_size`, halved for as long as it runs out of memory (kit.runtime.recovery), and
    redone in fp32 if mixed precision gives values that are not finite; None (with a warning) if fp32 does too."""
    while True:
        pred, batch_size = halving(partial(pipe.predict, model, data, precision), batch_size,
                                   lambda old, new: session.warn(f"{desc}: out of memory predicting; now batches of {new}"))
        if finite(pred):
            return pred
        if precision.name == "fp32":
            session.warn(f"{desc}: predictions that are not finite even in fp32; this fold is left out of the submission")
            return None
        session.warn(f"{desc}: predictions that are not finite under {precision.name}; predicting again in fp32")
        precision = precision.fallback()


def finite(pred: np.ndarray | TopK, chunk: int = 2**20) -> bool:
    """Whether every prediction is finite, read a million at a time (no mask the size of a fold's test masks)."""
    if isinstance(pred, TopK):
        return pred.isfinite()
    flat = pred.reshape(-1)
    return all(np.isfinite(flat[i : i + chunk]).all() for i in range(0, len(flat), chunk))


def write_submission(session: Session, pipe: Pipeline, data: Any) -> pd.DataFrame:
    """Ensemble the fold checkpoints of this session's run (kit.run.this_run.run_folder: whatever the training cell
    did, interrupted or not), or fall back to the training labels' prior when there are none (kit.run.fallback);
    build the submission in the sample's id and column order, validate it, and write it atomically."""
    oof: list[dict] = []
    folder = run_folder(session, pipe, data)
    folds = list(RunFolder(folder).checkpoints())
    kept = predictions.Kept(session, pipe, data, folder, folds) if session.trained is None else None
    try:
        pred, used = ensemble(session, pipe, data, folder, oof, kept)
    except BaseException:
        if kept is not None:
            kept.discard()
        raise
    if pred is None:  # the training labels' own answer, under a banner (or, under fallback = "none", a KitError)
        pred = fallback.constant(session, data, "no fold checkpoint exists")
    sub = pipe.submission(data, pipe.cut(data, pred, oof))  # label sets, segmentation's masks: cut on the oof rows
    validate(sub, data.sample, data.target, session.spec.id_column, session.output_dir)
    path = session.output_dir / "submission.csv"
    files.write_text(path, csv_text(sub))
    session.log(f"wrote {path}: {len(sub)} rows x {sub.shape[1]} columns, from folds {[f + 1 for f in used]}")
    if kept is not None:  # a training run: its predictions, for blends (kit.run.predictions)
        kept.finish()
    footprint.measured(session)
    return sub

