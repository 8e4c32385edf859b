"""MLE-bench's grading code (github openai/mle-bench), its logic copied (condensed): the reference computations the
segmentation template's run-length codes and metrics are checked against."""
import numpy as np


def rle_decode(code: str, height: int, width: int) -> np.ndarray:
    """mlebench.competitions.utils.rle_decode (github openai/mle-bench), the grader's decoder."""
    assert isinstance(code, str)
    if not code.strip():
        return np.zeros((height, width), dtype=bool)
    s = list(map(int, code.split()))
    starts, lengths = s[0::2], s[1::2]
    assert starts == sorted(starts)
    assert all(x > 0 for x in starts) and all(x > 0 for x in lengths)
    starts = np.array(starts) - 1
    ends = starts + lengths
    img = np.zeros(height * width, dtype=bool)
    for lo, hi in zip(starts, ends):
        assert not img[lo:hi].any()
        img[lo:hi] = True
    return img.reshape((width, height)).T


def tgs_iou_metric(y_true_in, y_pred_in):
    """iou_metric of mlebench/competitions/tgs-salt-identification-challenge/grade.py (github openai/mle-bench)."""
    if np.sum(y_true_in) == 0 and np.sum(y_pred_in) == 0:
        return 1.0
    if np.sum(y_true_in) == 0 and np.sum(y_pred_in) > 0:
        return 0.0
    intersection = np.histogram2d(y_true_in.flatten(), y_pred_in.flatten(), bins=(2, 2))[0]
    area_true = np.expand_dims(np.histogram(y_true_in, bins=2)[0], -1)
    area_pred = np.expand_dims(np.histogram(y_pred_in, bins=2)[0], 0)
    union = area_true + area_pred - intersection
    intersection, union = intersection[1:, 1:], union[1:, 1:]
    union[union == 0] = 1e-9
    iou = intersection / union
    prec = []
    for t in np.arange(0.5, 1.0, 0.05):
        matches = iou > t
        tp = np.sum(np.sum(matches, axis=1) == 1)
        fp, fn = np.sum(np.sum(matches, axis=0) == 0), np.sum(np.sum(matches, axis=1) == 0)
        prec.append(tp / (tp + fp + fn) if (tp + fp + fn) > 0 else 0)
    return np.mean(prec)
