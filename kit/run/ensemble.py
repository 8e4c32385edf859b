"""Fold prediction: the mean of the test predictions of every fold checkpoint a run has, each fold predicting in
the precision it trained in, halving its batch on out-of-memory; what this run's submission and a blend's runs
both predict with (kit.run.submission, kit.run.blending)."""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from kit.errors import KitError
from kit.pipelines.base import Pipeline
from kit.run import predictions
from kit.run.batch import prediction_batch
from kit.runtime import checkpoint, trained
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, halving
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session
from kit.train.topk import TopK


def ensemble(session: Session, pipe: Pipeline, data: Any, folder: Path, oof: list | None = None,
             kept: predictions.Kept | None = None) -> tuple[np.ndarray | TopK | None, list[int]]:
    """Mean of the test predictions of every fold checkpoint in the run's `folder`, and which folds took part
    (their validation rows appended to `oof`, and each fold's predictions written by `kept` for blends, when
    given), gathered by the pipeline's `fold_sum` and `fold_mean`. One fold's predictions are in memory at a time
    beside the running sum, which is added to in place
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
        total = pipe.fold_sum(total, pred)
        del pred
        used.append(fold)
        if oof is not None and state.get("rows"):
            oof.append(state["rows"])
        session.log(f"predicted the test set with fold {fold + 1} ({state.get('unit', 'epoch')} {state['epoch']}, "
                    f"score {state['score']:.4f}, "
                    f"{precision.name})")
    return pipe.fold_mean(total, len(used)), used


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
