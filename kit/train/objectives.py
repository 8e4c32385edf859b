"""Objectives: how a batch becomes a loss and metric rows (timm calls these tasks). The loop calls them without
knowing which it runs."""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from kit.data.batch import Batch
from kit.metric_records import absolute
from kit.train import topk


class Objective(Protocol):
    loss_metric: str | None  # the metric whose value the mean validation loss is, if any (the epoch line prints it once)

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        """{"loss": scalar, "output": the model's raw output}"""

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        """The model's raw output as predictions: probabilities, or values in target units."""

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """Metric rows: {"pred": (N, C) probabilities or (N,) values, "target": (N,), optional "weight": (N,)}"""


class Classification:
    """Cross-entropy on logits; predictions are softmax probabilities. With `keep`, a metric row keeps each row's
    `keep` likeliest classes (kit.train.topk), reduced on the device: validation rows of many classes stay small."""

    def __init__(self, input_key: str = "image", label_smoothing: float = 0.0, keep: int = 0):
        self.input_key, self.label_smoothing, self.keep = input_key, label_smoothing, keep
        self.loss_metric = None if label_smoothing else "log_loss"

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        logits = model(batch[self.input_key])
        losses = F.cross_entropy(logits.float(), batch["target"], label_smoothing=self.label_smoothing, reduction="none")
        return {"loss": weighted(losses, batch), "output": logits}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float().softmax(-1)

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor | topk.TopK]:
        probs = self.predict(output)
        return {"pred": topk.of(probs, self.keep) if self.keep else probs, "target": batch["target"]}


class MultiLabel:
    """Any number of labels per image: binary cross-entropy on each label's logit (targets 0/1, or soft);
    predictions are each label's sigmoid probability. With `views` (the test-time views prediction averages:
    kit.data.augment.views), validation predicts as the test set is predicted, the average of the views'
    probabilities, so that a threshold chosen on the out-of-fold rows fits the submission's; the loss stays
    the plain view's."""

    def __init__(self, input_key: str = "image", views: tuple[Callable[[torch.Tensor], torch.Tensor], ...] = ()):
        self.input_key, self.views = input_key, views
        self.loss_metric = None  # log_loss of a multi-label target is this loss, but the F-scores and AUC are not

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        x = batch[self.input_key]
        logits = model(x)
        losses = F.binary_cross_entropy_with_logits(logits.float(), batch["target"].float(), reduction="none").mean(1)
        loss = weighted(losses, batch)
        if len(self.views) > 1 and not torch.is_grad_enabled():  # validation: the views' mean, as a logit
            others = [model(view(x)).float().sigmoid() for view in self.views[1:]]  # views[0] is the plain one
            mean = torch.stack([logits.float().sigmoid(), *others])
            logits = torch.logit(mean.mean(0), eps=1e-7)
        return {"loss": loss, "output": logits}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float().sigmoid()

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        return {"pred": self.predict(output), "target": batch["target"].float()}


class SoftLabels:
    """A distribution a row (experts' votes normalised): the KL divergence of the target's rows from the softmax of
    the logits (torch's kl_div on log-softmax: a row's classes of no vote add nothing), not a one-hot cross-entropy;
    predictions are softmax probabilities."""

    loss_metric = "kl_div"  # the mean validation loss is the metric, bar its clipping at 1e-15

    def __init__(self, input_key: str = "image"):
        self.input_key = input_key

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        logits = model(batch[self.input_key])
        losses = F.kl_div(logits.float().log_softmax(-1), batch["target"].float(), reduction="none").sum(1)
        return {"loss": weighted(losses, batch), "output": logits}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float().softmax(-1)

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        return {"pred": self.predict(output), "target": batch["target"].float()}


def weighted(losses: torch.Tensor, batch: Batch) -> torch.Tensor:
    """The mean of rows' losses, weighted by the batch's "weight" (a row of a noisy training set weighs less) where it
    has one."""
    w = batch.get("weight") if hasattr(batch, "get") else None
    if w is None:
        return losses.mean()
    w = w.to(losses.device, losses.dtype)
    return (losses * w).sum() / w.sum().clamp(min=1e-6)


def moments(y, metric: str) -> tuple[list[float], list[float]]:
    """The mean and std of each target column, as Regression standardises it (of log1p(y) under rmsle)."""
    y = np.log1p(np.maximum(y, 0.0)) if metric == "rmsle" else np.asarray(y, dtype=np.float64)
    if not len(y):
        return [0.0], [1.0]
    return np.atleast_1d(y.mean(0)).tolist(), np.atleast_1d(y.std(0)).tolist()


