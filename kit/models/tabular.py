"""The tabular network (model_name = "mlp"): standardised numbers with a flag per column that has gaps, an
embedding per category, then blocks of Linear, LayerNorm, SiLU and dropout, and a linear head."""
from __future__ import annotations

import torch
from torch import nn


def embedding_size(levels: int) -> int:
    """fastai's rule of thumb for a category's embedding width, capped at 32."""
    return max(2, min(32, round(1.6 * (levels + 1) ** 0.56)))


class TabularNet(nn.Module):
    """Input x: (B, numbers + categories) float32, the numbers raw (NaN where missing) and each category's code + 1
    (0: missing or unseen). The numbers' mean and std, and which columns have gaps, are in its state (a fold's
    training rows set them), so a fold checkpoint predicts with its own statistics."""

    def __init__(self, numbers: int, cardinalities: tuple[int, ...], outputs: int, hidden: int = 256, layers: int = 3,
                 dropout: float = 0.1):
        super().__init__()
        self.numbers = numbers
        self.register_buffer("mean", torch.zeros(numbers))
        self.register_buffer("std", torch.ones(numbers))
        self.register_buffer("gaps", torch.zeros(numbers, dtype=torch.bool))  # columns whose gaps get a flag
        self.embeddings = nn.ModuleList(nn.Embedding(k + 1, embedding_size(k)) for k in cardinalities)
        width = 2 * numbers + sum(e.embedding_dim for e in self.embeddings)  # flags: zeros where a column has none
        blocks: list[nn.Module] = []
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.SiLU(), nn.Dropout(dropout)]
            width = hidden
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(width, outputs)

    def set_standardization(self, mean: torch.Tensor, std: torch.Tensor, gaps: torch.Tensor) -> None:
        self.mean.copy_(mean)
        self.std.copy_(torch.where(std > 0, std, torch.ones_like(std)))
        self.gaps.copy_(gaps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        numbers, codes = x[:, : self.numbers].float(), x[:, self.numbers :].long()  # (B, n), (B, c)
        missing = torch.isnan(numbers)
        scaled = torch.nan_to_num((numbers - self.mean) / self.std, nan=0.0).clamp(-10.0, 10.0)
        parts = [scaled, (missing & self.gaps).float()]
        parts += [embed(codes[:, j]) for j, embed in enumerate(self.embeddings)]
        return self.head(self.body(torch.cat(parts, dim=1)))


def statistics(numbers, rows) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(mean, std, gaps) of the numbers' columns over `rows`, missing values left out (a column all missing
    there: 0 and 1)."""
    values = torch.as_tensor(numbers[rows], dtype=torch.float64)
    present = ~torch.isnan(values)
    count = present.sum(0).clamp(min=1)
    mean = torch.where(present, values, 0.0).sum(0) / count
    var = torch.where(present, (values - mean) ** 2, 0.0).sum(0) / count
    gaps = (~present).any(0)
    return mean.float(), var.sqrt().float(), gaps
