"""Competition metrics on (prediction, target) rows, with optional weights (a score mask is 0/1 weights).

Each is computed as the competition's grader computes it (MLE-bench's grade.py where it differs from Kaggle's
page), so that the out-of-fold score, early stopping and the thresholds aim at what is graded."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from sklearn import metrics as skm

from kit.metric_records import greater_is_better, metric_record, metrics_where, top_k
from kit.train import bias_metrics, cuts, topk
from kit.train.topk import TopK

# views of kit.metric_records.METRICS, the one metric table
LABEL_SETS = metrics_where(family="label_set")  # metrics of label sets (tags, or 0/1 label columns)
# taken at a threshold chosen on the out-of-fold predictions: label sets, and bias_auc, whose grader cuts at 0.5
THRESHOLDED = metrics_where(cut=True)
VALUE_METRICS = metrics_where(family="value")  # what scores one or several values per row (mean over columns)
CORRELATIONS = ("pearson", "spearman")
THRESHOLDS = np.round(np.arange(0.02, 0.99, 0.01), 2)  # where an F-score metric's threshold is looked for, and
# among this many quantiles of the predictions themselves: outputs squeezed into a band narrower than the grid's step
# (every one within 0.0006 seen, ranked with an AUC of 0.93) got a cut outside it, and a constant submission
QUANTILES = 100
QUANTILE_VALUES = 1_000_000  # predictions the quantiles are taken from at most (evenly spaced among them)


def score(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None,
          groups: np.ndarray | None = None) -> float:
    """`pred`: (N, C) class probabilities, or (N,) / (N, 1) values; `target`: (N,) class indices or values,
    or (N, C) 0/1 labels (multi-label: `pred` holds each label's probability). Mask metrics take overlap counts
    (kit.train.mask_metrics, named by their records and imported only here, when scored). `groups`: (N,) each
    row's group, which a grouped metric (its record's `grouped`) scores apart."""
    record = metric_record(metric)
    # rows of overlap counts, of windows' spans, of images' boxes: no weights, no label columns
    if record.family in ("mask", "span", "box", "text", "edit"):
        return record.scorer()(metric, pred, target)
    if weight is not None:
        keep = weight > 0
        pred, target, weight = pred[keep], target[keep], weight[keep]
        groups = groups[keep] if groups is not None else None
    if record.grouped:
        if groups is None:
            raise ValueError(f"metric {metric} scores each [data] score_groups group apart, and these rows have no groups")
        return record.scorer()(metric, pred, target, weight, groups)
    if isinstance(pred, TopK) and record.family != "ranking":
        raise ValueError(f"metric {metric} needs every class's probability, and these rows keep the likeliest few")
    if target.ndim == 2 and record.family == "value":  # several value columns: the mean of their scores
        # a correlation is undefined on a column whose truth is constant (a rare label's validation rows): left out
        columns = [k for k in range(target.shape[1]) if metric not in CORRELATIONS or np.ptp(target[:, k]) > 0]
        if not columns:
            return float("nan")
        return float(np.mean([score(metric, pred[:, k], target[:, k], weight) for k in columns]))
    if target.ndim == 2 and not (record.multilabel or record.cut or record.soft):
        raise ValueError(f"metric {metric} does not score multi-label predictions")
    return record.scorer()(metric, pred, target, weight)


# -- each metric's rows: (N,) targets, or (N, C) labels where its record says it scores them ------------------
def log_loss(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """Over classes; multi-label: the mean binary log loss over every (row, label)."""
    if target.ndim == 2:
        p = np.clip(pred, 1e-15, 1 - 1e-15)
        cells = -(target * np.log(p) + (1 - target) * np.log(1 - p))
        return float(np.average(cells.mean(1), weights=weight))
    p = np.clip(pred, 1e-15, 1.0)
    p = p / p.sum(1, keepdims=True)
    return float(-np.average(np.log(p[np.arange(len(target)), target]), weights=weight))


def kl_div(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """KL divergence of `target`'s rows (distributions: a soft target's normalised votes) from `pred`'s, as the hms
    grader's scorer computes it: the prediction clipped to [1e-15, 1 - 1e-15] (not renormalised), a row's terms
    where its target is above 0 summed, the rows averaged (`weight`: weighted)."""
    p = np.clip(np.asarray(pred, np.float64), 1e-15, 1 - 1e-15)
    y = np.asarray(target, np.float64).reshape(p.shape)
    held = y > 0
    cells = np.where(held, y * np.log(np.where(held, y, 1.0) / p), 0.0)
    return float(np.average(cells.sum(1), weights=weight))


def accuracy(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    return float(np.average(likeliest(pred) == target, weights=weight))


def macro_f1(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """Over the classes in the truth or the predictions, as sklearn's default labels."""
    return float(skm.f1_score(target, likeliest(pred), average="macro", sample_weight=weight, zero_division=0))


