"""Tasks: how a batch becomes a loss and metric rows. The loop calls them without knowing which it runs."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

Batch = dict[str, torch.Tensor]


class Classification:
    """Cross-entropy on logits; predictions are softmax probabilities."""

    def __init__(self, input_key: str = "image", label_smoothing: float = 0.0):
        self.input_key, self.label_smoothing = input_key, label_smoothing

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        logits = model(batch[self.input_key])
        loss = F.cross_entropy(logits.float(), batch["target"], label_smoothing=self.label_smoothing)
        return {"loss": loss, "output": logits}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float().softmax(-1)

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        return {"pred": self.predict(output), "target": batch["target"]}


class Regression:
    """Targets standardised with the training mean and std; MSE for rmse, L1 for mae; predictions in
    target units."""

    def __init__(self, mean: float, std: float, metric: str, input_key: str = "image"):
        self.mean, self.std, self.input_key = float(mean), float(std) or 1.0, input_key
        self.loss = F.l1_loss if metric == "mae" else F.mse_loss

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        out = model(batch[self.input_key]).float()
        loss = self.loss(out[:, 0], (batch["target"].float() - self.mean) / self.std)
        return {"loss": loss, "output": out}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float() * self.std + self.mean

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        return {"pred": self.predict(output), "target": batch["target"]}
