"""A run's predictions as files any tool can blend, in its folder (checkpoints/<run>/, beside its folds):

- oof.csv: one row per out-of-fold prediction: `id`, `fold` (0-based, as fold<k>.pt), `scored` (0 where the
  score mask leaves the row out), the target (`target`, or `target:<column>` for several) and the
  predictions before any threshold or argmax (`pred:<output>`: a class's or a label's probability, or a
  value; binary: the positive class's probability, the submission's column);
- test_predictions.csv: each fold's test predictions, `id` (the sample submission's, or its row number),
  `fold` and the same `pred:` columns;
- predictions.json: what they are: the run's key, template and metric, the target (its kind, columns and
  classes), the folds.

Blends read them back (`read`) and line several runs up on the rows every run predicted (`align`), refusing
runs on other fold splits, other ids or other target columns (one line each).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit import files
from kit.errors import KitError
from kit.pipelines.base import Pipeline, target_record
from kit.runtime import runs
from kit.runtime.session import Session
from kit.train.targets import Target

OOF, TEST, RECORD = "oof.csv", "test_predictions.csv", "predictions.json"
FORMAT = 1  # what these files hold; bump when a reader of this format could not read them


def output_names(target: Target) -> list[str]:
    """The `pred:` columns' names: the submission's column where it holds one probability or value, else each
    class's or label's (the outputs the model predicts)."""
    if target.kind in ("binary", "value", "ordinal"):
        return [str(target.columns[0])]
    return [str(c) for c in (target.classes or target.columns)]


def pred_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    names = output_names(target)
    if target.kind == "binary":
        return {f"pred:{names[0]}": pred[:, 1]}
    return {f"pred:{n}": pred[:, i] for i, n in enumerate(names)}


def pred_array(target: Target, frame: pd.DataFrame, where: str) -> np.ndarray:
    """(rows, outputs) the model's outputs from `pred:` columns (binary: both classes' probabilities)."""
    wanted = [f"pred:{n}" for n in output_names(target)]
    absent = [c for c in wanted if c not in frame.columns]
    if absent:
        raise KitError(f"{where}: no column '{absent[0]}' ({len(absent)} of the {len(wanted)} the target predicts); "
                       "it was written for another target")
    values = frame[wanted].to_numpy(dtype=np.float64)
    return np.concatenate([1.0 - values, values], axis=1) if target.kind == "binary" else values


def target_columns(target: Target, truth: np.ndarray) -> dict[str, np.ndarray]:
    """The truth as oof.csv holds it: class labels, values, or one 0/1 (or value) column per label or column."""
    truth = np.asarray(truth)
    if truth.ndim == 2:
        return {f"target:{n}": truth[:, i] for i, n in enumerate(output_names(target))}
    if target.classification:
        return {"target": np.asarray(target.classes, dtype=object)[truth.astype(np.int64)]}
    return {"target": truth.reshape(len(truth))}


def truth_array(target: Target, frame: pd.DataFrame, where: str) -> np.ndarray:
    """The truth as the metrics take it: class indices, values, or (rows, labels)."""
    if "target" not in frame.columns:
        return frame[[f"target:{n}" for n in output_names(target)]].to_numpy(dtype=np.float64)
    if not target.classification:
        return frame["target"].to_numpy(dtype=np.float64)
    codes = pd.Categorical(frame["target"].astype(str), categories=[str(c) for c in target.classes]).codes
    if (codes < 0).any():
        raise KitError(f"{where}: target '{frame['target'].astype(str).iloc[int(np.argmax(codes < 0))]}' is not one of "
                       "the run's classes")
    return codes.astype(np.int64)


def oof_frame(target: Target, parts: list[tuple[int, np.ndarray, dict[str, np.ndarray]]]) -> pd.DataFrame:
    """oof.csv's rows from each fold's (fold, ids, validation rows {"pred", "target", optional "weight"})."""
    frames = []
    for fold, ids, rows in parts:
        pred = np.asarray(rows["pred"], dtype=np.float64).reshape(len(ids), -1)
        weight = rows.get("weight")
        scored = np.ones(len(ids), np.int64) if weight is None else (np.asarray(weight) > 0).astype(np.int64)
        frames.append(pd.DataFrame({"id": np.asarray(ids, dtype=str), "fold": fold, "scored": scored,
                                    **target_columns(target, np.asarray(rows["target"])), **pred_columns(target, pred)}))
    return pd.concat(frames, ignore_index=True)


def test_frame(target: Target, ids: np.ndarray, each: dict[int, np.ndarray]) -> pd.DataFrame:
    """test_predictions.csv's rows: every fold's predictions of the test rows `ids`."""
    return pd.concat([pd.DataFrame({"id": np.asarray(ids, dtype=str), "fold": fold, **pred_columns(target, pred)})
                      for fold, pred in sorted(each.items())], ignore_index=True)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Atomically, every float as it is (test predictions are compared across kernels to 1e-4, and ranked)."""
    with files.atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def save(folder: Path, record: dict[str, Any], oof: pd.DataFrame | None, test: pd.DataFrame) -> None:
    """A run's predictions into its folder; the record last, so a reader that finds it finds the rest."""
    if oof is not None:
        write_csv(oof, folder / OOF)
    write_csv(test, folder / TEST)
    files.write_text(folder / RECORD, json.dumps({"format": FORMAT, **record}, indent=1, default=str) + "\n")


