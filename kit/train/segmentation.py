"""The segmentation objective: a batch of tiles becomes a loss, a batch of whole canvases a prediction made as
the test set's is made, and validation rows of overlap counts (kit.train.mask_metrics) or of pixel errors.

- binary and labels (one 0/1 channel per class, classes may overlap): binary cross-entropy + dice_weight x smp's
  Dice loss on each class's logit; sigmoid probabilities;
- classes (one class per pixel, class 0 the background): cross-entropy + dice_weight x Dice; softmax;
- image (image-to-image, a clean page from a dirty one): the mean squared error of the sigmoid output, whose
  square root per pixel is the metric.

In validation (no gradients), the canvas is covered by overlapping tiles (kit.data.tiles), each tile predicted
in every test-time view with the view undone on the output and averaged, the tiles blended: out-of-fold
predictions made the way test predictions are made, so the cut chosen on them fits the submission's.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import segmentation_models_pytorch as smp
import torch
import torch.nn.functional as F
from torch import nn

from kit.data import tiles
from kit.data.batch import Batch
from kit.train import mask_metrics

EPS = 1e-6


class Segmentation:
    loss_metric = None  # the loss is not the metric

    def __init__(self, kind: str, tile: int, overlap: float, views: list[tuple[Callable, Callable]],
                 dice_weight: float = 1.0, postprocess: bool = True):
        self.kind, self.tile, self.overlap, self.views, self.dice_weight = kind, tile, overlap, views, dice_weight
        self.shares = mask_metrics.MIN_SHARES if postprocess else (0.0,)
        self.thresholds = mask_metrics.THRESHOLDS if postprocess else (0.5,)
        mode = {"binary": "binary", "labels": "multilabel", "classes": "multiclass"}.get(kind)
        self.dice = smp.losses.DiceLoss(mode, from_logits=True) if mode else None
        self.dice_of_probs = smp.losses.DiceLoss(mode, from_logits=False) if mode else None

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        x, y = batch["image"], batch["target"]
        if torch.is_grad_enabled():  # a training step on tiles
            logits = model(x).float()  # (B, K, S, S)
            return {"loss": self.loss(logits, y), "output": logits}
        prob = self.infer_batch(model, batch)  # (B, K, H, W)
        return {"loss": self.loss_of_probs(prob, y), "output": prob}

    def infer_batch(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """`infer` on a batch of whole canvases (kit.data.canvas.CanvasRows): its tiles kept, `step` at a time."""
        step = int(batch["step"][0]) if "step" in batch else 0
        return self.infer(model, batch["image"], batch.get("keep"), step)

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "image":
            return F.mse_loss(logits.sigmoid(), y)
        if self.kind == "classes":
            return F.cross_entropy(logits, y) + self.dice_weight * self.dice(logits, y)
        return F.binary_cross_entropy_with_logits(logits, y) + self.dice_weight * self.dice(logits, y)

    def loss_of_probs(self, prob: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.kind == "image":
            return F.mse_loss(prob, y)
        if self.kind == "classes":
            return F.nll_loss(prob.clamp(min=EPS).log(), y) + self.dice_weight * self.dice_of_probs(prob, y)
        p = prob.float().clamp(EPS, 1 - EPS)  # written out: CUDA's autocast refuses F.binary_cross_entropy on probabilities
        bce = -(y * p.log() + (1 - y) * (1 - p).log()).mean()
        return bce + self.dice_weight * self.dice_of_probs(prob, y)

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.float().softmax(1) if self.kind == "classes" else logits.float().sigmoid()

    def infer(self, model: nn.Module, x: torch.Tensor, keep: torch.Tensor | None = None, step: int = 0) -> torch.Tensor:
        """(B, K, H, W) probabilities (or a page's values) of canvases x (B, C, H, W): overlapping tiles, `step` at a
        time (0: all), each the mean of its views' predictions turned back; with `keep` (B, tiles) only the kept
        tiles (tissue), the rest empty (class 0 where the classes are one per pixel)."""

        def forward(tile: torch.Tensor) -> torch.Tensor:
            return sum(undo(self.probabilities(model(view(tile)))) for view, undo in self.views) / len(self.views)

        prob = tiles.blend(forward, x, self.tile, self.overlap, chunk=step, keep=keep)
        if keep is not None and self.kind == "classes":  # a pixel no kept tile covers (all zero): the background
            prob[:, 0] += prob.sum(1) == 0
        return prob

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output  # validation's output is already probabilities

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """Per image: overlap counts at each cut (masks), or the root mean squared error of its pixels with its pixel
        count as its weight and its true values' sums (a page), over each image's own pixels."""
        sizes = batch["size"].cpu().numpy() if "size" in batch else np.tile(output.shape[-2:], (len(output), 1))
        prob, y = output.float().cpu().numpy(), batch["target"].cpu().numpy()
        if self.kind == "image":
            cols = {k: [] for k in ("pred", "weight", "truth_sum", "truth_sq")}
            for p, t, (h, w) in zip(prob, y, sizes):
                p, t = p[:, :h, :w].astype(np.float64), t[:, :h, :w].astype(np.float64)
                cols["pred"].append(np.sqrt(np.mean((p - t) ** 2)))
                cols["weight"].append(t.size)
                cols["truth_sum"].append(t.sum())
                cols["truth_sq"].append((t**2).sum())
            out = {k: torch.tensor(v, dtype=torch.float64) for k, v in cols.items()}
            return {**out, "target": torch.zeros(len(prob), dtype=torch.float64)}
        preds, targets = [], []
        for p, t, (h, w) in zip(prob, y, sizes):
            if self.kind == "classes":
                truth = np.stack([t[:h, :w] == k for k in range(1, p.shape[0])])
            else:
                truth = t[:, :h, :w] > 0.5
            counts = mask_metrics.statistics(p[:, :h, :w], truth, self.kind == "classes", self.thresholds, self.shares)
            preds.append(counts[0])
            targets.append(counts[1])
        return {"pred": torch.from_numpy(np.stack(preds)), "target": torch.from_numpy(np.stack(targets))}
