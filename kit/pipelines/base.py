"""The Pipeline contract: what a template implements for kit.run to train, predict and submit with it, the
way timm's `TrainingTask` states what a task does. Beside it, what every pipeline shares: the sample
submission of predict mode, the shared prediction loop, and the submission's shape and checks.

A pipeline's `load` returns its data: any object with at least
- `recipe`: what prediction needs from the training data, computed once (in predict mode, the training run's,
  read from its checkpoints) and read the same way in both modes: the target (`{"kind", "columns",
  "classes"}`), the prior (what the training labels alone predict), and the template's own (scales, codes,
  flips, the tokenizer's key);
- `target` (kit.train.targets.Target) and `sample` (the sample submission, in its row order).
"""
from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit import templates
from kit.data import archives, tables
from kit.data.batch import Batch
from kit.errors import KitError
from kit.runtime import faults
from kit.runtime.budget import Budget
from kit.runtime.precision import InForce, Precision
from kit.runtime.run_folder import FoldFiles
from kit.runtime.session import Session
from kit.spec import Spec
from kit.train import metrics, targets, topk
from kit.train.objectives import Objective
from kit.train.results import FitConfig, FitResult
from kit.train.targets import Target
from kit.train.topk import TopK

UNNAMED = re.compile(r"Unnamed: \d+")  # pandas' name for a column whose header is blank (an index written with a frame)


