"""Batches of a table's rows, gathered from tensors that stay on the device (a table's features fit there: the
tabular network's batches cost no copies and no loader processes)."""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch


class RowBatches:
    """`rows` of `tensors` (each (N, ...)) in batches of `batch_size`: shuffled each pass with `train` (a new order
    per pass, from `seed`), this rank's `shard` of them."""

    def __init__(self, tensors: dict[str, torch.Tensor], rows: np.ndarray, batch_size: int, train: bool, seed: int = 0,
                 shard: tuple[int, int] = (0, 1)):
        self.tensors, self.batch_size, self.train = tensors, batch_size, train
        self.rows = np.asarray(rows)[shard[0] :: shard[1]]
        self.rng = np.random.default_rng(seed)
        self.device = next(iter(tensors.values())).device

    def __len__(self) -> int:
        return math.ceil(len(self.rows) / self.batch_size)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        order = self.rng.permutation(self.rows) if self.train else self.rows
        index = torch.as_tensor(order, device=self.device)
        for start in range(0, len(order), self.batch_size):
            take = index[start : start + self.batch_size]
            yield {k: v[take] for k, v in self.tensors.items()}
