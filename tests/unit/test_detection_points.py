"""kuzushiji's points (kit.pipelines.detection_points): the sample's `name x y` groups told from box strings, the
confidence cut chosen where the out-of-fold pages score best, and points written at the boxes' centres in each
page's own pixels, a page without one empty."""
import numpy as np
import pandas as pd
import pytest

from kit.data import box_strings
from kit.pipelines import detection_points
from kit.train import metrics


def packed(rows):
    """(N, D, 6) packed predictions from lists of (x0, y0, x1, y1, conf, label)."""
    width = max(len(r) for r in rows)
    out = np.zeros((len(rows), width, 6), np.float32)
    out[..., 5] = -1
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = r
    return out


def test_points_are_told_from_box_strings_by_the_samples_cells():
    assert detection_points.is_points(pd.DataFrame({"labels": ["U+003F 1 1 U+FF2F 2 2"]}), "labels")
    assert not detection_points.is_points(pd.DataFrame({"s": ["14 1 0 0 1 1"]}), "s")
    assert not detection_points.is_points(pd.DataFrame({"s": ["none 1 0 0 1 1"]}), "s")
    assert not detection_points.is_points(pd.DataFrame({"s": [np.nan, None]}), "s")


def test_the_cut_drops_the_low_confidence_points_that_cost_f1():
    # two pages, each one true character; the true detections at 0.9, false ones at 0.2 and 0.3
    truth = np.array([[[10, 10, 30, 30, 0]], [[50, 50, 70, 70, 1]]], np.float32)
    pred = packed([[(11, 11, 29, 29, 0.9, 0), (80, 80, 90, 90, 0.3, 0)],
                   [(51, 51, 69, 69, 0.9, 1), (0, 0, 8, 8, 0.2, 1)]])
    assert metrics.score("centre_f1", pred, truth) < 1.0  # every point written: two false ones
    cut, score = detection_points.choose(pred, truth, "centre_f1")
    assert 0.3 < cut <= 0.9 and score == 1.0
    kept = detection_points.above(pred, cut)
    assert (kept[..., 5] >= 0).sum() == 2 and metrics.score("centre_f1", kept, truth) == 1.0


def test_points_are_written_at_the_centres_in_each_pages_pixels_and_an_empty_page_blank():
    pred = packed([[(8, 16, 24, 32, 0.8, 1), (0, 0, 4, 4, 0.1, 0)], [(0, 0, 4, 4, 0.1, 0)]])
    sizes = np.array([[128, 64], [100, 100]])  # (height, width): the cache is 64 x 64
    cells = detection_points.cells(pred, sizes, 64, ("U+306B", "U+306E"), 0.5)
    assert cells[0] == "U+306E 16 48" and cells[1] == ""
    labels, centres = box_strings.parse_points(cells[0], 2)
    assert labels == ["U+306E"] and centres.tolist() == [[16.0, 48.0]]


def test_an_epoch_of_points_is_scored_at_its_best_cut_by_the_training_loop():
    from kit.train.detection import Detection
    from kit.train.loop import _Loop as Loop

    truth = np.array([[[10, 10, 30, 30, 0]], [[50, 50, 70, 70, 1]]], np.float32)
    pred = packed([[(11, 11, 29, 29, 0.9, 0), (80, 80, 90, 90, 0.3, 0)],
                   [(51, 51, 69, 69, 0.9, 1), (0, 0, 8, 8, 0.2, 1)]])
    loop = Loop.__new__(Loop)  # its score alone: the objective and the metric
    loop.objective, loop.cfg = Detection(64, -1, False, 0.55, 10, 1), type("Cfg", (), {"metric": "centre_f1"})()
    assert loop.score({"pred": pred, "target": truth}) < 1.0  # boxes' objective: every point counted
    loop.objective.score_rows = detection_points.epoch_score
    assert loop.score({"pred": pred, "target": truth}) == 1.0