class Pipeline(abc.ABC):
    """One template's data path and model (kit.templates names the class; kit.run drives it). A template
    subclasses it: the abstract methods are its own; the others are written once here, with the defaults that
    serve a template whose rows are a table's (each overridden where a template knows better), and kit.run calls
    every one of them: it never asks which a pipeline has.

    The hooks with defaults: `validation_rows` (None: no oof.csv for blends), `trial_rows`, `submission`,
    `host_bytes`, `release`, `judge` (the out-of-fold score), `cut` (the ensemble's predictions as the submission's
    values), and `fit_fold` with `fits_folds`: a pipeline whose model does not train in the loop (a booster:
    kit.pipelines.tabular) sets `fits_folds`, and its `fit_fold` trains a fold itself and writes what the loop
    writes (kit.runtime.run_folder.FoldFiles, kit.train.results.FitResult); kit.run.folds then calls it in place of
    the loop, with no preflight, no batch trials and no DDP, and its `model(pretrained=False)` may be any object with
    `load_state_dict`, which its `predict` reads."""

    fits_folds = False  # its folds train in `fit_fold`, not in kit's loop (the boosters)

    def __init__(self, session: Session):
        self.session, self.p, self.spec = session, session.params, session.spec

    @abc.abstractmethod
    def load(self) -> Any:
        """Read and check the competition's files and log what was found (predict mode: the test files and
        the sample submission only, read as the training run read its own)."""

    def check_data(self) -> None:
        """What `load` reads and checks of the competition's files, without what is slow or needs the model
        (decoding images, tokenizing, the model folder): a KitError where `load` would stop on the files.
        `kit init` runs it on a draft. Default: `load` itself."""
        self.load()

    @abc.abstractmethod
    def show_samples(self, data: Any, n: int = 12) -> Any:
        """A figure of a few rows (training rows; test rows in predict mode), saved as samples.png."""

    def identity(self, data: Any) -> str:
        """What decides training beside the parameters: a digest of the training data (kit.runtime.runs), which
        `load` keeps as `data.identity`."""
        return data.identity

    @abc.abstractmethod
    def split(self, data: Any) -> list[tuple[np.ndarray, np.ndarray]]:
        """The folds: (training rows, validation rows) of each."""

    def validation_rows(self, data: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(ids, targets) of the metric rows that validating `rows` yields, in the order it yields them in one
        process: what names a fold checkpoint's validation rows in oof.csv (kit.run.predictions). None: this
        template names none (its test predictions are kept for blends still)."""
        return None

    @abc.abstractmethod
    def model(self, data: Any, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        """The model on the device; `pretrained=False` before a fold checkpoint's weights are loaded into it;
        `fit_rows`: the fold's training rows, for statistics the model keeps in its state."""

    @abc.abstractmethod
    def objective(self, data: Any) -> Objective:
        """How a batch becomes a loss and metric rows (kit.train.objectives)."""

    @abc.abstractmethod
    def batches(self, data: Any, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0, test: bool = False,
                shard: tuple[int, int] = (0, 1), precision: Precision | InForce | None = None,
                workers: int | None = None) -> Iterable[Batch]:
        """Device batches of `rows` (of the test rows with `test`), shuffled and augmented for training, this
        rank's `shard` of them, inputs in the dtype of `precision` (the session's unless given)."""

    def trial_rows(self, data: Any) -> np.ndarray:
        """Training rows the preflight and the batch-size trials draw from (the hardest to fit first): here, every
        row a fold validates."""
        return np.unique(np.concatenate([rows for _, rows in self.split(data)]))

    @abc.abstractmethod
    def predict_rows(self, data: Any) -> int:
        """Rows a fold model predicts (each test-time view counted): the time budget's prediction reserve."""

    @abc.abstractmethod
    def predict(self, model: nn.Module, data: Any, precision: Precision, batch_size: int) -> np.ndarray:
        """(sample rows, outputs): probabilities or values, in the sample submission's row order."""

    def submission(self, data: Any, pred: np.ndarray) -> pd.DataFrame:
        """The submission frame: the sample's ids and columns, filled from `pred` (the values of `cut`)."""
        return submission_frame(data.sample, data.target, pred)

    def host_bytes(self, data: Any) -> int:
        """Host memory another process needs to load this data (parallel workers are checked against it): here
        none, for data memory-mapped and shared."""
        return 0

    def run_files(self, data: Any, folder: Path) -> None:
        """Write what every fold of the run in `folder` shares and its recipe names (seq2seq's table of the
        training pairs), once, before the folds train: here nothing."""
        return None

    def release(self, data: Any) -> None:
        """Give back what lives on the device, before worker processes take the GPUs: here nothing."""
        return None  # an optional hook, not an abstract one

    def fit_fold(self, data: Any, train_rows: np.ndarray, val_rows: np.ndarray, cfg: FitConfig, files: FoldFiles,
                 budget: Budget, fold: tuple[int, int], log: Callable[[str], None], desc: str) -> FitResult:
        """Train a fold without kit's loop (only where `fits_folds`)."""
        raise NotImplementedError(f"{type(self).__name__} trains its folds in kit's loop (fits_folds is False)")

    def judge(self, data: Any, rows: dict, metric: str) -> Judged:
        """The out-of-fold score of the folds' validation `rows` (joined), against the training labels' prior's;
        label sets are scored at the threshold that scores them best."""
        multilabel = rows["target"].ndim == 2 and metric not in metrics.VALUE_METRICS  # not several values
        threshold = None
        if multilabel and metric in metrics.THRESHOLDED:  # the score is taken at the threshold it searches for
            found, score = metrics.decide(metric, rows["pred"], rows["target"], rows.get("weight"))
            threshold = found.threshold
        else:
            score = metrics.score(metric, rows["pred"], rows["target"], rows.get("weight"), rows.get("groups"))
        kept = rows["pred"].index.shape[1] if isinstance(rows["pred"], topk.TopK) else 0
        baseline = metrics.score(metric, topk.repeat_row(prior(data), len(rows["target"]), kept, writable=False),
                                 rows["target"], rows.get("weight"), rows.get("groups"))
        return Judged(score, baseline, targets.prior_name(data.target, metric), threshold=threshold)

    def fold_sum(self, total: np.ndarray | TopK | None, pred: np.ndarray | TopK) -> np.ndarray | TopK:
        """The folds' test predictions gathered, one fold at a time (kit.run.ensemble): here `sum_folds`. Detection
        sets its folds' boxes side by side."""
        return sum_folds(total, pred)

    def fold_mean(self, total: np.ndarray | TopK | None, n: int) -> np.ndarray | TopK | None:
        """The ensemble of `n` folds' gathered predictions: here `mean_folds`. Detection fuses their boxes."""
        return mean_folds(total, n)

    def cut(self, data: Any, pred: np.ndarray | TopK, oof: list[dict]) -> np.ndarray | TopK:
        """The ensemble's predictions as the submission's values: label probabilities cut into label sets (or,
        under bias_auc, toxic) where the folds' out-of-fold rows (`oof`, a list of their validation rows) score
        best; other predictions as they are."""
        metric = self.session.spec.metric
        if metric in metrics.THRESHOLDED and data.target.multilabel:
            return metrics.apply_cut(metric, pred, label_cut(self.session, oof))
        return pred


def sum_folds(total: np.ndarray | TopK | None, pred: np.ndarray | TopK) -> np.ndarray | TopK:
    """The running sum of the folds' predictions: the first fold's array itself, then added to in place (rows of
    the likeliest classes: over the union of the classes each keeps, none let go before the last fold)."""
    if total is None:
        return pred
    if isinstance(total, TopK):  # the union, up to UNION classes a row (5 folds' 32 each would be 160)
        return topk.weighted_sum([total, pred], [1.0, 1.0], k=min(total.index.shape[1] + pred.index.shape[1], topk.UNION))
    np.add(total, pred, out=total, casting="unsafe")
    return total


def mean_folds(total: np.ndarray | TopK | None, n: int) -> np.ndarray | TopK | None:
    """The sum of `n` folds' predictions divided in place."""
    if total is None or n == 1:
        return total
    if isinstance(total, TopK):
        total.value /= n
    else:
        np.divide(total, n, out=total, casting="unsafe")
    return total


def label_cut(session: Session, oof: list[dict]) -> metrics.Cut:
    """Where the ensemble's label probabilities become label sets (or, under bias_auc, toxic): the threshold
    that maximises the metric over the out-of-fold rows of the folds that predict (0.5 with none)."""
    if not oof:
        session.warn("no out-of-fold predictions to choose a threshold on: the cut is 0.5")
        return metrics.Cut(at_least_one=session.spec.metric != "bias_auc")
    joined = metrics.join_rows(oof)
    cut, value = metrics.decide(session.spec.metric, joined["pred"], joined["target"], joined.get("weight"))
    session.log(f"{metrics.describe_cut(session.spec.metric, cut)}: the threshold with the best out-of-fold "
                f"{session.spec.metric}, {value:.4f}")
    return cut


@dataclass(frozen=True)
class Judged:
    """A pipeline's own reading of out-of-fold rows (`Pipeline.judge`)."""

    score: float
    baseline: float
    baseline_name: str
    cut: str = ""  # the cut the score is taken at, in words ("" for none)
    threshold: float | None = None  # label sets: the threshold the score is taken at


def target_record(target: Target) -> dict[str, Any]:
    """A target as a recipe keeps it (plain values, as checkpoints store them)."""
    return {"kind": target.kind, "columns": target.columns, "classes": target.classes, "top": target.top,
            "limits": target.limits}


def describe_target(t: Target) -> str:
    """What a target is, for the data step's lines: its classes (the first few), or its values, as its kind says."""
    return t.record.describe(t)


def prior(data: Any) -> np.ndarray:
    """(outputs,) what the training labels alone predict, from the data's recipe."""
    return np.asarray(data.recipe["prior"])


def read_sample(session: Session) -> tuple[pd.DataFrame, Path]:
    """The sample submission, its ids (where [data] names an id column) present and unique (unless [data]
    sample_repeats: hms' rows of a recording's test windows)."""
    spec = session.spec
    path = archives.find_file(session.data_dir, spec.sample_submission, "sample submission", log=session.log)
    sample = tables.read_table(path, spec.id_column or None)
    if spec.id_column:
        tables.require_columns(sample, [spec.id_column], path)
        if spec.class_column:  # a row per image and class (uw-madison's id,class): the pair is unique
            tables.require_columns(sample, [spec.class_column], path, "[data] class_column")
            pairs = sample[spec.id_column].astype(str) + " " + sample[spec.class_column].astype(str)
            tables.require_unique(pd.DataFrame({f"{spec.id_column} and {spec.class_column}": pairs}),
                                  f"{spec.id_column} and {spec.class_column}", path)
        elif not spec.sample_repeats:
            tables.require_unique(sample, spec.id_column, path)
    return sample, path


def sample_targets(sample: pd.DataFrame, spec: Spec, path: Path, test_columns: Iterable[str] = ()) -> list[str]:
    """The sample's columns the model fills: [data] submission_columns, else every column but the id, a
    blank-headed index and the columns the test table holds (`test_columns`: a Date, a text), which are copied
    through from the sample as they are."""
    if spec.submission_columns:
        tables.require_columns(sample, spec.submission_columns, path, "[data] submission_columns")
        if spec.id_column in spec.submission_columns:
            raise KitError(f"{path.name}: '{spec.id_column}' is the id column and in [data] submission_columns; "
                           "list only the columns the model fills")
        return list(spec.submission_columns)
    through = set(test_columns)
    columns = [c for c in sample.columns if c != spec.id_column and not UNNAMED.fullmatch(str(c)) and c not in through]
    if not columns:
        kept = [c for c in sample.columns if c != spec.id_column]
        detail = f"its other columns ({', '.join(kept[:4])}) are in the test table or unnamed" if kept else "only an id column"
        raise KitError(f"{path.name}: {detail}; the sample submission needs target columns (name them in "
                       "[data] submission_columns)")
    return columns


def trained_sample(session: Session) -> tuple[pd.DataFrame, Path, Target]:
    """Predict mode: the sample submission, checked, and the target the model was trained for, whose columns
    it must have (a hidden test set changes the rows, never the columns)."""
    sample, path = read_sample(session)
    target = Target(**session.trained.recipe["target"])
    absent = [c for c in target.columns if c not in sample.columns]
    if absent:
        columns = [c for c in sample.columns if c != session.spec.id_column]
        raise KitError(f"{path.name}: target columns {columns[:4]} are not the {len(target.columns)} the model "
                       f"was trained for ({list(target.columns)[:4]}); predict with this competition's model")
    return sample, path, target


def rows_of_the_test(sample: pd.DataFrame, ids: Sequence[str], id_column: str, where: str,
                     log: Callable[[str], None]) -> pd.DataFrame:
    """Predict mode, where the test table lists ids the sample submission does not (a rerun on a hidden test
    set that swapped the test table alone): the submission's rows are the test table's, in its order, with the
    sample's columns (with no id_column, as many rows as the test table has). Training stops at the mismatch
    instead (one line); an inference kernel that passed its commit must not fail on Kaggle's rerun."""
    rows = pd.DataFrame({id_column: list(ids)}) if id_column else pd.DataFrame(index=range(len(ids)))
    for column in sample.columns:
        if column != id_column:
            rows[column] = sample[column].iloc[0] if len(sample) else 0
    log(f"{where}: the submission's {len(rows)} rows are the test table's (the sample submission lists other ids, as "
        "a rerun on a hidden test set may)")
    return rows[list(sample.columns)]


def fold_keys(spec: Spec, table: pd.DataFrame, path: Path) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(groups, folds) of the training table's rows: [data] group_column's values (rows sharing one stay in one
    fold) and fold_column's (the competitor's own folds); None where not set. An empty cell is one line."""
    keys = []
    for key, column in (("group_column", spec.group_column), ("fold_column", spec.fold_column)):
        if not column:
            keys.append(None)
            continue
        tables.require_columns(table, [column], path, f"[data] {key}")
        empty = table[column].isna().to_numpy()
        if empty.any():
            raise KitError(f"{path.name}: {key} '{column}' is empty in row {table.index[np.flatnonzero(empty)[0]] + 2} "
                           f"({int(empty.sum())} such rows); give every training row its {key.split('_')[0]}")
        keys.append(table[column].astype(str).to_numpy())
    if keys[1] is not None and len(np.unique(keys[1])) < 2:
        raise KitError(f"{path.name}: fold_column '{spec.fold_column}' holds one fold ('{keys[1][0]}') for every row; it "
                       "needs two or more to validate on one and train on the others (or leave fold_column empty)")
    return keys[0], keys[1]


@torch.inference_mode()  # as a decorator, torch enters the mode around each step of the generator only
def predictions(model: nn.Module, batches: Iterable[Batch], precision: Precision,
                forward: Callable[[nn.Module, Batch], torch.Tensor]) -> Iterator[tuple[Batch, np.ndarray]]:
    """Each batch with `forward(model, batch)`'s predictions as float32 numpy rows (or rows of the likeliest
    classes, kit.train.topk), in eval mode, without gradients, under `precision`'s autocast: the loop every
    pipeline's `predict` runs."""
    model.eval()
    for batch in batches:
        with precision.autocast():
            pred = forward(model, batch)
        faults.oom("oom.predict")
        yield batch, topk.host(pred)


