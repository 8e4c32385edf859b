"""Cross-validated training: every fold through the one loop, its best weights and validation rows kept."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kit import files
from kit.runtime import checkpoint
from kit.runtime.session import Session, seed_everything
from kit.train import metrics
from kit.train.loop import FitConfig, fit


@dataclass
class CVResult:
    metric: str
    folds: list[dict] = field(default_factory=list)  # one summary per finished fold
    score: float = float("nan")  # out-of-fold score over the finished folds

    @property
    def finished(self) -> list[int]:
        return [f["fold"] for f in self.folds]


def fold_paths(session: Session, fold: int) -> dict[str, Path]:
    d = session.checkpoint_dir
    return {"best": d / f"fold{fold}.pt", "rows": d / f"fold{fold}.rows.npz", "done": d / f"fold{fold}.json"}


def fit_config(session: Session) -> FitConfig:
    p = session.params
    return FitConfig(
        epochs=p.epochs,
        lr=p.lr,
        weight_decay=p.weight_decay,
        warmup_epochs=p.warmup_epochs,
        patience=p.patience,
        metric=session.spec.metric,
    )


def train_folds(session: Session, pipe, data) -> CVResult:
    """Train each fold of `pipe.split(data)`; folds finished by an earlier run into the same output_dir
    are reused as they are."""
    splits = pipe.split(data)
    cfg = fit_config(session)
    result = CVResult(metric=cfg.metric)
    rows = []
    for fold, (train_idx, val_idx) in enumerate(splits):
        saved = fold_paths(session, fold)
        desc = f"fold {fold + 1}/{len(splits)}"
        if saved["done"].exists() and saved["best"].exists() and saved["rows"].exists():
            summary = checkpoint.load_json(saved["done"])
            session.log(f"{desc}: finished earlier ({cfg.metric} {summary['best_score']:.4f}), reusing its checkpoint")
        else:
            seed_everything(session.params.seed + fold)
            session.log(f"{desc}: {len(train_idx)} train / {len(val_idx)} validation")
            model = pipe.model(data)
            fitted = fit(
                model,
                pipe.task(data),
                pipe.batches(data, train_idx, train=True, seed=session.params.seed + fold),
                pipe.batches(data, val_idx, train=False),
                cfg,
                session.precision,
                saved["best"],
                log=session.log,
                desc=desc,
            )
            if not fitted.best_epoch:
                session.warn(f"{desc}: no epoch gave a finite {cfg.metric}; this fold is left out")
                continue
            _save_rows(fitted.rows, saved["rows"])
            summary = {
                "fold": fold,
                "best_score": fitted.best_score,
                "best_epoch": fitted.best_epoch,
                "epochs_run": fitted.epochs_run,
                "stopped": fitted.stopped,
                "history": fitted.history,
            }
            checkpoint.save_json(summary, saved["done"])
        result.folds.append(summary)
        rows.append(dict(np.load(saved["rows"])))
    if rows:
        joined = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        result.score = metrics.score(cfg.metric, joined["pred"], joined["target"], joined.get("weight"))
    session.log(summary_table(result, len(splits)))
    return result


def summary_table(result: CVResult, planned: int) -> str:
    lines = [f"{'fold':>4}  {'best epoch':>10}  {'epochs':>6}  {result.metric:>10}  stopped"]
    for f in result.folds:
        lines.append(
            f"{f['fold'] + 1:>4}  {f['best_epoch']:>10}  {f['epochs_run']:>6}  {f['best_score']:>10.4f}  {f['stopped']}"
        )
    lines.append(f"out-of-fold {result.metric} over {len(result.folds)} of {planned} folds: {result.score:.4f}")
    return "\n".join(lines)


def _save_rows(rows: dict[str, np.ndarray], path: Path) -> None:
    with files.atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **rows)