def test_the_smoke_check_takes_a_blank_page_of_points_but_not_a_blank_named_box_string(tmp_path):
    from kit import config, smoke
    from kit.errors import KitError

    spec = config.load("kuzushiji-recognition").spec
    sample, sub = tmp_path / "sample.csv", tmp_path / "sub.csv"
    pd.DataFrame({"image_id": ["a", "b"], "labels": ["U+003F 1 1 U+FF2F 2 2"] * 2}).to_csv(sample, index=False)
    pd.DataFrame({"image_id": ["a", "b"], "labels": ["U+306E 16 48", ""]}).to_csv(sub, index=False)  # b: no character
    assert smoke.check_submission(sub, sample, spec) == 2
    pd.DataFrame({"image_id": ["a", "b"], "labels": ["none 1 0 0 1 1"] * 2}).to_csv(sample, index=False)
    pd.DataFrame({"image_id": ["a", "b"], "labels": ["none 1 0 0 1 1", ""]}).to_csv(sub, index=False)
    with pytest.raises(KitError, match="empty values"):  # siim's "none" is written, never blank
        smoke.check_submission(sub, sample, spec)


def test_points_fused_over_folds_keep_one_folds_confidence_scale_under_the_out_of_fold_cut():
    """The cut is chosen on one fold's confidences (the out-of-fold rows); the test pages' folds fuse at their mean
    confidence, so a character 3 of 5 folds found at 0.6 stays above a cut of 0.5 (boxes stay at found/n)."""
    from types import SimpleNamespace

    from kit.pipelines.detection import DetectionPipeline

    found = (10, 10, 30, 30, 0.6, 0)
    nothing = np.zeros((1, 1, 6), np.float32)
    nothing[..., 5] = -1  # a fold that found no box
    folds = [packed([[found]]) if k < 3 else nothing for k in range(5)]
    fused = {}
    for points in (True, False):
        pipe = DetectionPipeline.__new__(DetectionPipeline)
        pipe.p, pipe._points = SimpleNamespace(fusion_iou=0.55, max_detections=4), points
        total = None
        for pred in folds:
            total = pipe.fold_sum(total, pred)
        fused[points] = pipe.fold_mean(total, 5)
    assert fused[True][0, 0, 4] == pytest.approx(0.6) and fused[False][0, 0, 4] == pytest.approx(0.36)
    assert (detection_points.above(fused[True], 0.5)[..., 5] >= 0).sum() == 1


def test_the_cut_search_scores_each_cut_as_the_grader_scores_the_points_kept_there():
    from kit.train import box_metrics

    rng = np.random.default_rng(7)
    pages, truths, found = 30, 12, 40
    corner = rng.integers(0, 40, (pages, truths, 2)).astype(np.float32)
    side = rng.integers(6, 20, (pages, truths, 2)).astype(np.float32)  # overlapping boxes: centres they share
    truth = np.concatenate([corner, corner + side, rng.integers(0, 3, (pages, truths, 1))], -1).astype(np.float32)
    truth[:5, 8:, 4] = -1  # pages of fewer characters, padded
    truth[5, :, 4] = -1  # a page without one
    centre = rng.uniform(0, 60, (pages, found, 2)).astype(np.float32)
    conf = rng.choice(np.linspace(0.05, 1, 12), (pages, found, 1)).astype(np.float32)  # ties at each cut
    pred = np.concatenate([centre - 2, centre + 2, conf, rng.integers(0, 3, (pages, found, 1))], -1)
    pred = pred.astype(np.float32)
    pred[6, :, 5] = -1  # a page with no detection
    cuts = np.unique(np.r_[0.0, np.quantile(conf, np.linspace(0, 1, 9))].astype(np.float32))
    graded = [metrics.score("centre_f1", detection_points.above(pred, c), truth) for c in cuts]
    assert np.array_equal(box_metrics.centre_f1_at(pred, truth, cuts), graded)
    assert len(set(graded)) > 3  # the cuts differ
