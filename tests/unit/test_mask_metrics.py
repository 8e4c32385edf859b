"""Mask metrics from overlap counts, checked against reference computations: MLE-bench's TGS grader, smp's
metrics, and plain masks cut by a flood fill written here."""
import warnings
from collections import deque

import numpy as np
import pytest
import segmentation_models_pytorch as smp
import torch
from graders import tgs_iou_metric
from scipy import ndimage
from sklearn.metrics import fbeta_score

from kit import metric_records
from kit.train import mask_metrics, metrics


def kept_components(mask: np.ndarray, smallest: int) -> np.ndarray:
    """`mask` without its 8-connected components of fewer than `smallest` pixels, by breadth-first flood fill."""
    h, w = mask.shape
    seen, out = np.zeros_like(mask), np.zeros_like(mask)
    for y0, x0 in zip(*np.nonzero(mask)):
        if seen[y0, x0]:
            continue
        component, queue = [], deque([(y0, x0)])
        seen[y0, x0] = True
        while queue:
            y, x = queue.popleft()
            component.append((y, x))
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    v, u = y + dy, x + dx
                    if 0 <= v < h and 0 <= u < w and mask[v, u] and not seen[v, u]:
                        seen[v, u] = True
                        queue.append((v, u))
        if len(component) >= smallest:
            for y, x in component:
                out[y, x] = True
    return out


def random_case(rng, h=16, w=20):
    prob = ndimage.gaussian_filter(rng.random((h, w)), rng.uniform(0.6, 2.5))
    prob = (prob - prob.min()) / (np.ptp(prob) + 1e-9)
    kind = rng.integers(5)
    truth = {0: np.zeros((h, w), bool), 1: np.ones((h, w), bool)}.get(kind, prob + rng.normal(0, 0.2, (h, w)) > 0.55)
    return prob, truth


def reference(metric, pred, truth):
    if metric == "map_iou":
        return tgs_iou_metric(truth.astype(np.uint8), pred.astype(np.uint8))
    a, b, both = pred.sum(), truth.sum(), (pred & truth).sum()
    if metric == "f05":  # vesuvius' grader: scikit-learn's, 0 where it is ill-defined
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fbeta_score(truth.ravel(), pred.ravel(), beta=0.5)
    if a + b == 0:
        return 1.0
    return 2 * both / (a + b) if metric == "dice" else both / (a + b - both)


def test_every_cut_of_the_grid_scores_as_the_masks_it_makes():
    rng = np.random.default_rng(1)
    cases = [random_case(rng) for _ in range(16)]
    pred = np.stack([mask_metrics.statistics(p[None], t[None])[0] for p, t in cases])
    target = np.stack([mask_metrics.statistics(p[None], t[None])[1] for p, t in cases])
    tables = {m: mask_metrics.grid_scores(m, pred, target)[0] for m in metric_records.MASK_METRICS}  # (T, S) each
    for ti, threshold in enumerate(mask_metrics.THRESHOLDS):
        for si, share in enumerate(mask_metrics.MIN_SHARES):
            smallest = mask_metrics.min_pixels(share, 16 * 20)
            masks = [kept_components(p > threshold, smallest) for p, _ in cases]
            for metric, table in tables.items():
                if metric == "global_dice":  # one Dice over every image's pixels at once
                    expected = reference("dice", np.stack(masks), np.stack([t for _, t in cases]))
                elif metric == "dice_hausdorff":  # its Dice part: pairs empty on both sides left out
                    expected = np.mean([reference("dice", m, t) for m, (_, t) in zip(masks, cases) if m.any() or t.any()])
                else:
                    expected = np.mean([reference(metric, m, t) for m, (_, t) in zip(masks, cases)])
                assert table[ti, si] == pytest.approx(expected, abs=1e-12), (metric, threshold, share)


def test_map_iou_copies_the_graders_empty_prediction_quirk():
    truth = np.zeros((10, 10), bool)
    truth[:8] = True  # 80% salt: the grader's IoU of an empty prediction is 0.8
    counts = mask_metrics.statistics(np.zeros((1, 10, 10)), truth[None])
    score = metrics.score("map_iou", counts[0][None], counts[1][None])
    assert score == pytest.approx(tgs_iou_metric(truth.astype(np.uint8), np.zeros((10, 10), np.uint8))) == pytest.approx(0.6)


def test_dice_per_image_matches_smp_with_empty_pairs_scoring_one():
    rng = np.random.default_rng(2)
    cases = [random_case(rng) for _ in range(20)]
    pred = np.stack([mask_metrics.statistics(p[None], t[None], shares=(0.0,), thresholds=(0.5,))[0] for p, t in cases])
    target = np.stack([mask_metrics.statistics(p[None], t[None], shares=(0.0,), thresholds=(0.5,))[1] for p, t in cases])
    ours = mask_metrics.per_pair("dice", pred[..., 0, 0, 0], pred[..., 0, 0, 1], target[..., 0], target[..., 1]).mean()
    output = torch.tensor(np.stack([p > 0.5 for p, _ in cases]))[:, None].long()
    truth = torch.tensor(np.stack([t for _, t in cases]))[:, None].long()
    tp, fp, fn, tn = smp.metrics.get_stats(output, truth, mode="binary")
    assert ours == pytest.approx(float(smp.metrics.f1_score(tp, fp, fn, tn, reduction="micro-imagewise")))


def test_the_best_cut_of_each_class_and_its_application():
    rng = np.random.default_rng(3)
    h = w = 40
    truth = np.zeros((2, h, w), bool)
    truth[0, 5:25, 5:25] = True
    truth[1, 30:38, 2:12] = True
    prob = np.where(truth, 0.62, 0.1)
    prob[0, 35, 35] = 0.9  # a speck the smallest-component cut drops
    prob[1] += 0.25 * truth[1]  # class 2 is surer: any threshold to 0.7 keeps it
    counts = mask_metrics.statistics(prob, truth)
    cuts, score = mask_metrics.decide("dice", counts[0][None], counts[1][None])
    assert score == 1.0 and cuts[0].threshold <= 0.6 and cuts[0].min_share > 0
    assert cuts[1] == mask_metrics.Cut(0.5, 0.0)  # ties go to 0.5 and every component
    assert np.array_equal(mask_metrics.apply(prob, cuts), truth)
    assert rng is not None


def test_classes_that_exclude_each_other_take_the_argmax():
    prob = np.zeros((3, 4, 4))
    prob[0] = 0.5
    prob[1, :2] = 0.6  # class 1 on top, background below
    prob[2, 3, 3] = 0.9
    truth = np.stack([np.zeros((4, 4), bool), np.zeros((4, 4), bool)])
    truth[0, :2] = True
    truth[1, 3, 3] = True
    pred, target = mask_metrics.statistics(prob, truth, argmax=True)
    assert pred.shape == (2, 1, len(mask_metrics.MIN_SHARES), 2) and pred[0, 0, 0].tolist() == [8, 8]
    cuts, score = mask_metrics.decide("iou", pred[None], target[None], argmax=True)
    assert score == 1.0 and np.array_equal(mask_metrics.apply(prob, cuts), truth)


def test_a_constant_prediction_scores_as_its_masks():
    target = np.array([[[0, 100]], [[30, 100]]])  # one empty image, one with 30 true pixels
    assert metrics.score("dice", np.zeros((2, 1)), target) == 0.5  # empty masks: 1 on the empty image, 0 on the other
    assert metrics.score("dice", np.ones((2, 1)), target) == pytest.approx((0 + 2 * 30 / 130) / 2)
