"""The gigapixel segmentation competitions' graders on shared cases: vesuvius' F0.5 (kit's `f05` from overlap counts
is its grade.py's scikit-learn fbeta_score on each fragment's row-major code) and hubmap's per-image Dice on a
whole-image code stitched at a reduced resolution (kit.data.stitch, column-major as its grader decodes it)."""
import warnings

import numpy as np
import pytest
from sklearn.metrics import fbeta_score

from kit.data import rle, stitch
from kit.train import mask_metrics


def rle_decode(code: str, height: int, width: int) -> np.ndarray:
    """mlebench.competitions.utils.rle_decode, written out (its asserts aside): column-major, 1-indexed."""
    img = np.zeros(height * width, dtype=bool)
    if code.strip():
        s = list(map(int, code.split()))
        for lo, n in zip(np.array(s[0::2]) - 1, s[1::2]):
            img[lo : lo + n] = True
    return img.reshape((width, height)).T


def vesuvius_grade(codes: list[str], answers: list[str], sizes: list[tuple[int, int]]) -> float:
    """vesuvius-challenge-ink-detection's grade.py: each row's code decoded on the transpose (its codes count along
    rows), fbeta_score(beta=0.5) of the flattened masks, the mean over rows."""
    scores = []
    for code, answer, (height, width) in zip(codes, answers, sizes):
        pred = rle_decode(code, height=width, width=height).T.flatten()
        true = rle_decode(answer, height=width, width=height).T.flatten()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns where F is ill-defined (read as 0)
            scores.append(fbeta_score(y_true=true, y_pred=pred, beta=0.5))
    return float(np.mean(scores))


def hubmap_grade(codes: list[str], answers: list[str], sizes: list[tuple[int, int]]) -> float:
    """hubmap-kidney-segmentation's grade.py: column-major codes, mlebench's dice_coefficient, 1 where both are empty."""
    scores = []
    for code, answer, (height, width) in zip(codes, answers, sizes):
        p, t = rle_decode(code, height, width), rle_decode(answer, height, width)
        scores.append(1.0 if p.sum() == 0 and t.sum() == 0 else 2 * (p & t).sum() / (p.sum() + t.sum()))
    return float(np.mean(scores))


def test_f05_is_the_vesuvius_graders_fbeta_on_each_fragment():
    rng = np.random.default_rng(5)
    sizes = [(30, 44), (26, 21), (18, 18), (12, 16)]
    truths, probs = [], []
    for i, (h, w) in enumerate(sizes):
        truth = np.zeros((h, w), bool)
        if i != 2:  # fragment 2 has no ink
            truth[4:14, 3 : 3 + 4 * (i + 1)] = True
        truths.append(truth)
        probs.append(np.clip(truth * 0.6 + rng.normal(0.2, 0.2, (h, w)), 0, 1))
    probs[3][:] = 0.0  # an empty prediction of ink: 0
    rows = [mask_metrics.statistics(p[None], t[None]) for p, t in zip(probs, truths)]
    pred, target = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
    answers = [rle.encode(t, "row") for t in truths]
    thresholds, _ = mask_metrics.grids(pred)
    for threshold in (0.4, 0.5, 0.6):
        ours = mask_metrics.grid_scores("f05", pred, target)[0, thresholds.index(threshold), 0]
        codes = [rle.encode(p > threshold, "row") for p in probs]
        assert ours == pytest.approx(vesuvius_grade(codes, answers, sizes))
    cuts, best = mask_metrics.decide("f05", pred, target)
    chosen = [rle.encode(mask_metrics.apply(p[None], cuts)[0], "row") for p in probs]
    assert best == pytest.approx(vesuvius_grade(chosen, answers, sizes))
    empty = mask_metrics.score("f05", np.zeros((len(sizes), 1)), target)
    assert empty == 0.0 == vesuvius_grade([""] * len(sizes), answers, sizes)  # the trivial submission scores 0
    # an empty fragment predicted empty: 0 by the grader's zero_division, not Dice's 1
    assert vesuvius_grade([""], [""], [(4, 4)]) == 0.0 == mask_metrics.per_pair("f05", 0, 0, 0, 16)


def test_a_mask_stitched_at_reduce_4_is_graded_at_full_resolution():
    """hubmap: the code of a reduced mask, built a band at a time, is the code of the full-resolution mask the
    grader decodes, and its Dice against the full-resolution truth is the grader's."""
    rng = np.random.default_rng(2)
    height, width, reduce = 61, 75, 4
    truth = np.zeros((height, width), bool)
    truth[10:40, 20:66] = True
    small = np.zeros((-(-height // reduce), -(-width // reduce)), bool)
    small[3:10, 5:16] = rng.random((7, 11)) < 0.9
    full = np.repeat(np.repeat(small, reduce, 0), reduce, 1)[:height, :width]
    code = stitch.encode_reduced(small, reduce, height, width)
    assert np.array_equal(rle_decode(code, height, width), full)
    dice = 2 * (full & truth).sum() / (full.sum() + truth.sum())
    assert hubmap_grade([code], [rle.encode(truth)], [(height, width)]) == pytest.approx(dice)
    assert hubmap_grade(["", ""], [rle.encode(truth), ""], [(height, width)] * 2) == pytest.approx(0.5)
