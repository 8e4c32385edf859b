"""Weighted box fusion: several readers' boxes on one image (vinbigdata's radiologists, a model's folds or its TTA
views) merged into one box per object.

Per label, boxes are taken by confidence, highest first; each joins the cluster whose fused box it overlaps most
with IoU above `iou`, else starts one. A cluster's box is the confidence-weighted mean of its boxes' corners, its
confidence their mean, scaled by how many of the `sources` drew it (a box one reader of three saw counts a third).
"""
from __future__ import annotations

import numpy as np


def iou_one(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """IoU of one (4,) corner box against (M, 4) boxes -> (M,)."""
    w = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = w * h
    union = (box[2] - box[0]) * (box[3] - box[1]) + (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1]) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def fuse(boxes: np.ndarray, labels: np.ndarray, scores: np.ndarray | None = None, sources: int = 1,
         iou: float = 0.55) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, 4) corners, (N,) labels, (N,) confidences (None: all 1, as readers' labels) from `sources` readers ->
    the fused (K, 4) float32 corners, (K,) labels and (K,) confidences, by label then confidence."""
    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
    labels = np.asarray(labels)
    scores = np.ones(len(boxes)) if scores is None else np.asarray(scores, np.float64)
    out_boxes, out_labels, out_scores = [], [], []
    for label in np.unique(labels):
        pick = np.flatnonzero(labels == label)
        pick = pick[np.argsort(-scores[pick], kind="stable")]
        sums = np.zeros((len(pick), 4))  # each cluster's confidence-weighted corner sums
        weight = np.zeros(len(pick))  # its confidences' sum
        count = np.zeros(len(pick), np.int64)
        fused = np.zeros((len(pick), 4))
        k = 0
        for i in pick:
            overlap = iou_one(boxes[i], fused[:k]) if k else np.zeros(0)
            j = int(overlap.argmax()) if k and overlap.max() > iou else k
            k += j == k
            sums[j] += scores[i] * boxes[i]
            weight[j] += scores[i]
            count[j] += 1
            fused[j] = sums[j] / weight[j] if weight[j] > 0 else boxes[i]
        confidence = weight[:k] / count[:k] * np.minimum(count[:k], sources) / sources
        out_boxes.append(fused[:k])
        out_labels.append(np.full(k, label))
        out_scores.append(confidence)
    if not out_boxes:
        return np.zeros((0, 4), np.float32), labels[:0], np.zeros(0, np.float32)
    return (np.concatenate(out_boxes).astype(np.float32), np.concatenate(out_labels),
            np.concatenate(out_scores).astype(np.float32))
