"""The inference kernel's blend (kit.run.submission's step where `blend` names runs): in predict mode with `blend`, each run
predicts the test set with its own folds, as one run's inference kernel does (a run of this notebook's
template through its pipeline, any other through a set-up and a pipeline of its own template, its model's
settings from its checkpoints), and the runs are blended with the weights their out-of-fold rows give
(kit.run.blend). The blended submission is checked and written like any other; beside it, the blend's own
oof.csv and blend.json (the rule, the weights, the scores)."""
from __future__ import annotations

import dataclasses
import json
import traceback
from pathlib import Path
from typing import Any

import pandas as pd

from kit import fields, files, templates
from kit.errors import KitError
from kit.params import TrainParams
from kit.pipelines import create_pipeline
from kit.pipelines.base import Pipeline, csv_text, validate
from kit.run import blend, kept, predictions
from kit.run.ensemble import ensemble
from kit.run.start import start
from kit.runtime import checkpoint, trained
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session
from kit.runtime.trained import Trained

BLEND_RECORD, SUBMISSION = "blend.json", "submission.csv"


def write_blend(session: Session, pipe: Pipeline, data: Any) -> pd.DataFrame:
    """Predict with every run of the blend that kept its out-of-fold predictions, blend, check and write. A template
    whose predictions are not rows of outputs (masks, boxes: kit.run.predictions keeps none for blends) is refused."""
    if data.target.record.masks:
        raise KitError(f"blend: the {session.template} template predicts masks or boxes, not a row of outputs per id, and "
                       "keeps no predictions to blend; predict with one run (blend = [])")
    loaded, tests = [], []
    for source, run in session.blend:
        try:
            found = kept.read(run.folder, source)
        except KitError as e:  # a run from an older kit: nothing to weight it by
            session.warn(f"{e}; {source} is left out of the blend")
            continue
        try:
            pred = run_prediction(session, pipe, data, source, run)
        except Exception as e:  # noqa: BLE001  one run that cannot predict here leaves the others their blend
            why = str(e) if isinstance(e, KitError) else f"{type(e).__name__}: {e}"
            if not isinstance(e, KitError):  # a failure kit did not foresee: its traceback, for a report
                session.log("".join(traceback.format_exception(e)).rstrip())
            session.warn(f"blend: {source} cannot predict here ({why}); it is left out of the blend")
            continue
        if pred is None:
            session.warn(f"blend: no fold of {source} predicted the test set; it is left out of the blend")
            continue
        loaded.append(found)
        tests.append(pred)
    if not loaded:
        raise KitError(f"blend: none of its {len(session.blend)} runs could be blended (see the lines above); train "
                       "them with this kit, which keeps the out-of-fold predictions blends weigh")
    named = len(session.params.blend)
    if len(loaded) < named:
        session.warn(f"blend: {len(loaded)} of the {named} runs named take part ({', '.join(r.name for r in loaded)})"
                     f"{': the submission is its predictions alone' if len(loaded) == 1 else ''}")
    done = blend.blend_runs(session.spec.metric, loaded, tests, session.log)
    sub = pipe.submission(data, done.test)
    validate(sub, data.sample, data.target, session.spec.id_column, session.output_dir)
    path = save(session.output_dir, sub, done, data.target)
    weights = ", ".join(f"{name} {w:.3f}" for name, w in zip(done.names, done.fitted.weights))
    session.log(f"wrote {path}: {len(sub)} rows x {sub.shape[1]} columns, the blend of {weights}")
    return sub


def save(folder: Path, sub: pd.DataFrame, done: blend.Blended, target) -> Path:
    """The blended submission, the blend's own out-of-fold rows (kit.run.predictions' oof files) and blend.json,
    each written whole; the submission's path."""
    path = folder / SUBMISSION
    predictions.save_oof(folder, target, done.oof)
    files.write_text(folder / BLEND_RECORD, json.dumps(done.record, indent=1, default=float) + "\n")
    files.write_text(path, csv_text(sub))
    return path


def predict_time(p: TrainParams, template: str) -> dict[str, Any]:
    """This notebook's parameters that another template's run predicts with: those a person chooses at prediction
    (kit.runtime.trained.PREDICT_TIME) that its template has too. Its model's settings come from its checkpoints:
    this notebook's model_name (a timm name) is no choice of a tabular run's."""
    theirs = set(fields.names(templates.get(template).params))
    return {k: v for k, v in dataclasses.asdict(p).items() if k in trained.PREDICT_TIME and k in theirs}


def run_prediction(session: Session, pipe: Pipeline, data: Any, source: str, run: Trained):
    """(test rows, outputs) the mean of `run`'s folds' test predictions, in the sample submission's row order."""
    if run is session.trained:  # the run this notebook's own steps read
        return ensemble(session, pipe, data, run.folder)[0]
    session.log(f"blend: {source}: a {run.template} run; its own set-up and data, then its folds")
    competition = checkpoint.load_json(RunFolder(run.folder).record)["competition"]  # its files and columns, as it read them
    namespace = {**predict_time(session.params, run.template), "model_dir": str(run.folder), "blend": (),
                 "data_dir": str(session.data_dir), "output_dir": str(session.output_dir), "competition": competition}
    theirs = start(run.template, namespace)
    other = create_pipeline(theirs)
    other_data = other.load()
    pred, _ = ensemble(theirs, other, other_data, run.folder)
    id_column = session.spec.id_column
    same = (other_data.sample[id_column].astype(str).tolist() == data.sample[id_column].astype(str).tolist()
            if id_column in data.sample.columns and id_column in other_data.sample.columns
            else len(other_data.sample) == len(data.sample))
    if not same:
        raise KitError(f"blend: {source} predicts other test rows than {session.blend[0][0]} ({len(other_data.sample)} "
                       f"and {len(data.sample)}); blend runs of one competition")
    return pred