def map_at_k(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    return mean_average_precision(pred, target, top_k(metric), weight)


def weighted_auc_score(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    return weighted_auc(target, pred[:, -1] if pred.ndim == 2 else pred, weight)


def auc(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """One-vs-rest over the classes present; multi-label: the mean of each label's ROC AUC (labels with one class
    in `target` left out)."""
    if target.ndim == 2:
        truth = target > 0.5
        scored = [j for j in range(truth.shape[1]) if 0 < truth[:, j].sum() < len(truth)]
        if not scored:
            return float("nan")
        return float(np.mean([skm.roc_auc_score(truth[:, j], pred[:, j], sample_weight=weight) for j in scored]))
    if len(np.unique(target)) < 2:
        return float("nan")
    if pred.shape[1] == 2:
        return float(skm.roc_auc_score(target, pred[:, 1], sample_weight=weight))
    present = np.unique(target)
    p = pred[:, present] / pred[:, present].sum(1, keepdims=True)
    return float(skm.roc_auc_score(target, p, multi_class="ovr", labels=present, sample_weight=weight))


def auc_micro(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """One ROC AUC over every (row, label) cell pooled (mlsp-2013-birds' grader over its melted rows), not the mean
    of each label's; a row's weight weighs each of its cells."""
    truth = (target > 0.5).reshape(len(target), -1)
    cells = np.asarray(pred, np.float64).reshape(truth.shape)
    if truth.all() or not truth.any():
        return float("nan")
    w = None if weight is None else np.repeat(np.asarray(weight, np.float64), truth.shape[1])
    return float(skm.roc_auc_score(truth.ravel(), cells.ravel(), sample_weight=w))


def lwlrap(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """Label-weighted label-ranking average precision (freesound-audio-tagging-2019's grader): sklearn's
    label-ranking average precision over the rows holding a label, each weighted by its count of labels (so that
    every label, not every row, weighs alike); `weight` multiplies those weights."""
    truth = (target > 0.5).reshape(len(target), -1)
    held = truth.sum(1)
    keep = held > 0
    if not keep.any():
        return float("nan")
    w = held[keep].astype(np.float64) * (1.0 if weight is None else np.asarray(weight, np.float64)[keep])
    return float(skm.label_ranking_average_precision_score(truth[keep], np.asarray(pred, np.float64)[keep],
                                                           sample_weight=w))


def at_cut(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """f1_samples, f2_samples, f1_micro, bias_auc: the score at the threshold that maximises it (`decide`)."""
    return decide(metric, pred, target, weight)[1]


def first_column(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(N,) the predicted values of rows of one value."""
    return pred.reshape(len(target), -1)[:, 0]


def qwk(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    if pred.ndim == 2 and pred.shape[1] > 1:  # class probabilities of ordered classes
        return float(skm.cohen_kappa_score(target, pred.argmax(1), weights="quadratic", sample_weight=weight))
    values = first_column(pred, target)  # rounded to the nearest score the targets hold, as a submission writes them
    return float(skm.cohen_kappa_score(np.rint(target).astype(np.int64), whole_scores(values, target.min(), target.max()),
                                       weights="quadratic", sample_weight=weight))


def pearson(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    values = first_column(pred, target)
    if np.std(values) == 0 or np.std(target) == 0:
        return float("nan")
    return float(np.corrcoef(values, target)[0, 1]) if weight is None else weighted_pearson(values, target, weight)


def spearman(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """scipy's rank correlation (score masks are 0/1: the kept rows, unweighted)."""
    values = first_column(pred, target)
    if np.ptp(values) == 0 or np.ptp(target) == 0:
        return float("nan")
    return float(stats.spearmanr(values, target).statistic)


def mae(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    return float(np.average(np.abs(first_column(pred, target) - target), weights=weight))


def rmse(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    return float(np.sqrt(np.average((first_column(pred, target) - target) ** 2, weights=weight)))


def group_log_mae(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None,
                  groups: np.ndarray) -> float:
    """champs' score: the mean over the groups (coupling types) of log(MAE) within each, the MAE floored at 1e-9
    (Kaggle's page; MLE-bench's grader takes log(MAE) as it is, the same for any MAE above 0)."""
    error = np.abs(first_column(pred, target) - target)
    codes, inverse = np.unique(groups, return_inverse=True)
    w = np.ones(len(error)) if weight is None else weight.astype(np.float64)
    maes = np.bincount(inverse, error * w, len(codes)) / np.maximum(np.bincount(inverse, w, len(codes)), 1e-12)
    return float(np.mean(np.log(np.maximum(maes, 1e-9))))


SIGMA_FLOOR, DELTA_CAP = 70.0, 1000.0  # osic's grader clips the confidence below at 70 and the error above at 1000


def laplace(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """osic's modified Laplace log-likelihood, as its grader takes it: the mean of -sqrt(2) * delta / sigma -
    log(sqrt(2) * sigma), sigma the confidence floored at 70 and delta the absolute error capped at 1000. `pred`:
    (N, 2) values and confidences, or (N,) / (N, 1) values alone, scored at the one confidence that scores them best
    (`confidence`), as the submission's is chosen on the out-of-fold rows."""
    pred = pred.reshape(len(pred), -1)
    sigma = pred[:, 1] if pred.shape[1] > 1 else confidence(pred[:, 0] - target)
    return float(np.average(laplace_rows(pred[:, 0], target, sigma), weights=weight))


def laplace_rows(value: np.ndarray, target: np.ndarray, sigma: np.ndarray | float) -> np.ndarray:
    sigma = np.maximum(sigma, SIGMA_FLOOR)
    delta = np.minimum(np.abs(target - value), DELTA_CAP)
    return -np.sqrt(2) * delta / sigma - np.log(np.sqrt(2) * sigma)


def confidence(residual: np.ndarray) -> float:
    """The one confidence that scores these residuals best under `laplace`: sqrt(2) times their mean absolute value
    (capped at 1000) is the optimum of the smooth loss, floored at 70 as the grader floors it."""
    return float(max(np.sqrt(2) * np.mean(np.minimum(np.abs(residual), DELTA_CAP)), SIGMA_FLOOR)) if len(residual) \
        else SIGMA_FLOOR


def rmsle(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> float:
    """kit's predictions under rmsle are never below 0 (targets.py clips them there)."""
    gap = np.log1p(np.maximum(first_column(pred, target), 0.0)) - np.log1p(target)
    return float(np.sqrt(np.average(gap**2, weights=weight)))


def likeliest(pred: np.ndarray | TopK) -> np.ndarray:
    """(N,) each row's most probable class."""
    return pred.argmax() if isinstance(pred, TopK) else pred.argmax(1)


def ranked(pred: np.ndarray | TopK, k: int) -> np.ndarray:
    """(N, min(k, C)) the k most probable classes of each row, best first (the lower class first among equals)."""
    if isinstance(pred, TopK):
        return pred.ranked(k)
    k = min(k, pred.shape[1])
    top = np.argpartition(-pred, k - 1, axis=1)[:, :k] if k < pred.shape[1] else np.tile(np.arange(k), (len(pred), 1))
    order = np.lexsort((top, -np.take_along_axis(pred, top, 1)), axis=1)
    return np.take_along_axis(top, order, 1)


def mean_average_precision(pred: np.ndarray, target: np.ndarray, k: int, weight: np.ndarray | None = None) -> float:
    """MAP@k of one true class per row: 1/rank of the true class among the row's k best, 0 beyond them."""
    hits = ranked(pred, k) == target[:, None]
    precision = (hits / np.arange(1, hits.shape[1] + 1)).sum(1)
    return float(np.average(precision, weights=weight))


def weighted_auc(truth: np.ndarray, score: np.ndarray, weight: np.ndarray | None = None) -> float:
    """ALASKA2's weighted AUC: the ROC curve's area in horizontal bands of the true-positive rate, 0 to 0.4
    weighted 2 and 0.4 to 1 weighted 1, over the weighted total (1.4); 1 perfect, 0 inverted."""
    if len(np.unique(truth)) < 2:
        return float("nan")
    fpr, tpr, _ = skm.roc_curve(truth, score, sample_weight=weight)
    bands, weights = (0.0, 0.4, 1.0), (2.0, 1.0)
    for level in bands:  # each band's edge on the curve, its false-positive rate interpolated
        if level not in tpr and (tpr > level).any():
            i = int(np.argmax(tpr > level))
            fpr = np.insert(fpr, i, fpr[i - 1] + (fpr[i] - fpr[i - 1]) * (level - tpr[i - 1]) / (tpr[i] - tpr[i - 1]))
            tpr = np.insert(tpr, i, level)
    total = 0.0
    for low, high, w in zip(bands[:-1], bands[1:], weights):
        inside = (tpr >= low) & (tpr <= high)
        if inside.any():  # the band's curve, closed to the right at its top
            total += w * skm.auc(np.append(fpr[inside], 1.0), np.append(tpr[inside], high) - low)
    return float(total / np.dot(np.diff(bands), weights))


def whole_scores(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Predicted values as the nearest whole scores from `low` to `high` (essay scores 1 to 6)."""
    return np.clip(np.rint(values), np.rint(low), np.rint(high)).astype(np.int64)


def weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    mx, my = np.average(x, weights=w), np.average(y, weights=w)
    cov = np.average((x - mx) * (y - my), weights=w)
    return float(cov / np.sqrt(np.average((x - mx) ** 2, weights=w) * np.average((y - my) ** 2, weights=w)))


def better(metric: str, a: float, b: float | None) -> bool:
    """Whether score `a` beats `b` (None: nothing yet)."""
    if b is None or np.isnan(b):
        return not np.isnan(a)
    return a > b if greater_is_better(metric) else a < b


def join_rows(parts: list[dict]) -> dict[str, np.ndarray]:
    """Several folds' validation rows ({"pred", "target", optional "weight"}) as one set of rows."""
    return {k: topk.join([r[k] for r in parts]) for k in parts[0]}


@dataclass(frozen=True)
class Cut:
    """How label probabilities become a label set: those above `threshold`, and the most probable one where
    none is when `at_least_one` (every training row has a label, as in Planet's tags). Under bias_auc, the
    toxicity probability at which a row counts as toxic."""

    threshold: float = 0.5
    at_least_one: bool = True


def binarize(pred: np.ndarray, cut: Cut) -> np.ndarray:
    """(N, C) probabilities -> (N, C) bool decisions."""
    out = pred > cut.threshold
    if cut.at_least_one and len(pred):
        empty = ~out.any(1)
        out[empty, pred[empty].argmax(1)] = True
    return out


def fbeta_rows(truth: np.ndarray, decided: np.ndarray, beta: float) -> np.ndarray:
    """Each row's F-beta of its decided label set against its true one (1 where both are empty), as
    sklearn's fbeta_score(average="samples", zero_division=1) averages them: the definition the threshold search
    (kit.train.cuts, which counts every candidate at once) is tested against."""
    tp = (truth & decided).sum(1).astype(np.float64)
    fn, fp = truth.sum(1) - tp, decided.sum(1) - tp
    b2 = beta * beta
    denominator = (1 + b2) * tp + b2 * fn + fp
    return np.divide((1 + b2) * tp, denominator, out=np.ones_like(tp), where=denominator > 0)


def micro_f1(truth: np.ndarray, decided: np.ndarray, weight: np.ndarray | None = None) -> float:
    """F1 over every (row, label) cell of the labels the truth holds: a predicted label no row of the truth has
    is dropped, not counted as a false positive (the graders binarize with the answers' labels only)."""
    present = truth.any(0)
    truth, decided = truth[:, present], decided[:, present]
    w = np.ones(len(truth)) if weight is None else weight
    tp = float(w @ (truth & decided).sum(1))
    wrong = float(w @ (truth ^ decided).sum(1))  # false positives and false negatives
    return 2 * tp / (2 * tp + wrong) if tp + wrong > 0 else 0.0


def candidates(pred: np.ndarray) -> np.ndarray:
    """The thresholds a cut is searched among, sorted: the grid (THRESHOLDS) and QUANTILES of the predictions' own
    values (a threshold at one of them keeps those above it)."""
    pred = np.asarray(pred)
    width = pred.shape[1] if pred.ndim == 2 else 1  # rows sampled first: a broadcast prior has no flat view to take
    values = np.asarray(pred[:: max(1, len(pred) * width // QUANTILE_VALUES)], np.float64).ravel()
    values = values[np.isfinite(values)]
    if not len(values):
        return THRESHOLDS
    return np.unique(np.concatenate([THRESHOLDS, np.quantile(values, np.linspace(0.0, 1.0, QUANTILES), method="lower")]))


def threshold_text(threshold: float) -> str:
    """A threshold as the log prints it: the grid's two decimals, a quantile's up to six."""
    return np.format_float_positional(threshold, precision=6, trim="-")


def decide(metric: str, pred: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None) -> tuple[Cut, float]:
    """The cut that maximises the metric on these rows (out-of-fold predictions, or one fold's validation
    rows), and the score there; for label sets, the highest threshold among equal scores."""
    if metric == "bias_auc":
        return bias_decide(pred, target)
    truth = target > 0.5
    at_least_one = bool(truth.any(1).all())
    if not len(truth):
        return Cut(0.5, at_least_one), float("nan")
    thresholds = candidates(pred)
    values = cuts.scores(metric, pred, truth, thresholds, at_least_one, weight)  # every threshold counted at once
    best = int(np.flatnonzero(values == np.nanmax(values))[-1]) if not np.isnan(values).all() else 0
    return Cut(float(thresholds[best]), at_least_one), float(values[best])


def apply_cut(metric: str, pred: np.ndarray, cut: Cut) -> np.ndarray:
    """What the submission holds at `cut`: label sets' 0/1 decisions; under bias_auc, the probabilities moved
    (monotonically: the ranking stays) so that the cut falls at 0.5, where the grader binarizes them."""
    if metric != "bias_auc":
        return binarize(pred, cut).astype(np.float32)  # 0/1 as the submission writes them
    t = cut.threshold
    below = np.minimum(0.5 * pred / t, np.nextafter(0.5, 0.0))  # strictly under 0.5, whatever the rounding
    return np.where(pred >= t, 0.5 + 0.5 * (pred - t) / (1.0 - t), below)


def describe_cut(metric: str, cut: Cut) -> str:
    if metric == "bias_auc":
        return f"toxic from {threshold_text(cut.threshold)} (moved to 0.5, where the grader cuts)"
    return f"labels above {threshold_text(cut.threshold)}{' (at least the likeliest one)' if cut.at_least_one else ''}"


def bias_decide(pred: np.ndarray, target: np.ndarray) -> tuple[Cut, float]:
    """The threshold that maximises bias_auc on these rows (the middle one of equal best scores)."""
    thresholds = candidates(pred[:, 0])
    values = bias_metrics.bias_auc(pred, target, thresholds)
    if np.isnan(values).all():
        return Cut(0.5, False), float("nan")
    best = np.flatnonzero(values == np.nanmax(values))
    i = int(best[len(best) // 2])
    return Cut(float(thresholds[i]), False), float(values[i])