def keep(session: Session, pipe: Pipeline, data: Any, folder: Path,
         each: dict[int, tuple[np.ndarray, dict[str, np.ndarray] | None]]) -> None:
    """Write this training run's predictions into its folder: `each` fold's test predictions and validation
    rows (its checkpoint's), the rows named by the pipeline's ids. A fold whose rows do not line up with those
    ids (validated in shards by several processes) is left out of oof.csv, with one line. Predictions that are not a
    row per id (segmentation's masks and pages) are not kept: a blend weighs rows of the submission's shape."""
    if any(np.ndim(pred) > 2 for pred, _ in each.values()):
        session.log(f"the {session.template} template predicts masks or pages, not a row per id: no {OOF} or {TEST} "
                    "for blends")
        return
    named = getattr(pipe, "validation_rows", None)
    if named is None:  # a template that names no validation rows: its test predictions are kept still
        session.warn(f"the {session.template} template does not name its validation rows: no {OOF} for blends")
    splits = pipe.split(data) if named is not None else []
    parts = []
    for fold, (_, rows) in sorted(each.items()):
        if named is None or not rows:
            continue
        ids, truth = named(data, splits[fold][1])
        got, truth = np.asarray(rows["target"], dtype=np.float64), np.asarray(truth, dtype=np.float64)
        if len(ids) != len(got) or truth.size != got.size or not np.allclose(truth.reshape(got.shape), got, equal_nan=True):
            session.warn(f"fold {fold + 1}: its validation rows do not line up with the training rows' ids (validated "
                         f"in shards across processes?); {OOF} leaves them out")
            continue
        parts.append((fold, ids, rows))
    spec = session.spec
    test_ids = (data.sample[spec.id_column].to_numpy() if spec.id_column in data.sample.columns
                else np.arange(len(data.sample)))
    record = {"run": folder.name, "template": session.template, "metric": spec.metric, "id_column": spec.id_column,
              "target": target_record(data.target), "folds": sorted(each), "oof_folds": [fold for fold, _, _ in parts]}
    oof = oof_frame(data.target, parts) if parts else None
    save(folder, record, oof, test_frame(data.target, test_ids, {f: pred for f, (pred, _) in each.items()}))
    rows = f"{OOF} ({len(oof)} rows of folds {[f + 1 for f, _, _ in parts]}) and " if oof is not None else ""
    session.log(f"wrote {rows}{TEST} ({len(each)} folds x {len(test_ids)} rows) in {folder}: what blends read")


