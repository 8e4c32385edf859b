"""A run's predictions as files a blend weighs, in its folder (checkpoints/<run>/, beside its folds; their names are
kit.runtime.run_folder's): binary and bounded. As CSV text, iMet's 3,474 labels took about 17 GB of a session's 20 GB
of output and most of an hour to write; as float16 arrays, 1.6 GB in seconds.

- oof.csv: one row per out-of-fold prediction: `id`, `fold` (0-based, as fold<k>.pt), `scored` (0 where the
  score mask leaves the row out);
- oof_target.npy: their truth as the metrics take it (class indices, values, or (rows, labels));
- oof_pred.npy: the model's outputs before any threshold or argmax, (rows, outputs) (binary: both classes'
  probabilities); where rows keep only their likeliest classes (kit.train.topk), (rows, k) of them, and
  oof_index.npy their classes;
- test_ids.csv: the test rows' ids (the sample submission's, or row numbers), in its order;
- test_pred.npy (and test_index.npy): each fold's test predictions, (folds, rows, outputs or k), written fold by
  fold as the folds predict, so that one fold's are in memory at a time;
- predictions.json: what they are: format, run, template, metric, target, folds, layout ("dense" or "top").

Predictions are float32, float16 from 256 outputs or where float32 would pass 256 MB (kit.train.topk.stored_dtype:
with the fold checkpoints' validation rows, at most 4 bytes a prediction); beyond KEEP_BYTES even so they are not
kept, and one line says so. Blends read them back (`read`, memory-mapped)
and line runs up on the rows every run predicted (`align`), refusing runs on other fold splits, other ids or
other target columns (one line each).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit import files
from kit.errors import KitError
from kit.pipelines.base import Pipeline, target_record
from kit.runtime.run_folder import (
    LEGACY,
    OOF,
    OOF_INDEX,
    OOF_PRED,
    OOF_TARGET,
    PREDICTION_FILES,
    PREDICTIONS,
    PREDICTIONS_FORMAT,
    TEST_IDS,
    TEST_INDEX,
    TEST_PRED,
)
from kit.runtime.session import Session
from kit.train import topk
from kit.train.targets import Target
from kit.train.topk import TopK, stored_dtype

KEEP_BYTES = 4 * 2**30  # beyond this (a fifth of Kaggle's 20 GB output), a run's predictions are not kept
PARTIAL = ".partial"  # the test arrays' names while folds are written into them


def probabilities(target: Target) -> bool:
    """Whether the model's outputs are probabilities (of classes or labels), which float16 keeps well enough."""
    return target.classification or target.multilabel


def truth_bytes(target: Target) -> int:
    """A row's truth as the files keep it (`truth_array`)."""
    if target.classification:
        return 4
    return target.outputs * (1 if target.multilabel else 4)


def nbytes(oof_rows: int, test_rows: int, folds: int, outputs: int, kept: int, truth: int, probable: bool = True) -> int:
    """The files' bytes: the out-of-fold rows with their truth (`truth` bytes a row) and each fold's test rows, a row
    `kept` (class, probability) pairs, or every output in `stored_dtype`."""
    row = 8 * kept or outputs * stored_dtype(outputs, 4 * outputs * max(oof_rows, test_rows), probable).itemsize
    return oof_rows * (row + truth) + folds * test_rows * row


def truth_array(truth: np.ndarray, target: Target) -> np.ndarray:
    """The truth as the files keep it: int32 class indices, uint8 0/1 labels, else float32."""
    truth = np.asarray(truth)
    if target.classification:
        return truth.astype(np.int32)
    if truth.ndim == 2 and topk.zeros_and_ones(truth):
        return truth.astype(np.uint8)
    return truth.astype(np.float32)


def save_array(path: Path, values: np.ndarray) -> None:
    with files.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.save(f, values)


def save_oof(folder: Path, target: Target, parts: list[tuple[int, np.ndarray, dict[str, Any]]],
             dtype: np.dtype | None = None) -> int:
    """oof.csv and its arrays from each fold's (fold, ids, validation rows {"pred", "target", optional "weight"}); the
    number of rows."""
    ids = np.concatenate([np.asarray(i, dtype=str) for _, i, _ in parts])
    folds = np.concatenate([np.full(len(i), f, np.int64) for f, i, _ in parts])
    scored = np.concatenate([np.ones(len(i), np.int64) if r.get("weight") is None else (np.asarray(r["weight"]) > 0)
                             .astype(np.int64) for _, i, r in parts])
    pred = topk.join([r["pred"] if isinstance(r["pred"], TopK) else np.asarray(r["pred"]).reshape(len(i), -1)
                      for _, i, r in parts])
    dtype = dtype or stored_dtype(target.outputs, 4 * target.outputs * len(pred), probabilities(target))
    save_array(folder / OOF_TARGET, truth_array(np.concatenate([np.asarray(r["target"]) for _, _, r in parts]), target))
    if isinstance(pred, TopK):
        save_array(folder / OOF_INDEX, pred.index)
        pred = pred.value
    save_array(folder / OOF_PRED, np.asarray(pred).astype(dtype, copy=False))
    with files.atomic_path(folder / OOF) as tmp:
        pd.DataFrame({"id": ids, "fold": folds, "scored": scored}).to_csv(tmp, index=False)
    return len(ids)