class Regression:
    """Targets standardised with the training mean and std (of each column, for several); MSE (L1 where spec.absolute);
    predictions in target units, clipped to `limits` (each column's [low, high]). Under rmsle the model
    regresses log1p(y), whose squared error is the squared log error the metric takes."""

    def __init__(self, mean, std, metric: str, input_key: str = "image", limits=()):
        self.mean = torch.as_tensor(mean, dtype=torch.float32)  # () or (K,)
        std = torch.as_tensor(std, dtype=torch.float32)
        self.std = torch.where(std > 0, std, torch.ones_like(std))  # a constant target: no scaling
        bounds = torch.as_tensor(limits, dtype=torch.float32).reshape(-1, 2)  # (K, 2), or (0, 2): no limits
        self.low, self.high = (bounds[:, 0], bounds[:, 1]) if len(bounds) else (None, None)
        self.input_key = input_key
        self.log = metric == "rmsle"
        self.loss = F.l1_loss if absolute(metric) else F.mse_loss
        self.loss_metric = None  # the loss is in standardised units, not the metric's

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        out = model(batch[self.input_key]).float()  # (B, K)
        y = batch["target"].float()  # (B,) or (B, K)
        if self.log:
            y = torch.log1p(y.clamp(min=0))
        mean, std = self._on(out.device)
        loss = self.loss(out if y.ndim == 2 else out[:, 0], (y - mean) / std)
        return {"loss": loss, "output": out}

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        # moved once: a copy from host memory at every step would make the host wait for the GPU each time
        if self.mean.device != device:
            self.mean, self.std = self.mean.to(device), self.std.to(device)
            if self.low is not None:
                self.low, self.high = self.low.to(device), self.high.to(device)
        return self.mean, self.std

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        mean, std = self._on(output.device)
        values = output.float() * std + mean
        if self.log:
            values = torch.expm1(values)
        return values if self.low is None else torch.maximum(torch.minimum(values, self.high), self.low)

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        return {"pred": self.predict(output), "target": batch["target"]}


class SequenceObjective:
    """Sequences in, one output per step or per sequence. Loss and metric rows count only the rows whose
    `weight` is set (real steps that the score mask keeps); regression targets are standardised (each column
    by its own mean and std, for several)."""

    def __init__(self, classification: bool, per_step: bool, metric: str, mean=0.0, std=1.0):
        self.classification, self.per_step, self.metric = classification, per_step, metric
        self.mean = torch.as_tensor(mean, dtype=torch.float32)  # () or (K,)
        std = torch.as_tensor(std, dtype=torch.float32)
        self.std = torch.where(std > 0, std, torch.ones_like(std))
        # per step, validation averages each batch's mean over its scored steps, not over all scored steps
        self.loss_metric = "log_loss" if classification and not per_step else None

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        out = model(batch["x"], batch["cat"], batch["mask"], batch.get("lengths")).float()  # (B, L, O) or (B, O)
        y = batch["target"]
        if self.classification:
            losses = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none").view(y.shape)
        else:
            fn = F.l1_loss if absolute(self.metric) else F.mse_loss
            mean, std = self._on(out.device)
            if y.ndim == out.ndim:  # several target columns: (B, L, K) or (B, K), the mean of their losses
                losses = fn(out, (y.float() - mean) / std, reduction="none").mean(-1)
            else:
                losses = fn(out[..., 0], (y.float() - mean) / std, reduction="none")
        if self.per_step:
            w = batch["weight"]
            loss = (losses * w).sum() / w.sum().clamp(min=1.0)
        else:
            loss = losses.mean()
        return {"loss": loss, "output": out}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        if self.classification:
            return output.float().softmax(-1)
        mean, std = self._on(output.device)
        return output.float() * std + mean

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if self.mean.device != device:  # moved once, as Regression's
            self.mean, self.std = self.mean.to(device), self.std.to(device)
        return self.mean, self.std

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        pred = self.predict(output)
        if not self.per_step:
            return {"pred": pred, "target": batch["target"]}
        real = batch["mask"]  # (B, L): flatten the real steps; weight says which of them are scored
        return {"pred": pred[real], "target": batch["target"][real], "weight": batch["weight"][real]}