@dataclass
class RunPredictions:
    name: str  # how tables and errors name it: its source or folder
    folder: Path
    record: dict[str, Any]
    target: Target
    oof: pd.DataFrame
    test: pd.DataFrame | None = None


def read(folder: Path, name: str, with_test: bool = False) -> RunPredictions:
    """A run's predictions from its folder; a missing or foreign file is one line."""
    record_path = folder / RECORD
    if not record_path.is_file() or not (folder / OOF).is_file():
        raise KitError(f"{name}: no {OOF} in {folder} (kit writes it beside the folds since predictions were kept); "
                       "train the run again with this kit")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    if record.get("format") != FORMAT:
        raise KitError(f"{record_path} was written in format {record.get('format')}, and this kit reads {FORMAT}")
    target = Target(**{**record["target"], "columns": tuple(record["target"]["columns"]),
                       "classes": tuple(record["target"]["classes"]),
                       "limits": tuple(tuple(x) for x in record["target"].get("limits", ()))})
    oof = pd.read_csv(folder / OOF, dtype={"id": str, "target": str if target.classification else None}, keep_default_na=False)
    test = pd.read_csv(folder / TEST, dtype={"id": str}, keep_default_na=False) if with_test else None
    if with_test and test is None:
        raise KitError(f"{name}: no {TEST} in {folder}")
    return RunPredictions(name, folder, record, target, oof, test)


def find(root: Path) -> Path:
    """The one run folder under `root` (an output folder, or a run's own) that holds predictions.json: where a
    checkpoints/ folder names its latest run, that one."""
    if not root.is_dir():
        raise KitError(f"{root} is not a folder; pass a run's output folder (make output downloads a kernel's)")
    found = sorted(Path(here) for here, _, names in os.walk(root) if RECORD in names)
    latest = [f for f in found if not (f.parent / runs.LATEST).is_file()
              or json.loads((f.parent / runs.LATEST).read_text()).get("run") == f.name]
    if not latest:
        raise KitError(f"no {RECORD} and {OOF} under {root}: train the run with this kit (it writes them in "
                       "checkpoints/<run>/), or download its output (make output COMP=...)")
    if len(latest) > 1:
        raise KitError(f"{len(latest)} runs under {root}: {', '.join(str(f) for f in latest)}; pass each run's folder")
    return latest[0]


@dataclass
class Aligned:
    """The out-of-fold rows every run predicted, in the first run's order."""

    ids: np.ndarray
    folds: np.ndarray
    truth: np.ndarray
    weight: np.ndarray | None  # 0/1: the score mask (None: every row counts)
    preds: list[np.ndarray]  # each run's (rows, outputs)
    target: Target


def align(loaded: list[RunPredictions], log) -> Aligned:
    """Line the runs up on the out-of-fold rows every one predicted. Runs whose submissions differ in shape,
    whose folds split the rows otherwise, that hold other ids, or other targets for the same ids, are refused
    with one line; rows of a fold only some runs finished are left out, and the line says so."""
    first = loaded[0]
    for run in loaded[1:]:
        same_target(first, run)
    frames = [r.oof.set_index("id", drop=False) for r in loaded]
    for run, frame in zip(loaded, frames):
        if not frame.index.is_unique:
            raise KitError(f"{run.name}: {OOF} holds id '{frame.index[frame.index.duplicated()][0]}' twice")
    for run, frame in zip(loaded[1:], frames[1:]):
        same_rows(first, frames[0], run, frame)
    common = frames[0].index
    for frame in frames[1:]:
        common = common[common.isin(frame.index)]
    if not len(common):
        raise KitError(f"{first.name} and the other runs share no out-of-fold row; blend runs of one competition")
    for run, frame in zip(loaded, frames):
        left = len(frame) - len(common)
        if left:
            folds = sorted(set(frame["fold"]) - set(frame.loc[common, "fold"]))
            log(f"blend: {left} out-of-fold rows of {run.name} are left out: not every run predicted them"
                f"{f' (folds {[f + 1 for f in folds]})' if folds else ''}")
    rows = frames[0].loc[common]
    truth = truth_array(first.target, rows, f"{first.folder / OOF}")
    for run, frame in zip(loaded[1:], frames[1:]):
        theirs = truth_array(run.target, frame.loc[common], f"{run.folder / OOF}")
        differ = ~np.isclose(np.asarray(theirs, dtype=np.float64), np.asarray(truth, dtype=np.float64), equal_nan=True)
        if differ.any():
            at = int(np.flatnonzero(differ.reshape(len(common), -1).any(1))[0])
            raise KitError(f"{run.name} holds another target than {first.name} for id '{common[at]}'; blend runs "
                           "trained on the same labels")
    scored = rows["scored"].to_numpy(dtype=np.float64)
    preds = [pred_array(r.target, f.loc[common], f"{r.folder / OOF}") for r, f in zip(loaded, frames)]
    return Aligned(np.asarray(common, dtype=str), rows["fold"].to_numpy(dtype=np.int64), truth,
                   None if scored.all() else scored, preds, first.target)


