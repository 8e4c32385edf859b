"""The detection objective: a training batch's loss is the sum of the detector's loss dict (a validation batch's too,
held_out_loss); a validation batch is predicted as the test set is (the image and its mirror, their boxes fused:
kit.data.box_fusion) and becomes metric rows of packed boxes in the original images' pixels.

Packed boxes keep a batch's rows fixed-width (the loop concatenates them, a checkpoint stores them): predictions
(N, D, 6) x_min, y_min, x_max, y_max, confidence, label; truth (N, G, 5) x_min .. y_max, label; label -1 pads.
kit.train.box_metrics.unpack turns them into kit.data.boxes.ImageBoxes. Where the sample submission writes a
class of its own for an image without findings (vinbigdata's "14 1 0 0 1 1"), every image's rows hold that class on
its 0 0 1 1 box: in the truth where the image has no box, in the predictions at 1 - the likeliest box's confidence.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from kit.data import box_fusion
from kit.data.batch import Batch

NOTHING_BOX = (0.0, 0.0, 1.0, 1.0)


def targets(batch: Batch) -> list[dict[str, torch.Tensor]]:
    """The batch's padded boxes as torchvision's targets: float32 corners, int64 labels from 1 (0 the background)."""
    out = []
    for boxes, labels in zip(batch["boxes"], batch["labels"]):
        keep = labels >= 0
        out.append({"boxes": boxes[keep].float(), "labels": labels[keep] + 1})
    return out


def pack(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]], width: int) -> np.ndarray:
    """Each image's (boxes, scores, labels), best first, cut to `width` -> (N, width, 6), label -1 padding."""
    out = np.zeros((len(rows), width, 6), np.float32)
    out[..., 5] = -1
    for i, (boxes, scores, labels) in enumerate(rows):
        order = np.argsort(-scores, kind="stable")[:width]
        k = len(order)
        out[i, :k, :4], out[i, :k, 4], out[i, :k, 5] = boxes[order], scores[order], labels[order]
    return out


def with_nothing(boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, nothing: int):
    """An image's predictions with the nothing-found class added at 1 - the likeliest box's confidence."""
    if nothing < 0:
        return boxes, scores, labels
    conf = 1.0 - float(scores.max(initial=0.0))
    return (np.concatenate([boxes, np.array([NOTHING_BOX], np.float32)]), np.append(scores, np.float32(conf)),
            np.append(labels, nothing))


def fuse_views(views: list[dict[str, np.ndarray]], iou: float, keep: int, sources: int | None = None):
    """Several views' (or folds') detections of one image fused: (boxes, scores, labels), best `keep`."""
    boxes = np.concatenate([v["boxes"] for v in views]) if views else np.zeros((0, 4), np.float32)
    scores = np.concatenate([v["scores"] for v in views]) if views else np.zeros(0, np.float32)
    labels = np.concatenate([v["labels"] for v in views]) if views else np.zeros(0, np.int64)
    if len(views) > 1 and len(boxes):
        boxes, labels, scores = box_fusion.fuse(boxes, labels, scores, sources or len(views), iou)
    order = np.argsort(-scores, kind="stable")[:keep]
    return boxes[order].astype(np.float32), scores[order].astype(np.float32), labels[order].astype(np.int64)


def held_out_loss(model: nn.Module, batch: Batch) -> torch.Tensor:
    """The training loss on held-out images, without gradients. torchvision's detectors give losses only in train
    mode (in eval mode, detections), so the model runs in it here with its BatchNorm layers left in eval mode (their
    running statistics untouched); the proposals and regions it samples draw from a seeded fork of the random state,
    so an epoch's figure does not move with the draw and training's own random sequence is not consumed."""
    was = model.training
    model.train()
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()
    device = batch["image"].device
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(0)
            losses = model(batch["image"], targets(batch))
    finally:
        model.train(was)
    return sum(v.float() for v in losses.values())


class Detection:
    """`classes` object classes; `nothing`: the class a sample writes for an image without findings (-1: none);
    `tta`: the mirror too; `iou`: box fusion's; `keep`: detections an image."""

    loss_metric = None
    score_rows = None  # (rows, metric) -> an epoch's score, where the pipeline scores its rows its own way (points)

    def __init__(self, side: int, nothing: int, tta: bool, iou: float, keep: int, truth_width: int):
        self.side, self.nothing, self.tta, self.iou, self.keep = side, nothing, tta, iou, keep
        self.truth_width = truth_width

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        if model.training and torch.is_grad_enabled():
            losses = model(batch["image"], targets(batch))
            loss = sum(v.float() for v in losses.values())
            return {"loss": loss, "output": loss.detach()}
        found = self.infer(model, batch["image"])
        return {"loss": held_out_loss(model, batch), "output": found}

    def infer(self, model: nn.Module, images: torch.Tensor) -> torch.Tensor:
        """(B, keep, 6) packed detections in the cached images' pixels: each image's views fused."""
        per_view = [self._detect(model, images, False)] + ([self._detect(model, images, True)] if self.tta else [])
        rows = [fuse_views([v[i] for v in per_view], self.iou, self.keep) for i in range(len(images))]
        return torch.from_numpy(pack(rows, self.keep))

    def _detect(self, model: nn.Module, images: torch.Tensor, mirrored: bool) -> list[dict[str, np.ndarray]]:
        found = model(images.flip(-1) if mirrored else images)
        out = []
        for f in found:
            boxes = f["boxes"].float().cpu().numpy()
            if mirrored:
                boxes = np.stack([self.side - boxes[:, 2], boxes[:, 1], self.side - boxes[:, 0], boxes[:, 3]], 1)
            out.append({"boxes": boxes.reshape(-1, 4), "scores": f["scores"].float().cpu().numpy(),
                        "labels": f["labels"].cpu().numpy() - 1})
        return out

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """Packed predictions and truth in the original images' pixels (batch "scale": each image's x and y factors
        from the cache's pixels), the nothing-found class added to both where the sample writes one."""
        pred = output.cpu().numpy() if isinstance(output, torch.Tensor) else np.asarray(output)
        scale = batch["scale"].float().cpu().numpy()
        truth_boxes, truth_labels = batch["boxes"].float().cpu().numpy(), batch["labels"].cpu().numpy()
        p_rows, t_rows = [], []
        for i in range(len(pred)):
            s = np.tile(scale[i], 2)
            p = pred[i][pred[i][:, 5] >= 0]
            p_rows.append(with_nothing(p[:, :4] * s, p[:, 4], p[:, 5].astype(np.int64), self.nothing))
            keep = truth_labels[i] >= 0
            boxes, labels = truth_boxes[i][keep] * s, truth_labels[i][keep]
            if self.nothing >= 0 and not keep.any():
                boxes, labels = np.array([NOTHING_BOX], np.float32), np.array([self.nothing])
            t_rows.append((boxes, np.ones(len(labels), np.float32), labels))
        width = self.keep + (self.nothing >= 0)
        truth = pack(t_rows, max(self.truth_width, 1))[..., [0, 1, 2, 3, 5]]
        return {"pred": torch.from_numpy(pack(p_rows, width)), "target": torch.from_numpy(truth)}
