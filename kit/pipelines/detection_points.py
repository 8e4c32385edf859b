"""Points beside boxes (kuzushiji-recognition): a sample whose cells are `label x y ...` groups, each detection written
as its class's name at its box's centre in the page's own pixels, scored by centre F1 (kit.train.box_metrics).

The detector trains on the characters' boxes as any detection competition does; what differs is the output. F1
counts every written point, so a point is written only where its confidence reaches a cut chosen on the out-of-fold
pages (the cut that scores them best), the same cut in `judge` (the score reported) and `cut` (the submission).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kit.data import box_strings
from kit.errors import KitError
from kit.train import box_metrics, metrics

CANDIDATES = 40  # confidence cuts tried: the out-of-fold scores' quantiles


def is_points(sample: pd.DataFrame, column: str) -> bool:
    """The sample writes `label x y` groups (kuzushiji's "U+003F 1 1 U+FF2F 2 2"), not `label conf 4 corners`."""
    first = next((t for t in sample[column].tolist() if isinstance(t, str) and t.strip()), "") if len(sample) else ""
    if not first:
        return False
    try:
        box_strings.parse_detections(first, 2, column, "sample submission")
        return False
    except KitError:
        pass
    try:
        box_strings.parse_points(first, 2, column, "sample submission")
    except KitError:
        return False
    return True


def above(pred: np.ndarray, cut: float) -> np.ndarray:
    """Packed detections (N, D, 6) with those below `cut` padded out (label -1)."""
    out = np.array(pred, copy=True)
    out[..., 5] = np.where(out[..., 4] >= cut, out[..., 5], -1)
    return out


def choose(pred: np.ndarray, target: np.ndarray, metric: str) -> tuple[float, float]:
    """(cut, score): the confidence cut whose points score the out-of-fold pages best (the lowest of equals)."""
    pred = np.asarray(pred)
    scores = pred[..., 4][pred[..., 5] >= 0]
    if not len(scores):
        return 0.0, metrics.score(metric, pred, target)
    # float32, the scores' own type: a cut compares alike here, in `above` and in `cells`
    candidates = np.unique(np.r_[0.0, np.quantile(scores, np.linspace(0, 1, CANDIDATES))].astype(np.float32))
    if metric == "centre_f1":
        found = box_metrics.centre_f1_at(pred, target, candidates)
    else:
        found = [metrics.score(metric, above(pred, c), target) for c in candidates]
    best = int(np.argmax(found))
    return float(candidates[best]), float(found[best])


def epoch_score(rows: dict, metric: str) -> float:
    """An epoch's validation score, as its points would be written: at the cut that scores them best (the training
    loop's best epoch is the best written one, not the one whose every low-confidence box costs least)."""
    return choose(rows["pred"], rows["target"], metric)[1]


def cells(pred: np.ndarray, sizes: np.ndarray, side: int, names: tuple[str, ...], cut: float) -> list[str]:
    """Each test page's `name x y ...` at its detections' centres in its own pixels, those at or above `cut`; ""
    for a page without one (and for a page that could not be read: size 0)."""
    out = []
    for image, (h, w) in zip(pred, sizes):
        found = image[(image[:, 5] >= 0) & (image[:, 4] >= cut)]
        if h == 0 or not len(found):
            out.append("")
            continue
        centres = (found[:, :2] + found[:, 2:4]) / 2 * np.array([w / side, h / side], np.float32)
        centres = np.clip(centres, 0, [w, h])
        out.append(box_strings.points_string([names[int(k)] for k in found[:, 5]], centres))
    return out
