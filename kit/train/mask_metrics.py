"""Mask metrics from overlap counts: dice, iou and map_iou per (image, class), and the cut that turns
probabilities into submitted masks (a probability threshold and the smallest kept component), chosen where
the out-of-fold score is best.

A validation batch leaves, for every (image, class), its true area and pixel count, and for every threshold
and smallest-component size of a grid, the predicted area and its overlap with the truth (`statistics`). Every
metric is a function of those four counts, so the grid search costs nothing more, the rows stay small whatever
the image size, and any cut's score is exact:

- dice: 2|A n B| / (|A| + |B|), 1 where both are empty (Kaggle's, per image and class, then the mean);
- iou: |A n B| / |A u B|, 1 where both are empty;
- global_dice: contrails' (MLE-bench's grade.py): 2|A n B| / (|A| + |B|) over every pixel of every image at once,
  each class apart (the counts summed over the images, then the ratio); 1 where no image has either;
- dice_hausdorff: uw-madison's (MLE-bench's grade.py) is 0.4 x the Dice of each (slice, class), pairs empty on both
  sides left out of the mean, + 0.6 x (1 - the 3-D Hausdorff distance of each scan's masks). Overlap counts hold
  the Dice part alone (the distance needs each scan's masks whole: kit.train.volume_metrics scores a submission
  with both), so out of fold, and for the cut, it is scored by that Dice part, on its own scale of 0 to 1;
- f05: vesuvius' (MLE-bench's grade.py, scikit-learn's fbeta_score with beta 0.5 on each fragment's pixels, the
  mean over fragments): 1.25|A n B| / (0.25|B| + |A|), B the truth; 0 where both are empty (sklearn's zero_division);
- map_iou: TGS's (MLE-bench's grade.py): the mean over IoU thresholds 0.5, 0.55, ..., 0.95 of whether the
  image's IoU passes it; 1 where both are empty, 0 for a prediction on an empty truth, and for an empty
  prediction on a non-empty truth that grader's IoU of true area / pixels (its histogram puts the empty
  prediction's pixels in the foreground bin).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

THRESHOLDS = tuple(np.round(np.arange(0.3, 0.71, 0.05), 2).tolist())  # probability thresholds searched
MIN_SHARES = (0.0, 0.001, 0.0025, 0.005, 0.01, 0.02)  # smallest kept component, as a share of the image's pixels
IOU_STEPS = np.arange(0.5, 1.0, 0.05)  # map_iou's IoU thresholds (TGS)
EIGHT = np.ones((3, 3), bool)  # components are 8-connected


@dataclass(frozen=True)
class Cut:
    """How one class's probabilities become its mask: pixels above `threshold` (the class of highest probability
    where `argmax`), then components smaller than `min_share` of the image's pixels dropped."""

    threshold: float = 0.5
    min_share: float = 0.0
    argmax: bool = False

    def describe(self, pixels: int) -> str:
        above = "the likeliest class" if self.argmax else f"above {self.threshold:.2f}"
        return f"{above}, components from {min_pixels(self.min_share, pixels)} px"


def min_pixels(share: float, pixels: int) -> int:
    return int(np.ceil(share * pixels))


def component_areas(mask: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, overlaps) of the 8-connected components of a 2-D bool mask: their pixels, and those in `truth`."""
    labels, count = ndimage.label(mask, structure=EIGHT)
    sizes = np.bincount(labels.ravel(), minlength=count + 1)[1:]
    overlaps = np.bincount(labels[truth], minlength=count + 1)[1:]  # far faster than a weighted bincount
    return sizes, overlaps


def box(mask: np.ndarray) -> tuple[slice, slice]:
    """The rows and columns of a 2-D mask's bounding box (the mask has a pixel)."""
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    return slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)


def statistics(prob: np.ndarray, truth: np.ndarray, argmax: bool = False, thresholds: tuple[float, ...] = THRESHOLDS,
               shares: tuple[float, ...] = MIN_SHARES) -> tuple[np.ndarray, np.ndarray]:
    """Overlap counts of one image: `prob` (C, h, w) each class's probability, `truth` (C, h, w) bool. Returns
    (pred (C, T, S, 2): predicted area and overlap at each threshold and smallest component, target (C, 2): true
    area and pixel count). With `argmax` (classes that exclude each other, class 0 the background) `prob` has one
    class more than `truth`, the background, and the one threshold is the argmax. Components are labelled within
    the box of the lowest threshold's mask (a higher threshold's mask lies inside it), so sparse predictions on
    large images cost little."""
    c, h, w = truth.shape
    pixels = h * w
    levels = [None] if argmax else sorted(thresholds)
    choice = prob.argmax(0) if argmax else None
    least = [min_pixels(share, pixels) for share in shares]
    pred = np.zeros((c, len(levels), len(shares), 2), np.int64)
    for k in range(c):
        widest = choice == k + 1 if argmax else prob[k] > levels[0]
        if not widest.any():
            continue
        rows, cols = box(widest)
        inside, true = (widest if argmax else prob[k])[rows, cols], truth[k][rows, cols]
        for t, level in enumerate(levels):
            mask = inside if argmax else inside > level
            if not mask.any():
                break  # higher thresholds keep nothing either
            if max(least) <= 1:  # no component is too small: areas alone
                pred[k, t, :] = mask.sum(), (mask & true).sum()
                continue
            sizes, overlaps = component_areas(mask, true)
            for s, smallest in enumerate(least):
                kept = sizes >= smallest
                pred[k, t, s] = sizes[kept].sum(), overlaps[kept].sum()
    target = np.stack([truth.reshape(c, -1).sum(1), np.full(c, pixels)], 1).astype(np.int64)
    return pred, target


