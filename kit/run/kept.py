"""A run's kept predictions (kit.run.predictions' files) read back, memory-mapped, and several runs lined up on
the out-of-fold rows every run predicted: what a blend weighs."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.run.predictions import same_truth
from kit.runtime.run_folder import (
    LATEST,
    OOF,
    OOF_INDEX,
    OOF_PRED,
    OOF_TARGET,
    PREDICTIONS,
    PREDICTIONS_FORMAT,
    TEST_IDS,
    TEST_INDEX,
    TEST_PRED,
    latest_of,
)
from kit.train import topk
from kit.train.targets import Target
from kit.train.topk import TopK


@dataclass
class RunPredictions:
    name: str  # how tables and errors name it: its source or folder
    folder: Path
    record: dict[str, Any]
    target: Target
    oof: pd.DataFrame  # id, fold, scored: one row per out-of-fold prediction
    pred: np.ndarray | TopK  # their predictions, row for row
    truth: np.ndarray  # their truth, as the metrics take it
    test_ids: np.ndarray | None = None
    test: list[np.ndarray | TopK] | None = None  # each fold's test predictions, the folds of record["folds"]


def read(folder: Path, name: str, with_test: bool = False) -> RunPredictions:
    """A run's predictions from its folder; a missing or foreign file is one line."""
    record_path = folder / PREDICTIONS
    if not record_path.is_file() or not (folder / OOF).is_file():
        raise KitError(f"{name}: no {OOF} in {folder} (kit writes it beside the folds since predictions were kept); "
                       "train the run again with this kit")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    if record.get("format") != PREDICTIONS_FORMAT:
        raise KitError(f"{record_path} was written in format {record.get('format')}, and this kit reads {PREDICTIONS_FORMAT}; "
                       "train the run again with this kit")
    t = record["target"]
    target = Target(**{**t, "columns": tuple(t["columns"]), "classes": tuple(t["classes"]),
                       "limits": tuple(tuple(x) for x in t.get("limits", ()))})
    oof = pd.read_csv(folder / OOF, dtype={"id": str}, keep_default_na=False)
    pred = rows_of(folder / OOF_PRED, folder / OOF_INDEX, target)
    truth = np.load(folder / OOF_TARGET)
    if not len(oof) == len(pred) == len(truth):
        raise KitError(f"{folder}: {OOF} holds {len(oof)} rows, {OOF_PRED} {len(pred)} and {OOF_TARGET} {len(truth)}; "
                       "the files are of different runs: train the run again")
    run = RunPredictions(name, folder, record, target, oof, pred, truth)
    if with_test:
        if not (folder / TEST_PRED).is_file():
            raise KitError(f"{name}: no {TEST_PRED} in {folder}")
        run.test_ids = pd.read_csv(folder / TEST_IDS, dtype={"id": str}, keep_default_na=False)["id"].to_numpy(dtype=str)
        every = rows_of(folder / TEST_PRED, folder / TEST_INDEX, target)
        slots = record.get("test_slots", record["folds"])
        run.test = [every[slots.index(f)] for f in record["folds"]]
    return run


def rows_of(path: Path, index: Path, target: Target):
    """An array of predictions memory-mapped (float32 or float16 on disk), with its classes where rows keep their
    likeliest (`index` is there: a TopK, or a list of them for the folds' test arrays)."""
    values = np.load(path, mmap_mode="r")
    if not index.is_file():
        return values
    classes = np.load(index, mmap_mode="r")
    if values.ndim == 3:
        return [TopK(np.asarray(i), np.asarray(v, np.float32), target.outputs) for i, v in zip(classes, values)]
    return TopK(np.asarray(classes), np.asarray(values, np.float32), target.outputs)


def find(root: Path) -> Path:
    """The one run folder under `root` (an output folder, or a run's own) that holds predictions.json: where a
    checkpoints/ folder names its latest run, that one."""
    if not root.is_dir():
        raise KitError(f"{root} is not a folder; pass a run's output folder (make output downloads a kernel's)")
    found = sorted(Path(here) for here, _, names in os.walk(root) if PREDICTIONS in names)
    latest = [f for f in found if not (f.parent / LATEST).is_file() or latest_of(f.parent) == f.name]
    if not latest:
        raise KitError(f"no {PREDICTIONS} and {OOF} under {root}: train the run with this kit (it writes them in "
                       "checkpoints/<run>/), or download its output (make output COMP=...)")
    if len(latest) > 1:
        raise KitError(f"{len(latest)} runs under {root}: {', '.join(str(f) for f in latest)}; pass each run's folder")
    return latest[0]


def dense(pred, rows: np.ndarray) -> np.ndarray | TopK:
    """`rows` of kept predictions, in memory: float32 (a float16 file read up), or a TopK's rows."""
    if isinstance(pred, TopK):
        return pred[rows]
    return np.asarray(pred[rows], dtype=np.float32)


@dataclass
class Aligned:
    """The out-of-fold rows every run predicted, in the first run's order."""

    ids: np.ndarray
    folds: np.ndarray
    truth: np.ndarray
    weight: np.ndarray | None  # 0/1: the score mask (None: every row counts)
    preds: list[np.ndarray | TopK]  # each run's (rows, outputs)
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
    at = [frame.index.get_indexer(common) for frame in frames]  # each run's row of each common id
    truth = np.asarray(first.truth[at[0]])
    for run, rows in zip(loaded[1:], at[1:]):
        theirs = np.asarray(run.truth[rows])
        if not same_truth(theirs, truth):  # a few rows at a time: iMet's truth is 3,474 labels a row
            i = next(i for i in range(len(common)) if not same_truth(theirs[i : i + 1], truth[i : i + 1]))
            raise KitError(f"{run.name} holds another target than {first.name} for id '{common[i]}'; blend runs "
                           "trained on the same labels")
    scored = first.oof["scored"].to_numpy(dtype=np.float64)[at[0]]
    return Aligned(np.asarray(common, dtype=str), first.oof["fold"].to_numpy(dtype=np.int64)[at[0]], truth,
                   None if scored.all() else scored, [dense(r.pred, rows) for r, rows in zip(loaded, at)], first.target)


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


def test_mean(run: RunPredictions) -> tuple[np.ndarray, np.ndarray | TopK]:
    """(ids, (rows, outputs)) the mean of a run's folds' test predictions, as its submission averaged them."""
    parts = run.test
    if isinstance(parts[0], TopK):
        return run.test_ids, topk.weighted_sum(parts, [1.0 / len(parts)] * len(parts))
    total = np.zeros(parts[0].shape, np.float32)
    for part in parts:
        total += part
    return run.test_ids, total / len(parts)
