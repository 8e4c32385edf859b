"""Predict with every fold checkpoint that exists, and write a submission that is checked before it lands."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from kit import files
from kit.errors import KitError
from kit.runtime import checkpoint, runs, trained
from kit.runtime.precision import Precision
from kit.runtime.recovery import free_memory, is_oom
from kit.runtime.session import Session
from kit.train import metrics, targets
from kit.train.targets import Target


def fold_checkpoints(session: Session) -> dict[int, Path]:
    """{fold: path} of the best-epoch checkpoints in output_dir, finished folds or not."""
    found = {}
    for path in sorted(session.checkpoint_dir.glob("fold*.pt")):
        m = re.fullmatch(r"fold(\d+)\.pt", path.name)
        if m:
            found[int(m.group(1))] = path
    return dict(sorted(found.items()))


def ensemble(session: Session, pipe, data, oof: list | None = None) -> tuple[np.ndarray | None, list[int]]:
    """Mean of the test predictions of every fold checkpoint, and which folds took part (their validation
    rows appended to `oof`, when given). Each fold predicts in the precision it was trained in (a fold that
    fell back to fp32 may overflow in fp16)."""
    total, used = None, []
    runs.open_run(session, pipe, data)
    for fold, path in fold_checkpoints(session).items():
        state = checkpoint.load(path)
        if session.trained is not None:  # another run's checkpoint: it must be one this notebook can rebuild
            trained.compatible(state.get("kit") or {}, path, session.template)
        model = pipe.model(data, pretrained=False)
        try:
            model.load_state_dict(state["model"])
        except RuntimeError as e:  # another model or other sizes: never a state_dict traceback
            first = str(e).splitlines()[1].strip() if len(str(e).splitlines()) > 1 else str(e)
            raise KitError(f"{path} does not fit this run's model ({first}); delete {path.parent} to train it afresh") from None
        precision = Precision(state.get("precision", session.precision.name), session.precision.device_type)
        pred = predict_fold(session, pipe, data, model, precision, f"fold {fold + 1}")
        del model
        free_memory()
        if pred is None:
            continue
        total = pred if total is None else total + pred
        used.append(fold)
        if oof is not None and state.get("rows"):
            oof.append(state["rows"])
        session.log(f"predicted the test set with fold {fold + 1} (epoch {state['epoch']}, score {state['score']:.4f}, {precision.name})")
    return (None if total is None else total / len(used)), used


def predict_fold(session: Session, pipe, data, model, precision: Precision, desc: str) -> np.ndarray | None:
    """`pipe.predict` at twice the training batch, halved for as long as it runs out of memory, and redone
    in fp32 if mixed precision gives values that are not finite; None (with a warning) if fp32 does too."""
    size = 2 * pipe.batch_size
    while True:
        failed = False
        try:
            pred = pipe.predict(model, data, precision, size)
        except Exception as e:  # noqa: BLE001 - only out-of-memory errors are handled, the rest re-raised
            if not is_oom(e) or size == 1:
                raise
            failed = True
        if failed:  # outside the except block, so the failed batch's tensors are gone
            free_memory()
            size //= 2
            session.warn(f"{desc}: out of memory predicting; now batches of {size}")
            continue
        if np.isfinite(pred).all():
            return pred
        if precision.name == "fp32":
            session.warn(f"{desc}: predictions that are not finite even in fp32; this fold is left out of the submission")
            return None
        session.warn(f"{desc}: predictions that are not finite under {precision.name}; predicting again in fp32")
        precision = precision.fallback()


def write_submission(session: Session, pipe, data) -> pd.DataFrame:
    """Ensemble the fold checkpoints (or fall back to the training prior when there are none), build the
    submission in the sample's id and column order, validate it, and write it atomically."""
    oof: list[dict] = []
    pred, used = ensemble(session, pipe, data, oof)
    if pred is None:
        session.warn("no fold checkpoint exists: the submission is the training prior, not a model's prediction")
        pred = np.tile(pipe.prior(data), (len(data.sample), 1))
    if session.spec.metric in metrics.THRESHOLDED and data.target.multilabel:
        pred = metrics.binarize(pred, label_cut(session, oof))
    sub = pipe.submission(data, pred)
    validate(sub, data.sample, data.target, session.spec.id_column)
    path = session.output_dir / "submission.csv"
    files.write_text(path, sub.to_csv(index=False))
    session.log(f"wrote {path}: {len(sub)} rows x {sub.shape[1]} columns, from folds {[f + 1 for f in used]}")
    return sub


def label_cut(session: Session, oof: list[dict]) -> metrics.Cut:
    """Where the ensemble's label probabilities become label sets: the threshold that maximises the F-score
    over the out-of-fold rows of the folds that predict (0.5 with none)."""
    if not oof:
        session.warn("no out-of-fold predictions to choose a threshold on: labels above 0.5 (and the likeliest)")
        return metrics.Cut()
    joined = metrics.join_rows(oof)
    cut, value = metrics.decide(session.spec.metric, joined["pred"], joined["target"], joined.get("weight"))
    session.log(f"labels above {cut.threshold:.2f}{' (at least the likeliest one)' if cut.at_least_one else ''}: "
                f"the threshold with the best out-of-fold {session.spec.metric}, {value:.4f}")
    return cut


def submission_frame(sample: pd.DataFrame, target: Target, pred: np.ndarray) -> pd.DataFrame:
    """The sample's id column(s) and its target columns filled from `pred`, in the sample's column order."""
    filled = targets.to_columns(target, pred)
    sub = sample.copy()
    for column, values in filled.items():
        sub[column] = values
    return sub[list(sample.columns)]


def validate(sub: pd.DataFrame, sample: pd.DataFrame, target: Target, id_column: str) -> None:
    """Raise KitError unless `sub` has the sample's columns, ids in the sample's order, and sane values."""
    if list(sub.columns) != list(sample.columns):
        raise KitError(f"submission columns {list(sub.columns)[:5]}... differ from the sample's {list(sample.columns)[:5]}...")
    if len(sub) != len(sample):
        raise KitError(f"submission has {len(sub)} rows, the sample submission {len(sample)}")
    if not sub[id_column].reset_index(drop=True).equals(sample[id_column].reset_index(drop=True)):
        raise KitError(f"submission ids differ from the sample submission's ('{id_column}' column, same order)")
    values = sub[list(target.columns)]
    if target.kind == "tags":
        allowed = set(target.classes)
        wrong = [t for v in values.iloc[:, 0].astype(str) for t in v.split() if t not in allowed]
        if wrong:
            raise KitError(f"submission holds tags that are not labels: {wrong[:3]}")
        return
    if target.kind == "label":
        allowed = set(map(str, target.classes))
        wrong = [v for v in values.iloc[:, 0] if str(v) not in allowed]
        if wrong:
            raise KitError(f"submission holds labels that are not classes: {wrong[:3]}")
        return
    numbers = values.to_numpy(dtype=np.float64)
    if not np.isfinite(numbers).all():
        raise KitError(f"submission holds {int((~np.isfinite(numbers)).sum())} NaN or infinite values")
    if target.kind in ("probs", "binary", "multi"):
        if numbers.min() < 0 or numbers.max() > 1:
            raise KitError("submission probabilities fall outside [0, 1]")
        if target.kind == "probs" and not np.allclose(numbers.sum(1), 1.0, atol=1e-3):
            raise KitError("submission class probabilities do not sum to 1 in every row")
