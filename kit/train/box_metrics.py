"""The detection competitions' metrics on lists of kit.data.boxes.ImageBoxes (predictions with confidences, truth
without), one a image, the two lists in the same image order; each computed as MLE-bench's grade.py computes it.

- `coco_map40` (vinbigdata): the grader hands its corner boxes to pycocotools' COCOeval at IoU 0.4, which reads a
  box as x, y, width, height: a box spans x_min .. x_min + x_max. Kept here, as what is graded. Its other readings:
  each class with a truth box is averaged (101 recall points, interpolated precision); at most 100 boxes an image
  and class, by confidence; a box of negative area that matches nothing is not counted; and pycocotools takes an
  id of 0 as "no match": the first truth box of the first image, when matched, leaves its box unmatched, and the
  first predicted box of the first image, when it matches, leaves its truth box free for the next.
- `voc_map50` (siim-covid19): each class's boxes matched greedily by confidence to the unmatched truth box of the
  best IoU above 0.5 (strictly), an unmatched truth box counting as a miss at confidence 0, an image with neither a
  "true negative" at 0; the class's average precision is scikit-learn's (the precision at each distinct confidence
  times the recall gained there), the mean over the classes that have truth boxes.
- `centre_f1` (kuzushiji): a predicted centre (a prediction's box's centre) is a hit when strictly inside a truth box
  of its label; each truth box, in order, takes the first unused such centre; F1 over all pages.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kit.data.boxes import ImageBoxes

RECALLS = np.linspace(0.0, 1.0, 101)  # COCOeval's recall points
MAX_BOXES = 100  # COCOeval's maxDets: boxes an image and class, by confidence
AREA = (0.0, 1e10)  # COCOeval's "all" area range


def score(metric: str, pred, target) -> float:
    """`pred`, `target`: lists of ImageBoxes, or the detection template's packed rows (kit.train.detection)."""
    if isinstance(pred, np.ndarray):
        pred, target = unpack(pred, target)
    if len(pred) != len(target):
        raise ValueError(f"{len(pred)} predicted images for {len(target)} true ones")
    if metric == "coco_map40":
        return coco_map(pred, target, 0.4)
    if metric == "voc_map50":
        return voc_map(pred, target, 0.5)
    if metric == "centre_f1":
        return centre_f1(pred, target)
    raise ValueError(f"metric {metric} is not a box metric")


def unpack(pred: np.ndarray, target: np.ndarray) -> tuple[list[ImageBoxes], list[ImageBoxes]]:
    """The detection template's packed rows (kit.train.detection: predictions (N, D, 6) x_min, y_min, x_max, y_max,
    confidence, label; truth (N, G, 5); label -1 pads) -> ImageBoxes (predictions with confidences, truth without)."""
    p_list, t_list = [], []
    for i, (p, t) in enumerate(zip(np.asarray(pred), np.asarray(target))):
        p, t = p[p[:, 5] >= 0], t[t[:, 4] >= 0]
        p_list.append(ImageBoxes(str(i), p[:, :4].astype(np.float32), p[:, 5].astype(np.int64), p[:, 4].astype(np.float32)))
        t_list.append(ImageBoxes(str(i), t[:, :4].astype(np.float32), t[:, 4].astype(np.int64)))
    return p_list, t_list


def pairwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(D, 4) and (G, 4) corner boxes -> (D, G) IoU (0 where the union is not positive)."""
    a, b = np.asarray(a, np.float64)[:, None, :], np.asarray(b, np.float64)[None, :, :]
    w = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    h = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = w * h
    union = _area(a) + _area(b) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _area(boxes: np.ndarray) -> np.ndarray:
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _coco_iou(d: np.ndarray, g: np.ndarray) -> np.ndarray:
    """pycocotools' box IoU on corners read as x, y, width, height (the grader's reading): no overlap where a side
    is not positive."""
    d, g = np.asarray(d, np.float64), np.asarray(g, np.float64)
    dx = np.concatenate([d[:, :2], d[:, :2] + d[:, 2:]], axis=1)
    gx = np.concatenate([g[:, :2], g[:, :2] + g[:, 2:]], axis=1)
    w = np.minimum(dx[:, None, 2], gx[None, :, 2]) - np.maximum(dx[:, None, 0], gx[None, :, 0])
    h = np.minimum(dx[:, None, 3], gx[None, :, 3]) - np.maximum(dx[:, None, 1], gx[None, :, 1])
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    union = (d[:, 2] * d[:, 3])[:, None] + (g[:, 2] * g[:, 3])[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=inter > 0)


def _sorted(image: ImageBoxes, keep: np.ndarray) -> np.ndarray:
    """The indices of `keep` (bool (N,)) by confidence, highest first, ties in the given order."""
    idx = np.flatnonzero(keep)
    return idx[np.argsort(-image.scores[idx], kind="stable")]


def coco_map(pred: Sequence[ImageBoxes], target: Sequence[ImageBoxes], threshold: float) -> float:
    """vinbigdata's mAP (COCOeval's AP at one IoU threshold, as the grader calls it); -1 where no class has a truth
    box, as COCOeval says."""
    classes = np.unique(np.concatenate([t.labels for t in target])) if target else np.zeros(0)
    aps = []
    for c in classes:
        scores, hits, truths = [], [], 0
        for i, (p, t) in enumerate(zip(pred, target)):
            g = np.flatnonzero(t.labels == c)
            d = _sorted(p, p.labels == c)[:MAX_BOXES]
            if not len(g) and not len(d):
                continue
            g_area = _area(t.boxes[g].astype(np.float64))
            g_ignored = (g_area < AREA[0]) | (g_area > AREA[1])
            order = np.argsort(g_ignored, kind="stable")  # ignored truth last
            g, g_ignored = g[order], g_ignored[order]
            ious = _coco_iou(p.boxes[d], t.boxes[g])
            taken = np.zeros(len(g), bool)
            matched, ignored = np.zeros(len(d), bool), np.zeros(len(d), bool)
            for j in range(len(d)):
                best, m = min(threshold, 1 - 1e-10), -1
                for k in range(len(g)):
                    if taken[k]:
                        continue
                    if m > -1 and not g_ignored[m] and g_ignored[k]:
                        break
                    if ious[j, k] >= best:
                        best, m = ious[j, k], k
                if m == -1:
                    continue
                ignored[j] = g_ignored[m]
                matched[j] = not (i == 0 and g[m] == 0)  # truth id 0 reads as no match
                taken[m] = not (i == 0 and d[j] == 0)  # prediction id 0 leaves its truth box free
            d_area = _area(p.boxes[d].astype(np.float64))
            ignored |= ~matched & ((d_area < AREA[0]) | (d_area > AREA[1]))
            scores.append(p.scores[d])
            hits.append(np.stack([matched, ignored], axis=1))
            truths += int((~g_ignored).sum())
        if not truths:
            continue
        all_scores = np.concatenate(scores) if scores else np.zeros(0)
        flags = np.concatenate(hits) if hits else np.zeros((0, 2), bool)
        flags = flags[np.argsort(-all_scores, kind="stable")]
        tp = np.cumsum(flags[:, 0] & ~flags[:, 1])
        fp = np.cumsum(~flags[:, 0] & ~flags[:, 1])
        recall = tp / truths
        precision = np.maximum.accumulate((tp / (tp + fp + np.spacing(1)))[::-1])[::-1]
        at = np.searchsorted(recall, RECALLS, side="left")
        q = np.zeros(len(RECALLS))
        # COCOeval fills the recall points in order and stops at the first past the last detection
        reached = np.cumprod(at < len(precision)).astype(bool)
        q[reached] = precision[at[reached]]
        aps.append(q.mean())
    return float(np.mean(aps)) if aps else -1.0


def voc_map(pred: Sequence[ImageBoxes], target: Sequence[ImageBoxes], threshold: float) -> float:
    """siim-covid19's mAP: each true class's average precision over (is-true, confidence) pairs, their mean."""
    classes = np.unique(np.concatenate([t.labels for t in target])) if target else np.zeros(0)
    aps = []
    for c in classes:
        truth, conf = [], []
        for p, t in zip(pred, target):
            g = t.boxes[t.labels == c]
            d = _sorted(p, p.labels == c)
            ious = pairwise_iou(p.boxes[d], g)
            free = np.ones(len(g), bool)
            hit = np.zeros(len(d), bool)
            for j in range(len(d)):
                row = np.where(free & (ious[j] > threshold), ious[j], 0.0)
                if row.any():
                    k = int(row.argmax())  # the first of equal best
                    free[k], hit[j] = False, True
            truth += [hit, np.ones(free.sum(), bool)]
            conf += [p.scores[d].astype(np.float64), np.zeros(free.sum())]
            if not len(d) and not len(g):
                truth.append(np.zeros(1, bool))
                conf.append(np.zeros(1))
        aps.append(average_precision(np.concatenate(truth), np.concatenate(conf)))
    return float(np.mean(aps)) if aps else 0.0


def average_precision(truth: np.ndarray, conf: np.ndarray) -> float:
    """The precision at each distinct confidence, highest first, times the recall gained there (scikit-learn's
    average_precision_score); 0 without a true pair."""
    if not truth.any():
        return 0.0
    order = np.argsort(-conf, kind="stable")
    truth, conf = truth[order], conf[order]
    last = np.r_[np.flatnonzero(np.diff(conf)), len(conf) - 1]  # the last pair at each distinct confidence
    tp = np.cumsum(truth)[last]
    precision = tp / (last + 1)
    recall = tp / tp[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def centre_f1(pred: Sequence[ImageBoxes], target: Sequence[ImageBoxes]) -> float:
    """kuzushiji's F1: a truth box matches the first unused predicted centre of its label strictly inside it."""
    tp = predicted = truths = 0
    for p, t in zip(pred, target):
        tp += matched(centres_inside(p.boxes, p.labels, t.boxes, t.labels), np.ones(len(p.boxes), bool))
        predicted, truths = predicted + len(p.boxes), truths + len(t.boxes)
    return f1(tp, predicted, truths)


