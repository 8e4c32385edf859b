"""A training run's folder, <output_dir>/checkpoints/<run>/ (kit.runtime.runs keys it): the one place that names
the files in it, so that the modules that write and read them ask here instead of spelling them out.

    checkpoints/latest.json       the latest run's key: what predict mode, blends and `make publish` take
    checkpoints/<run>/run.json    what made the run (kit.runtime.runs.record)
                      batch.json  the automatic batch size, and the GPU it was tuned on (kit.run.batch)
                      fold<k>.pt       the fold's best epoch: its weights alone, what prediction loads
                      fold<k>.meta.pt  beside them: epoch, score, precision, validation rows and stamp
                      fold<k>.json     the fold's summary, written when it finishes
                      oof.csv, oof_*.npy, test_*, predictions.json: its predictions for blends (kit.run.predictions)
                      lookup.json  seq2seq's table of the training pairs, which its checkpoints' recipe names
    <scratch>/resume/<run>/fold<k>.last.pt   an unfinished fold's latest epoch, to resume from (not the output)

The names are those every earlier run wrote: a change here is a change of format (kit.runtime.runs.FORMAT).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from kit.runtime import paths

ROOT = "checkpoints"  # in the output folder: a folder per run, and LATEST naming the latest
RECORD, LATEST, BATCH = "run.json", "latest.json", "batch.json"
FOLD = re.compile(r"fold(\d+)\.pt")  # a fold's best weights (beside it, its .meta.pt and .json)
META, DONE, LAST = ".meta.pt", ".json", ".last.pt"  # the suffixes of a fold's other files, in place of .pt

# a run's predictions for blends (kit.run.predictions writes them, kit.run.kept reads them back), in its folder or in
# a blend's output folder; bump PREDICTIONS_FORMAT when a reader of these could not read them (1: CSV text)
OOF, OOF_TARGET, OOF_PRED, OOF_INDEX = "oof.csv", "oof_target.npy", "oof_pred.npy", "oof_index.npy"
TEST_IDS, TEST_PRED, TEST_INDEX, PREDICTIONS = "test_ids.csv", "test_pred.npy", "test_index.npy", "predictions.json"
PREDICTION_FILES = (OOF, OOF_TARGET, OOF_PRED, OOF_INDEX, TEST_IDS, TEST_PRED, TEST_INDEX, PREDICTIONS)
LEGACY = ("test_predictions.csv",)  # format 1's (oof.csv was its text), removed where a run writes its predictions again
PREDICTIONS_FORMAT = 2
# what a pipeline writes once for the run beside its folds (Pipeline.run_files), which its recipe names
RUN_FILES = ("lookup.json",)


@dataclass
class FoldFiles:
    """A fold's files: what the one loop (kit.train.loop) and a booster's fold (kit.train.boosting) write."""

    best: Path  # the best epoch's weights: what prediction loads
    last: Path  # the latest epoch: everything needed to resume (kit.train.resume; in the scratch folder)
    stamp: dict = field(default_factory=dict)  # what prediction needs beside the weights (kit.run.folds.stamp)

    @property
    def meta(self) -> Path:
        """The best epoch's epoch, score, precision, validation rows and stamp: read without the weights."""
        return self.best.with_suffix(META)

    @property
    def done(self) -> Path:
        """The fold's summary, written when it finishes."""
        return self.best.with_suffix(DONE)


@dataclass(frozen=True)
class RunFolder:
    """checkpoints/<run>/: a run's folds, its record, its batch and its predictions, by name."""

    path: Path

    @staticmethod
    def of(output_dir: Path, run: str) -> RunFolder:
        """The folder of the run keyed `run` under `output_dir`, created or not."""
        return RunFolder(output_dir / ROOT / run)

    @staticmethod
    def latest(output_dir: Path) -> str:
        """The key of the latest run under `output_dir` (checkpoints/latest.json), "" where none is named."""
        return latest_of(output_dir / ROOT)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def record(self) -> Path:
        return self.path / RECORD

    @property
    def batch(self) -> Path:
        return self.path / BATCH

    @property
    def latest_file(self) -> Path:
        """checkpoints/latest.json, beside this run's folder."""
        return self.path.parent / LATEST

    @property
    def resume(self) -> Path:
        """Where the run's unfinished folds keep their resume state: the scratch folder, not the output."""
        return paths.scratch_dir() / "resume" / self.name

    def fold(self, k: int) -> FoldFiles:
        """Fold `k`'s files: its best epoch in the run's folder (the output), its resume state in the scratch folder."""
        return FoldFiles(best=self.path / f"fold{k}.pt", last=self.resume / f"fold{k}{LAST}")

    def folds(self) -> list[int]:
        """Every fold with best weights in the folder (fold<k>.pt), whether its .meta.pt is there or not."""
        return sorted(int(m.group(1)) for m in (FOLD.fullmatch(p.name) for p in self.path.iterdir()) if m)

    def checkpoints(self) -> dict[int, Path]:
        """{fold: path} of the best-epoch checkpoints, finished folds or not (each with its .meta.pt, written after
        the weights)."""
        found = {}
        for path in sorted(self.path.glob("fold*.pt")):
            m = FOLD.fullmatch(path.name)
            if m and self.fold(int(m.group(1))).meta.exists():
                found[int(m.group(1))] = path
        return dict(sorted(found.items()))

    def finished(self, k: int) -> bool:
        saved = self.fold(k)
        return saved.best.exists() and saved.done.exists()

    def published(self) -> list[Path]:
        """What a run's model version holds (kit.build.publish): run.json, each fold's best weights, what prediction
        reads beside them and its summary, and the predictions a blend weighs it by; not the resume state."""
        keep = [self.record]
        for path in sorted(self.path.iterdir()):
            if FOLD.fullmatch(path.name):
                keep += [p for p in (path, path.with_suffix(META), path.with_suffix(DONE)) if p.is_file()]
        return keep + [self.path / name for name in (*PREDICTION_FILES, *RUN_FILES) if (self.path / name).is_file()]


def is_run(names: list[str]) -> bool:
    """Whether a folder holding the files `names` is a trained run: its run.json and at least one fold<k>.pt."""
    return RECORD in names and any(FOLD.fullmatch(n) for n in names)


def latest_of(root: Path) -> str:
    """The run a checkpoints/ folder `root` names its latest (latest.json), "" where it names none."""
    path = root / LATEST
    return str(json.loads(path.read_text(encoding="utf-8")).get("run", "")) if path.is_file() else ""