def per_pair(metric: str, area: np.ndarray, overlap: np.ndarray, true_area: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """The metric of each (image, class) from its counts (arrays that broadcast together)."""
    area, overlap, true_area, pixels = (np.asarray(a, np.float64) for a in (area, overlap, true_area, pixels))
    both_empty = (area == 0) & (true_area == 0)
    union = area + true_area - overlap
    if metric in ("dice", "global_dice", "dice_hausdorff"):  # global_dice's pairs: see `pooled`
        total = area + true_area
        return np.where(both_empty, np.nan if metric == "dice_hausdorff" else 1.0, 2 * overlap / np.where(total > 0, total, 1))
    if metric == "f05":  # precision weighs four times recall: (1 + b^2) TP / (b^2 |truth| + |prediction|)
        total = 0.25 * true_area + area
        return np.where(total > 0, 1.25 * overlap / np.where(total > 0, total, 1), 0.0)
    iou = np.where(union > 0, overlap / np.where(union > 0, union, 1), 0.0)
    if metric == "iou":
        return np.where(both_empty, 1.0, iou)
    if metric == "map_iou":
        iou = np.where((area == 0) & (true_area > 0), true_area / pixels, iou)  # the grader's empty prediction
        passed = (iou[..., None] > IOU_STEPS).mean(-1)
        return np.where(both_empty, 1.0, np.where((true_area == 0) & (area > 0), 0.0, passed))
    raise ValueError(f"unknown mask metric {metric}")


def pooled(metric: str, area: np.ndarray, overlap: np.ndarray, true_area: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """The metric over the images (axis 0) from their counts: the mean of each image's, or for global_dice the
    ratio of the counts summed over the images."""
    if metric == "dice_hausdorff":  # pairs empty on both sides left out; none left: nothing was missed
        pairs = per_pair(metric, area, overlap, true_area, pixels)
        counted = (~np.isnan(pairs)).sum(0)
        return np.where(counted > 0, np.nansum(pairs, 0) / np.maximum(counted, 1), 1.0)
    if metric != "global_dice":
        return per_pair(metric, area, overlap, true_area, pixels).mean(0)
    counts = (np.asarray(a, np.float64) for a in (area, overlap, true_area, pixels))
    area, overlap, true_area, pixels = np.broadcast_arrays(*counts)
    return per_pair("dice", area.sum(0), overlap.sum(0), true_area.sum(0), pixels.sum(0))


def grid_scores(metric: str, pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(C, T, S) the metric over images of each class at each cut of the grid: `pred` (N, C, T, S, 2),
    `target` (N, C, 2)."""
    true_area, pixels = target[..., 0][..., None, None], target[..., 1][..., None, None]
    return pooled(metric, pred[..., 0], pred[..., 1], true_area, pixels)


def grids(pred: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The thresholds and smallest components overlap counts (N, C, T, S, 2) were taken at: the search's grids,
    or the plain cut (0.5, or the argmax, and every component) where the search was off."""
    thresholds = THRESHOLDS if pred.shape[2] == len(THRESHOLDS) else (0.5,)
    return thresholds, MIN_SHARES if pred.shape[3] == len(MIN_SHARES) else (0.0,)


def decide(metric: str, pred: np.ndarray, target: np.ndarray, argmax: bool = False) -> tuple[list[Cut], float]:
    """Each class's cut with the best mean score over these images (its classes' scores are independent, so the
    best cut of each is the best together), and the score there: the mean over every (image, class). Among equal
    scores the threshold nearest 0.5, then the smaller component, wins."""
    if not len(target):
        return [Cut(argmax=argmax)] * (pred.shape[1] if pred.ndim == 5 else 1), float("nan")
    thresholds, shares = grids(pred)
    table = grid_scores(metric, pred, target)  # (C, T, S)
    order = sorted(((t, s) for t in range(len(thresholds)) for s in range(len(shares))),
                   key=lambda ts: (abs(thresholds[ts[0]] - 0.5), shares[ts[1]]))
    cuts, best = [], []
    for k in range(table.shape[0]):
        t, s = max(order, key=lambda ts: table[k, ts[0], ts[1]])  # the first of equal maxima in `order`
        cuts.append(Cut(float(thresholds[t]), float(shares[s]), argmax))
        best.append(table[k, t, s])
    return cuts, float(np.mean(best))


def score(metric: str, pred: np.ndarray, target: np.ndarray) -> float:
    """The metric over validation rows of overlap counts, at the best cut of each class (as the submission's cut is
    chosen); rows of one constant probability per class ((N, C): what the prior predicts) score as that
    constant's masks: empty below 0.5, whole images from it."""
    if pred.ndim == 2:
        full = (np.asarray(pred) >= 0.5)[..., None]  # (N, C, 1)
        area = np.where(full, target[..., 1:2], 0)
        return float(pooled(metric, area, np.where(full, target[..., 0:1], 0), target[..., 0:1], target[..., 1:2]).mean())
    return decide(metric, pred, target)[1]


def apply(prob: np.ndarray, cuts: list[Cut]) -> np.ndarray:
    """(C, h, w) bool masks of one image from its probabilities, each class at its cut: `prob` (C, h, w), or
    (C + 1, h, w) with the background first where the cuts take the argmax."""
    _, h, w = prob.shape
    choice = prob.argmax(0) if cuts[0].argmax else None
    out = np.zeros((len(cuts), h, w), bool)
    for k, cut in enumerate(cuts):
        mask = choice == k + 1 if cut.argmax else prob[k] > cut.threshold
        least = min_pixels(cut.min_share, h * w)
        if least > 1 and mask.any():
            labels, count = ndimage.label(mask, structure=EIGHT)
            sizes = np.bincount(labels.ravel(), minlength=count + 1)
            keep = sizes >= least
            keep[0] = False
            mask = keep[labels]
        out[k] = mask
    return out