def submission_frame(sample: pd.DataFrame, target: Target, pred: np.ndarray) -> pd.DataFrame:
    """The sample's columns, its target columns filled from `pred` (the others, ids and columns copied through,
    as the sample has them), in the sample's column order. A melted target's rows each keep the output they name."""
    if target.record.pick is not None:
        pred = np.asarray(pred)[np.arange(len(sample)), target.record.pick(target, sample)][:, None]
    filled = targets.to_columns(target, pred)
    sub = sample.copy()
    for column, values in filled.items():
        sub[column] = values
    return sub[list(sample.columns)]


def csv_text(sub: pd.DataFrame) -> str:
    """The submission as CSV, a blank-headed column of the sample (an index pandas wrote) blank-headed again."""
    return sub.rename(columns=lambda c: "" if UNNAMED.fullmatch(str(c)) else c).to_csv(index=False)


def validate(sub: pd.DataFrame, sample: pd.DataFrame, target: Target, id_column: str, folder: Path | None = None) -> None:
    """Raise KitError unless `sub` has the sample's columns, ids in the sample's order (rows in its order where
    there is no id column), and sane values; mask files it names must be in `folder` (the output folder)."""
    if list(sub.columns) != list(sample.columns):
        raise KitError(f"submission columns {list(sub.columns)[:5]}... differ from the sample's {list(sample.columns)[:5]}...")
    if len(sub) != len(sample):
        raise KitError(f"submission has {len(sub)} rows, the sample submission {len(sample)}")
    if id_column and not sub[id_column].reset_index(drop=True).equals(sample[id_column].reset_index(drop=True)):
        raise KitError(f"submission ids differ from the sample submission's ('{id_column}' column, same order)")
    values, check = sub[list(target.columns)], target.record.check
    if ":" in check:  # masks: checked in their own rooms, imported only for a submission of them
        templates.load(check)(values.iloc[:, 0], sample[target.columns[0]], folder)
        return
    if check == "names":
        allowed, spaced = set(map(str, target.classes)), target.record.spaced
        cells = values.iloc[:, 0].astype(str)
        wrong = list(dict.fromkeys(t for v in cells for t in (v.split() if spaced or target.top > 1 else [v])
                                   if t not in allowed))
        if wrong:
            raise KitError(f"submission holds {'tags' if spaced else 'labels'} that are not "
                           f"{'labels' if spaced else 'classes'}: {wrong[:3]}")
        return
    numbers = values.to_numpy(dtype=np.float64)
    if not np.isfinite(numbers).all():
        raise KitError(f"submission holds {int((~np.isfinite(numbers)).sum())} NaN or infinite values")
    if check in ("distribution", "probability"):
        if numbers.min() < 0 or numbers.max() > 1:
            raise KitError("submission probabilities fall outside [0, 1]")
        if check == "distribution" and not np.allclose(numbers.sum(1), 1.0, atol=1e-6):
            raise KitError("submission class probabilities do not sum to 1 in every row")