def centres_inside(boxes: np.ndarray, labels: np.ndarray, truth: np.ndarray, truth_labels: np.ndarray) -> np.ndarray:
    """(G, D) bool: each predicted box's centre strictly inside each truth box of its label."""
    centres = (boxes[:, :2].astype(np.float64) + boxes[:, 2:]) / 2
    g = truth.astype(np.float64)
    return ((g[:, None, 0] < centres[None, :, 0]) & (g[:, None, 2] > centres[None, :, 0])
            & (g[:, None, 1] < centres[None, :, 1]) & (g[:, None, 3] > centres[None, :, 1])
            & (truth_labels[:, None] == labels[None, :]))


def matched(inside: np.ndarray, unused: np.ndarray) -> int:
    """The truth boxes (rows of `inside`, in order) that take the first of their centres still `unused` (marked used
    in place): the grader's greedy matching."""
    found = 0
    for row in inside:
        hits = row & unused
        if hits.any():
            unused[int(hits.argmax())] = False
            found += 1
    return found


def f1(tp: int, predicted: int, truths: int) -> float:
    if not tp:
        return 0.0
    precision, recall = tp / predicted, tp / truths
    return 2 * precision * recall / (precision + recall)


def centre_f1_at(pred: np.ndarray, target: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """centre_f1 of the packed rows (kit.train.detection) at each confidence cut, one F1 a cut: what `centre_f1` gives
    on the detections whose confidence is at or above it, in one pass over the pages. A kuzushiji fold holds ~700
    pages of up to 600 detections and ~180 characters: the cut search called centre_f1 41 times, 32 s an epoch here.

    A centre inside one truth box only (of its label) is that box's alone, so such a box is a hit at every cut up to
    its best candidate's confidence. Boxes that share a candidate centre are matched as the grader matches them (in
    order, the first unused centre), at each cut, among themselves: no other box can take their centres."""
    cuts, pred, target = np.asarray(cuts), np.asarray(pred), np.asarray(target)
    if len(pred) != len(target):
        raise ValueError(f"{len(pred)} predicted images for {len(target)} true ones")
    tp, kept, truths = np.zeros(len(cuts), np.int64), np.zeros(len(cuts), np.int64), 0
    for p, t in zip(pred, target):
        p, t = p[p[:, 5] >= 0], t[t[:, 4] >= 0]
        conf = p[:, 4]  # compared in its own type with the cuts, as `above` compares them
        at = conf[:, None] >= cuts[None, :]  # (D, cuts)
        kept += at.sum(0)
        truths += len(t)
        if not len(t) or not len(p):
            continue
        inside = centres_inside(p[:, :4].astype(np.float32), p[:, 5].astype(np.int64), t[:, :4].astype(np.float32),
                                t[:, 4].astype(np.int64))  # as `unpack` reads the packed rows
        shared = inside[:, inside.sum(0) > 1].any(1)  # boxes with a candidate another box also has
        alone = inside[~shared]
        best = np.where(alone, conf[None, :], -np.inf).max(1, initial=-np.inf)  # each box's likeliest centre
        tp += (best[:, None] >= cuts[None, :]).sum(0)
        for c in range(len(cuts) if shared.any() else 0):
            tp[c] += matched(inside[shared], at[:, c].copy())
    return np.array([f1(int(tp[c]), int(kept[c]), truths) for c in range(len(cuts))])