def same_truth(a: np.ndarray, b: np.ndarray, rows: int = 256) -> bool:
    """Whether two arrays of truth hold the same values, compared a few thousand rows at a time (iMet's are 3,474
    labels a row: float64 copies of both were 6.7 GB)."""
    if a.size != b.size:
        return False
    a = a.reshape(b.shape)
    return all(np.allclose(a[i : i + rows].astype(np.float64), b[i : i + rows].astype(np.float64), equal_nan=True)
               for i in range(0, len(b), rows))


def write_record(folder: Path, record: dict[str, Any]) -> None:
    """predictions.json, last (a reader that finds it finds the rest): the run's record, the format, and each array's
    layout as the files hold it ("top" where an index file is there)."""
    layouts = {f"{part}_layout": "top" if (folder / index).is_file() else "dense"
               for part, index in (("oof", OOF_INDEX), ("test", TEST_INDEX))}
    record = {"format": PREDICTIONS_FORMAT, **record, **layouts}
    files.write_text(folder / PREDICTIONS, json.dumps(record, indent=1, default=str) + "\n")


def save(folder: Path, record: dict[str, Any], parts: list[tuple[int, np.ndarray, dict[str, Any]]],
         test_ids: np.ndarray | None = None, test: dict[int, np.ndarray | TopK] | None = None) -> None:
    """A run's predictions at once, through the writers a run's Kept uses: the out-of-fold rows of `parts`, each
    fold's `test` predictions of `test_ids`, then the record."""
    target = Target(**{**record["target"], "columns": tuple(record["target"]["columns"]),
                       "classes": tuple(record["target"]["classes"])})
    if parts:
        save_oof(folder, target, parts)
    if test:
        keeper = Keeper(folder, test_ids, sorted(test), probabilities(target))
        for fold, pred in sorted(test.items()):
            keeper.add(fold, pred)
        keeper.close()
    write_record(folder, {"folds": sorted(test or {}), "test_slots": sorted(test or {}), **record})