def same_target(a: RunPredictions, b: RunPredictions) -> None:
    """Runs blend when their submissions have the same shape: the same target columns, kind and classes."""
    ta, tb = a.target, b.target
    if list(ta.columns) != list(tb.columns):
        raise KitError(f"{b.name} predicts the target columns {list(tb.columns)[:4]} and {a.name} {list(ta.columns)[:4]}; "
                       "blend runs of one competition's submission")
    if (ta.kind, list(map(str, ta.classes))) != (tb.kind, list(map(str, tb.classes))):
        raise KitError(f"{b.name} predicts {tb.kind} ({len(tb.classes)} classes) and {a.name} {ta.kind} "
                       f"({len(ta.classes)} classes): their submissions differ in shape")


def same_rows(a: RunPredictions, fa: pd.DataFrame, b: RunPredictions, fb: pd.DataFrame) -> None:
    """The same folds, over the same ids: a row both runs predicted is in the same fold, and every row of a fold
    both runs finished is in both."""
    shared = fa.index[fa.index.isin(fb.index)]
    moved = fa.loc[shared, "fold"].to_numpy() != fb.loc[shared, "fold"].to_numpy()
    if moved.any():
        i = int(np.flatnonzero(moved)[0])
        raise KitError(f"{b.name} splits the rows into other folds than {a.name} (id '{shared[i]}': fold "
                       f"{fb.loc[shared[i], 'fold'] + 1} there, {fa.loc[shared[i], 'fold'] + 1} here, "
                       f"{int(moved.sum())} such rows); blend runs trained with the same folds and seed")
    both = set(fa["fold"]) & set(fb["fold"])
    for x, fx, other in ((a, fa, fb), (b, fb, fa)):
        alone = fx.index[fx["fold"].isin(both) & ~fx.index.isin(other.index)]
        if len(alone):
            name = b.name if x is a else a.name
            raise KitError(f"{x.name} validates id '{alone[0]}' in fold {fx.loc[alone[0], 'fold'] + 1}, and {name} has no "
                           f"such id ({len(alone)} such rows); blend runs trained on the same rows")


def test_mean(run: RunPredictions) -> tuple[np.ndarray, np.ndarray]:
    """(ids, (rows, outputs)) the mean of a run's folds' test predictions, as its submission averaged them."""
    test = run.test
    folds = sorted(set(test["fold"]))
    parts = [test[test["fold"] == f] for f in folds]
    ids = parts[0]["id"].to_numpy(dtype=str)
    for fold, part in zip(folds[1:], parts[1:]):
        if not np.array_equal(part["id"].to_numpy(dtype=str), ids):
            raise KitError(f"{run.folder / TEST}: fold {fold + 1} predicts other test ids than fold {folds[0] + 1}")
    where = f"{run.folder / TEST}"
    return ids, sum(pred_array(run.target, p, where) for p in parts) / len(parts)
