"""Blends of several runs' predictions: non-negative weights fitted on the out-of-fold rows every run predicted,
by the competition's metric, and the same weights applied to the runs' test predictions.

Each metric family has its rule (`rule`, `finish`): class probabilities are averaged and renormalised;
rank-based metrics (AUC) average each run's ranks instead of its scores, which live on other scales;
values (MAE, RMSE, the regressed score of QWK) are averaged and then scored as the metric scores them
(QWK rounds the blended value); metrics taken at a threshold (F-scores of label sets, bias_auc) choose it
again on the blend's out-of-fold rows. The weights: a non-negative least-squares fit (scipy's nnls) and hill
climbing with replacement from the best run (Caruana et al., 2004), whichever scores better; a blend that
does not beat the best run alone is that run alone.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from kit.metric_records import metric_record
from kit.run import kept
from kit.train import metrics, topk
from kit.train.targets import Target
from kit.train.topk import TopK

STEPS = 100  # hill climbing adds at most this many runs to its bag
# a least-squares fit holds (rows x outputs, runs) float64 and the truth beside it: past this many cells (iMet's two
# runs: 840 million), hill climbing alone weighs the runs
LEAST_SQUARES_CELLS = 50_000_000


@dataclass(frozen=True)
class Fitted:
    metric: str
    rule: str  # "mean" (of probabilities or values) or "rank" (of each column's ranks)
    weights: np.ndarray  # (runs,) non-negative, summing to 1
    score: float  # the blend's out-of-fold score
    singles: tuple[float, ...]  # each run's out-of-fold score on the same rows
    how: str  # "hill climbing", "least squares", or "the best run alone"
    cut: metrics.Cut | None = None  # where label probabilities become labels, chosen on the blend's rows

    @property
    def best(self) -> int:
        """The run that scores best alone."""
        return best_of(self.metric, self.singles)


def rule(metric: str, target: Target) -> str:
    """"rank" where the metric ranks each column's scores (AUC of a binary or per-label probability), else "mean".
    Multi-class AUC keeps the mean: its grader wants rows of probabilities that sum to 1."""
    return "rank" if metric_record(metric).blend == "rank" and target.record.ranks else "mean"


def transform(pred: np.ndarray | TopK, how: str, target: Target) -> np.ndarray | TopK:
    """(N, outputs) a run's predictions in the space they are averaged in: as they are, or each column's ranks
    scaled to (0, 1] (scipy's rankdata, ties averaged). Binary: the positive class's rank, and its complement.
    Rows of the likeliest classes (kit.train.topk) are averaged as they are."""
    if isinstance(pred, TopK):
        return pred
    if how != "rank":
        return np.asarray(pred, dtype=np.float32)  # float32, as kept (a float64 copy of iMet's rows is 3.4 GB)
    pred = np.asarray(pred, dtype=np.float64)
    if target.record.positive:
        r = stats.rankdata(pred[:, 1]) / len(pred)
        return np.stack([1.0 - r, r], axis=1)
    return stats.rankdata(pred, axis=0) / len(pred)


def finish(mixed: np.ndarray | TopK, target: Target) -> np.ndarray | TopK:
    """A weighted mean as a prediction: class probabilities renormalised to sum to 1 in every row (rows of the
    likeliest classes are read for their order alone: as they are)."""
    if isinstance(mixed, TopK):
        return mixed
    if target.classification:
        return mixed / np.maximum(mixed.sum(1, keepdims=True), np.finfo(mixed.dtype).tiny)
    return mixed


def added(parts: Sequence[np.ndarray | TopK], weights: Sequence[float]):
    """Σ weight x part, of dense rows or of rows of the likeliest classes."""
    if isinstance(parts[0], TopK):
        return topk.weighted_sum(parts, weights)
    return sum(w * p for w, p in zip(weights, parts))


def mix(space: Sequence[np.ndarray | TopK], weights: np.ndarray, target: Target) -> np.ndarray | TopK:
    """The weighted mean of predictions already in their blending space (`transform`)."""
    if isinstance(space[0], TopK):
        used = [(w, p) for w, p in zip(weights, space) if w > 0]
        total = max(float(np.sum(weights)), 1e-300)
        return topk.weighted_sum([p for _, p in used], [w / total for w, _ in used])
    total = np.zeros_like(space[0])
    for w, p in zip(weights, space):
        if w > 0:
            total += float(w) * p  # a Python float keeps float32 rows float32
    return finish(total / max(float(np.sum(weights)), 1e-300), target)


def combine(preds: Sequence[np.ndarray], weights: np.ndarray, how: str, target: Target) -> np.ndarray:
    """The blend of the runs' predictions `preds` with `weights`, by the rule `how`."""
    return mix([transform(p, how, target) for p in preds], weights, target)


def evaluate(metric: str, pred: np.ndarray, truth: np.ndarray, weight: np.ndarray | None,
             target: Target) -> tuple[float, metrics.Cut | None]:
    """The metric on these rows; where it is taken at a threshold, at the one that maximises it (and that cut)."""
    if metric in metrics.THRESHOLDED and target.multilabel:
        cut, value = metrics.decide(metric, pred, truth, weight)
        return value, cut
    return metrics.score(metric, pred, truth, weight), None


def best_of(metric: str, scores: Sequence[float]) -> int:
    best = 0
    for i, s in enumerate(scores):
        if metrics.better(metric, s, scores[best]) and i != best:
            best = i
    return best


def dense_truth(truth: np.ndarray, target: Target, outputs: int) -> np.ndarray:
    """(N, outputs) what a perfect prediction holds: one-hot classes, 0/1 labels, or the values."""
    if target.classification:
        return np.eye(outputs)[truth.astype(np.int64)]
    return np.asarray(truth, dtype=np.float64).reshape(len(truth), -1)


def least_squares(space: Sequence[np.ndarray], truth: np.ndarray, weight: np.ndarray | None, target: Target) -> np.ndarray:
    """Non-negative weights whose blend is nearest the truth in squared error (scipy.optimize.nnls), summing to
    1; equal weights where nnls gives none. Rows the score masks out count for nothing."""
    b = dense_truth(truth, target, space[0].shape[1])
    scale = np.ones(len(b)) if weight is None else np.sqrt(np.maximum(weight, 0.0))
    a = np.stack([(p * scale[:, None]).ravel() for p in space], axis=1)  # (N x outputs, runs)
    w, _ = optimize.nnls(a, (b * scale[:, None]).ravel())
    return w / w.sum() if w.sum() > 0 else np.full(len(space), 1.0 / len(space))


def hill_climb(metric: str, space: Sequence[np.ndarray], truth: np.ndarray, weight: np.ndarray | None, target: Target,
               start: int, start_score: float, steps: int = STEPS) -> np.ndarray:
    """Hill climbing with replacement (Caruana et al.): from the best run, add to the bag whichever run (again or
    not) improves the blend's score most, until none does; the weights are the bag's counts."""
    counts = np.zeros(len(space))
    counts[start] = 1
    total, now = space[start], start_score
    for _ in range(steps):
        n = counts.sum() + 1
        trials = [evaluate(metric, finish(added([total, p], [1 / n, 1 / n]), target), truth, weight, target)[0]
                  for p in space]
        pick = best_of(metric, trials)
        if not metrics.better(metric, trials[pick], now):
            break
        counts[pick] += 1
        total = added([total, space[pick]], [1.0, 1.0])
        now = trials[pick]
    return counts / counts.sum()


def fit(metric: str, preds: Sequence[np.ndarray], truth: np.ndarray, weight: np.ndarray | None, target: Target) -> Fitted:
    """Weights for the runs' out-of-fold predictions `preds` (each (N, outputs), rows aligned with `truth`)."""
    how = rule(metric, target)
    space = [transform(p, how, target) for p in preds]
    singles = tuple(evaluate(metric, finish(p, target), truth, weight, target)[0] for p in space)
    best = best_of(metric, singles)
    alone = np.eye(len(space))[best]
    chosen, chosen_how, chosen_score = alone, "the best run alone", singles[best]
    if len(space) > 1:
        tries = [("hill climbing", hill_climb(metric, space, truth, weight, target, best, singles[best]))]
        # least squares fits dense rows to the dense truth, where they are few enough to hold as float64 twice
        if not isinstance(space[0], TopK) and space[0].size * len(space) <= LEAST_SQUARES_CELLS:
            tries.append(("least squares", least_squares(space, truth, weight, target)))
        for name, w in tries:
            value = evaluate(metric, mix(space, w, target), truth, weight, target)[0]
            if metrics.better(metric, value, chosen_score):
                chosen, chosen_how, chosen_score = w, name, value
    score, cut = evaluate(metric, mix(space, chosen, target), truth, weight, target)
    return Fitted(metric, how, chosen, score, singles, chosen_how, cut)


def fold_scores(metric: str, pred: np.ndarray, truth: np.ndarray, weight: np.ndarray | None, target: Target,
                folds: np.ndarray) -> list[float]:
    """The metric on each fold's rows, in fold order."""
    out = []
    for fold in np.unique(folds):
        rows = folds == fold
        out.append(evaluate(metric, pred[rows], truth[rows], None if weight is None else weight[rows], target)[0])
    return out


def describe(fitted: Fitted, names: Sequence[str], per_fold: Sequence[Sequence[float]], blend_folds: Sequence[float],
             folds: Sequence[int], rows: int) -> str:
    """The table the notebook and `make blend` print: each run's score per fold and out of fold, its weight,
    the blend's, and the line that says what the submission is."""
    width = max(12, *(len(n) for n in names))
    head = f"{'run':<{width}}  " + "".join(f"{f'fold {f + 1}':>9}" for f in folds) + f"  {'out-of-fold':>11}  {'weight':>6}"
    runs = f"{len(names)} run{'s' * (len(names) != 1)}"
    lines = [f"blend of {runs} on the {rows} out-of-fold rows every run predicted ({fitted.metric}, "
             f"{'ranks' if fitted.rule == 'rank' else 'weighted mean'}):", head]
    for name, scores, single, w in zip(names, per_fold, fitted.singles, fitted.weights):
        lines.append(f"{name:<{width}}  " + "".join(f"{s:>9.4f}" for s in scores) + f"  {single:>11.4f}  {w:>6.3f}")
    lines.append(f"{'blend':<{width}}  " + "".join(f"{s:>9.4f}" for s in blend_folds) + f"  {fitted.score:>11.4f}  {'':>6}")
    if fitted.cut is not None:
        lines.append(f"{metrics.describe_cut(fitted.metric, fitted.cut)}: chosen again on the blend's out-of-fold rows")
    best = fitted.best
    if fitted.how == "the best run alone" and len(names) > 1:
        lines.append(f"the blend scores no better than {names[best]} alone ({fitted.singles[best]:.4f}): the submission "
                     f"is {names[best]}'s")
    elif len(names) > 1:
        lines.append(f"weights by {fitted.how}: out-of-fold {fitted.metric} {fitted.score:.4f} against the best run's "
                     f"{fitted.singles[best]:.4f} ({names[best]})")
    return "\n".join(lines)


@dataclass
class Blended:
    fitted: Fitted
    names: list[str]
    test: np.ndarray  # (test rows, outputs) the blended test predictions, cut into labels where the metric decides them
    oof: list  # the blend's out-of-fold rows, [(fold, ids, rows)] as kit.run.predictions.save_oof writes them
    record: dict  # blend.json: the rule, the weights, the scores


def blend_runs(metric: str, loaded: Sequence[kept.RunPredictions], tests: Sequence[np.ndarray | TopK],
               log: Callable[[str], None]) -> Blended:
    """The blend of runs whose kept predictions are `loaded` and whose test predictions (in one row order) are
    `tests`: weights fitted on the out-of-fold rows every run predicted, the table logged, the same weights
    applied to the test predictions: what the inference kernel and `make blend` both do."""
    aligned = kept.align(list(loaded), log)
    kept_k = [p.index.shape[1] for p in (*aligned.preds, *tests) if isinstance(p, TopK)]
    if kept_k:  # runs of which some keep their rows' likeliest classes: all blend on the likeliest, as many of each
        aligned.preds = [p if isinstance(p, TopK) else topk.of(p, min(kept_k)) for p in aligned.preds]
        tests = [p if isinstance(p, TopK) else topk.of(p, min(kept_k)) for p in tests]
    target, truth, weight = aligned.target, aligned.truth, aligned.weight
    fitted = fit(metric, aligned.preds, truth, weight, target)
    space = [transform(p, fitted.rule, target) for p in aligned.preds]
    mixed = mix(space, fitted.weights, target)
    names = [r.name for r in loaded]
    folds = sorted(int(f) for f in np.unique(aligned.folds))
    per_fold = [fold_scores(metric, finish(p, target), truth, weight, target, aligned.folds) for p in space]
    log(describe(fitted, names, per_fold, fold_scores(metric, mixed, truth, weight, target, aligned.folds), folds,
                 len(truth)))
    test = combine(tests, fitted.weights, fitted.rule, target)
    if fitted.cut is not None:
        test = metrics.apply_cut(metric, test, fitted.cut)
    parts = []
    for fold in folds:
        rows = aligned.folds == fold
        parts.append((fold, aligned.ids[rows], {"pred": mixed[rows], "target": truth[rows],
                                                **({} if weight is None else {"weight": weight[rows]})}))
    record = {"metric": metric, "rule": fitted.rule, "how": fitted.how, "score": fitted.score, "rows": len(truth),
              "threshold": None if fitted.cut is None else fitted.cut.threshold,
              "runs": [{"name": r.name, "run": r.record.get("run", ""), "template": r.record.get("template", ""),
                        "score": s, "weight": float(w)} for r, s, w in zip(loaded, fitted.singles, fitted.weights)]}
    return Blended(fitted, names, test, parts, record)
