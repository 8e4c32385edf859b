"""uw-madison-gi-tract-image-segmentation's whole metric, as MLE-bench's grade.py computes it, on a submission's masks:
0.4 x the mean Dice of each (slice, class) row, rows empty on both sides left out, + 0.6 x (1 - the mean 3-D
Hausdorff distance of each scan (case and day), rows left out where both are empty).

A scan's volume is its slices' masks, every class's joined (OR), stacked in the order of the slice ids; its
points' coordinates are divided by the volume's shape (a unit cube) and the symmetric Hausdorff distance (the grader
runs scipy's directed_hausdorff both ways; `directed` gets the same distance from a distance transform, in a
second where that takes minutes) divided by the cube's diagonal. The grader's shortcuts are kept, as they change the
score: identical volumes 0, one empty 1, a prediction more than 10 times the truth's size 1.

kit's out-of-fold rows are overlap counts, which hold the Dice part alone (kit.train.mask_metrics); this scores
masks, for the tests against the grader and to score a submission where the answers are at hand.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import ndimage

DICE_WEIGHT, HAUSDORFF_WEIGHT = 0.4, 0.6
UNIT_CUBE_DIAGONAL = float(np.sqrt(3))


def dice(pred: np.ndarray, truth: np.ndarray) -> float:
    """2|A n B| / (|A| + |B|); NaN where both are empty."""
    a, b = int(pred.sum()), int(truth.sum())
    return float("nan") if a + b == 0 else 2.0 * int((pred & truth).sum()) / (a + b)


def hausdorff(pred: np.ndarray, truth: np.ndarray) -> float:
    """The normalised symmetric Hausdorff distance of two 3-D bool volumes, with the grader's shortcuts."""
    a, b = int(pred.sum()), int(truth.sum())
    if a == 0 and b == 0:
        return float("nan")
    if np.array_equal(pred, truth):
        return 0.0
    if a == 0 or b == 0 or a > 10 * b:
        return 1.0
    return max(directed(truth, pred), directed(pred, truth)) / UNIT_CUBE_DIAGONAL


def directed(source: np.ndarray, target: np.ndarray) -> float:
    """The largest distance from a voxel of `source` to its nearest voxel of `target`, in the unit cube (each axis
    divided by its length, as the grader divides the coordinates): the exact Euclidean distance transform of the
    target's complement, with those spacings, read at the source's voxels. scipy's directed_hausdorff on the
    coordinates gives the same number and took 86 s on one 144 x 266 x 266 scan of 300,000 voxels a side; this
    takes 3 s (on a shared laptop core). Both masks lie inside their joint bounding box, so the transform is taken there."""
    box = tuple(slice(int(a.min()), int(a.max()) + 1) for a in np.nonzero(source | target))
    spacing = 1.0 / np.array(target.shape, np.float64)
    distances = ndimage.distance_transform_edt(~target[box], sampling=spacing)
    return float(distances[source[box]].max())


def volumes(masks: Sequence[np.ndarray], ids: Sequence[str]) -> list[np.ndarray]:
    """Each scan's (slices, H, W) volume: rows sorted by id, a slice's rows (its classes) joined, then stacked,
    scans in the order their first slice comes."""
    joined: dict[str, np.ndarray] = {}
    for i in sorted(range(len(ids)), key=lambda r: ids[r]):
        joined[ids[i]] = joined[ids[i]] | masks[i] if ids[i] in joined else masks[i].astype(bool)
    scans: dict[str, list[np.ndarray]] = {}
    for slice_id, mask in joined.items():
        scans.setdefault(slice_id.split("_slice_")[0], []).append(mask)
    return [np.stack(v) for v in scans.values()]


def grade(pred: Sequence[np.ndarray], truth: Sequence[np.ndarray], ids: Sequence[str]) -> float:
    """The metric of rows of 2-D bool masks (one per (slice, class) row, each row's id its slice's)."""
    dices = [dice(p.astype(bool), t.astype(bool)) for p, t in zip(pred, truth)]
    distances = [hausdorff(p, t) for p, t in zip(volumes(pred, ids), volumes(truth, ids))]
    return DICE_WEIGHT * float(np.nanmean(dices)) + HAUSDORFF_WEIGHT * (1.0 - float(np.nanmean(distances)))