class Keeper:
    """Each fold's test predictions into one array on disk as the fold predicts (test_pred.npy, and test_index.npy
    for rows of the likeliest classes), so that a fold ensemble holds one fold's in memory at a time."""

    def __init__(self, folder: Path, ids: np.ndarray, folds: list[int], probable: bool = True):
        self.folder, self.ids, self.slots, self.probable = folder, np.asarray(ids, dtype=str), list(folds), probable
        self.dtype: np.dtype | None = None
        self.pred: np.ndarray | None = None
        self.index: np.ndarray | None = None
        self.written: list[int] = []

    def add(self, fold: int, pred: np.ndarray | TopK) -> None:
        if self.pred is None:
            self.open(pred)
        slot = self.slots.index(fold)
        if len(pred) != len(self.ids):
            raise KitError(f"fold {fold + 1} predicted {len(pred)} test rows, and the sample has {len(self.ids)}")
        if isinstance(pred, TopK):
            self.index[slot] = pred.index
            pred = pred.value
        self.pred[slot] = np.asarray(pred).reshape(len(self.ids), -1)
        self.written.append(fold)

    def open(self, pred: np.ndarray | TopK) -> None:
        width = pred.index.shape[1] if isinstance(pred, TopK) else int(np.prod(np.shape(pred)[1:]))
        shape = (len(self.slots), len(self.ids), width)
        self.dtype = stored_dtype(pred.shape[1], 4 * pred.shape[1] * len(self.ids), self.probable)
        self.pred = np.lib.format.open_memmap(self.partial(TEST_PRED), mode="w+", dtype=self.dtype, shape=shape)
        if isinstance(pred, TopK):
            self.index = np.lib.format.open_memmap(self.partial(TEST_INDEX), mode="w+", dtype=np.int32, shape=shape)

    def partial(self, name: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / (name + PARTIAL)

    def close(self) -> bool:
        """The arrays in place under their names (the folds that did not predict stay zeros: the record names those
        that did); False where no fold predicted."""
        if self.pred is None:
            return False
        for name, array in ((TEST_PRED, self.pred), (TEST_INDEX, self.index)):
            if array is not None:
                array.flush()
                os.replace(self.partial(name), self.folder / name)
        with files.atomic_path(self.folder / TEST_IDS) as tmp:
            pd.DataFrame({"id": self.ids}).to_csv(tmp, index=False)
        self.pred = self.index = None
        return True

    def discard(self) -> None:
        self.pred = self.index = None
        for name in (TEST_PRED, TEST_INDEX):
            (self.folder / (name + PARTIAL)).unlink(missing_ok=True)


@dataclass
class Kept:
    """A training run's predictions as they are written, fold by fold (`add`), then with their validation rows
    (`finish`); `off` says why nothing is kept (masks and pages, not a row per id; too many bytes)."""

    session: Session
    pipe: Pipeline
    data: Any
    folder: Path
    folds: list[int]
    keeper: Keeper | None = None
    off: str = ""
    test_ids: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rows: dict[int, dict[str, Any] | None] = field(default_factory=dict)  # each fold's validation rows

    def add(self, fold: int, pred: np.ndarray | TopK, rows: dict[str, Any] | None) -> None:
        """Fold `fold`'s test predictions, written at once, and its validation rows (its checkpoint's)."""
        self.rows[fold] = rows
        if self.off:
            return
        if self.keeper is None:
            self.off = self.refusal(pred)
            if self.off:
                self.session.log(self.off)
                return
            spec = self.session.spec
            sample = self.data.sample
            self.test_ids = (sample[spec.id_column].to_numpy() if spec.id_column in sample.columns
                             else np.arange(len(sample)))
            for name in (*PREDICTION_FILES, *LEGACY):  # the run's earlier predictions go: a reader must not mix two runs' files
                (self.folder / name).unlink(missing_ok=True)
            self.keeper = Keeper(self.folder, self.test_ids, self.folds, probabilities(self.data.target))
        self.keeper.add(fold, pred)

    def refusal(self, pred: np.ndarray | TopK) -> str:
        """Why this run's predictions are not kept ("" if they are)."""
        if np.ndim(pred) > 2:
            return (f"the {self.session.template} template predicts masks, pages, windows' logits or boxes, not a row per id: "
                    f"no {OOF} or {TEST_PRED} for blends")
        t = self.data.target
        oof = sum(len(v) for _, v in self.pipe.split(self.data))
        kept = pred.index.shape[1] if isinstance(pred, TopK) else 0
        need = nbytes(oof, len(pred), len(self.folds), t.outputs, kept, truth_bytes(t), probabilities(t))
        if need > KEEP_BYTES:
            return (f"predictions for blends would take {need / 2**30:.1f} GB ({oof} out-of-fold and {len(self.folds)} x "
                    f"{len(pred)} test rows of {t.outputs} outputs), over the {KEEP_BYTES / 2**30:.0f} GB kit keeps for "
                    f"them: no {OOF} or {TEST_PRED}; this run cannot be blended")
        return ""

    def finish(self) -> None:
        """The test arrays closed, then the validation rows of each fold named by the pipeline's ids, then the
        record. A fold whose rows do not line up with those ids (validated in shards by several processes) is left
        out of oof.csv, with one line."""
        if self.keeper is None or not self.keeper.close():
            return
        s, pipe, data = self.session, self.pipe, self.data
        splits = pipe.split(data)
        parts = []
        for fold, got in sorted(self.rows.items()):
            if not got:
                continue
            named = pipe.validation_rows(data, splits[fold][1])
            if named is None:  # a template that names no validation rows: its test predictions are kept still
                s.warn(f"the {s.template} template does not name its validation rows: no {OOF} for blends")
                break
            ids, truth = named
            if len(ids) != len(got["target"]) or not same_truth(np.asarray(truth), np.asarray(got["target"])):
                s.warn(f"fold {fold + 1}: its validation rows do not line up with the training rows' ids (validated "
                       f"in shards across processes?); {OOF} leaves them out")
                continue
            parts.append((fold, ids, got))
        oof_rows = save_oof(self.folder, data.target, parts) if parts else 0
        spec = s.spec
        write_record(self.folder, {"run": self.folder.name, "template": s.template, "metric": spec.metric,
                                   "id_column": spec.id_column, "target": target_record(data.target),
                                   "folds": self.keeper.written, "test_slots": self.keeper.slots,
                                   "oof_folds": [fold for fold, _, _ in parts]})
        nbytes = sum((self.folder / n).stat().st_size for n in PREDICTION_FILES if (self.folder / n).is_file())
        head = f"{OOF} ({oof_rows} rows of folds {[f + 1 for f, _, _ in parts]}) and " if parts else ""
        s.log(f"wrote {head}{TEST_PRED} ({len(self.keeper.written)} folds x {len(self.test_ids)} rows) in {self.folder}, "
              f"{self.keeper.dtype} ({nbytes / 2**20:.1f} MB): what blends read")

    def discard(self) -> None:
        if self.keeper is not None:
            self.keeper.discard()
