"""The notebook's submission step: write submission.csv, checked before it lands. Where the data could not be read
for training, the training labels' prior (kit.run.fallback); in predict mode with `blend`, the blend of the runs
named (kit.run.blending); else the mean of this run's folds (kit.run.ensemble), or the prior where none can
predict."""
from __future__ import annotations

from typing import Any

import pandas as pd

from kit import files
from kit.pipelines.base import Pipeline, csv_text, validate
from kit.run import blending, fallback, footprint, predictions
from kit.run.ensemble import ensemble
from kit.run.this_run import run_folder
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session


def write_submission(session: Session, pipe: Pipeline, data: Any) -> pd.DataFrame:
    """Write submission.csv: the blend of the runs in `blend` (predict mode), else this run's folds' mean
    (`write_own`: whatever training did, or the prior with none); where the data could not be read for training,
    the training labels' prior (kit.run.fallback)."""
    if isinstance(data, fallback.LabelsOnly):
        return fallback.write(session, data)
    if not session.blend:
        return write_own(session, pipe, data)
    return blending.write_blend(session, pipe, data)


def write_own(session: Session, pipe: Pipeline, data: Any) -> pd.DataFrame:
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

