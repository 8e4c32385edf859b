"""Long tables (one row per time step) as padded sequence tensors, and batches gathered where they live.

Rows are grouped by `sequence_column` and ordered by `order_column`; sequences of different lengths are
padded and carry a mask. Numeric features are standardised per fold, with statistics from the training
folds only (`standardizer`); categorical features become integer codes for an embedding.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kit.data.loaders import one_ahead, shard_rows
from kit.errors import KitError
from kit.runtime import hardware
from kit.spec import Spec


@dataclass
class Sequences:
    ids: np.ndarray  # (S,) sequence ids, as text
    x: np.ndarray  # (S, L, F) float32 numeric features, 0 in padding
    cat: np.ndarray  # (S, L, K) int64 category codes, 0 in padding (codes start at 1)
    mask: np.ndarray  # (S, L) bool: a real row
    weight: np.ndarray  # (S, L) float32: 1 where the row counts in loss and metric (mask and score_mask)
    row_index: np.ndarray  # (S, L) int64: each step's row in the table it came from (-1 in padding)
    y: np.ndarray | None = None  # per_step: (S, L), or (S, L, K) for several target columns; per_sequence: (S,)

    @property
    def length(self) -> int:
        return self.x.shape[1]

    def tensors(self) -> dict[str, torch.Tensor]:
        out = {"x": torch.from_numpy(self.x), "cat": torch.from_numpy(self.cat), "mask": torch.from_numpy(self.mask),
               "weight": torch.from_numpy(self.weight)}
        if self.y is not None:
            out["target"] = torch.from_numpy(self.y)
        return out


def check_columns(df: pd.DataFrame, spec: Spec, path: Path, need_target: bool) -> None:
    """Missing columns, non-numeric features and NaNs in features: one line each, naming column and row."""
    wanted = [spec.sequence_column, spec.order_column, *spec.features, *spec.categorical]
    wanted += [spec.target_column] if need_target else []
    if spec.task == "per_step":  # per sequence, the sample submission's ids are sequence ids
        wanted.append(spec.id_column)
    missing = [c for c in dict.fromkeys(wanted) if c and c not in df.columns]
    if missing:
        listed = ", ".join(map(str, df.columns[:12]))
        raise KitError(f"{path.name}: no column '{missing[0]}' (it has: {listed}); fix [data] in the config")
    for column in dict.fromkeys([*spec.features, spec.order_column]):
        values = df[column]
        if not pd.api.types.is_numeric_dtype(values):
            bad = (pd.to_numeric(values, errors="coerce").isna() & values.notna()).to_numpy()
            row = int(np.flatnonzero(bad)[0]) if bad.any() else 0
            raise KitError(
                f"{path.name}: feature '{column}' is not numeric ('{values.iloc[row]}' in row {row + 2}); "
                "encode it as numbers, or list it under [data] categorical"
            )
        nan = values.isna().to_numpy()
        if nan.any():
            row = int(np.flatnonzero(nan)[0])
            raise KitError(
                f"{path.name}: feature '{column}' has {int(nan.sum())} missing values (first in row {row + 2}); "
                "fill them before training (kit does not guess)"
            )


def score_rows(df: pd.DataFrame, expression: str, path: Path) -> np.ndarray:
    """The rows `score_mask` selects (all rows when it is empty)."""
    if not expression:
        return np.ones(len(df), bool)
    try:
        selected = df.eval(expression)
    except Exception as e:  # pandas raises many types for a bad expression
        raise KitError(f"[data] score_mask '{expression}' cannot be evaluated on {path.name}: {e}") from None
    if not pd.api.types.is_bool_dtype(selected):
        raise KitError(f"[data] score_mask '{expression}' is not a true/false condition on {path.name}")
    return selected.to_numpy()


def category_codes(frames: list[pd.DataFrame], columns: tuple[str, ...]) -> dict[str, pd.Index]:
    """The values of each categorical column over train and test together, sorted: value i gets code i + 1
    (0 is padding)."""
    codes = {}
    for column in columns:
        values = pd.Index(pd.unique(pd.concat([f[column] for f in frames], ignore_index=True).dropna()))
        try:
            values = values.sort_values()
        except TypeError:  # mixed types: first-seen order serves as well
            pass
        codes[column] = values
    return codes


def to_sequences(df: pd.DataFrame, spec: Spec, codes: dict[str, pd.Index], y: np.ndarray | None, weight: np.ndarray,
                 per_step: bool, length: int | None = None) -> Sequences:
    """Group, order and pad `df`. `y` holds one (encoded) target per row; `weight` the score mask per row."""
    seq_codes, seq_ids = pd.factorize(df[spec.sequence_column], sort=True)  # hashing, not string sorting
    order = np.lexsort((df[spec.order_column].to_numpy(), seq_codes))
    _, starts, counts = np.unique(seq_codes[order], return_index=True, return_counts=True)
    ids = np.asarray(seq_ids).astype(str)
    which = np.repeat(np.arange(len(ids)), counts)  # sequence of each sorted row
    pos = np.arange(len(order)) - np.repeat(starts, counts)  # position inside its sequence
    L = max(int(counts.max()), length or 0)
    S, F, K = len(ids), len(spec.features), len(spec.categorical)
    x = np.zeros((S, L, F), np.float32)
    x[which, pos] = df[list(spec.features)].to_numpy(np.float32)[order] if F else np.zeros((len(order), 0), np.float32)
    cat = np.zeros((S, L, K), np.int64)
    for k, column in enumerate(spec.categorical):
        cat[which, pos, k] = pd.Categorical(df[column], categories=codes[column]).codes[order] + 1
    mask = np.zeros((S, L), bool)
    mask[which, pos] = True
    w = np.zeros((S, L), np.float32)
    w[which, pos] = weight[order]
    row_index = np.full((S, L), -1, np.int64)
    row_index[which, pos] = order
    target = None
    if y is not None:
        if per_step:
            target = np.zeros((S, L, *y.shape[1:]), y.dtype)  # (S, L), or (S, L, K) for K target columns
            target[which, pos] = y[order]
        else:
            target = y[order][starts]  # the sequence's label: its first row's
    return Sequences(ids, x, cat, mask, w, row_index, target)


def standardizer(seqs: Sequences, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and std over the real rows of sequences `rows` (the training folds)."""
    values = seqs.x[rows][seqs.mask[rows]]  # (rows, F)
    if not len(values):
        return np.zeros(seqs.x.shape[2], np.float32), np.ones(seqs.x.shape[2], np.float32)
    std = values.std(0)
    return values.mean(0).astype(np.float32), np.where(std > 1e-8, std, 1.0).astype(np.float32)


class SequenceBatches:
    """Batches of sequences gathered by index from tensors that stay where they are: on the GPU when they
    fit (no per-step DataLoader, no copies); else in host memory, each batch gathered into a page-locked
    staging buffer and copied on a side stream one batch ahead. Every batch also carries `lengths`, each
    sequence's real steps, on the host: what an LSTM's packing needs without asking the GPU."""

    def __init__(self, tensors: dict[str, torch.Tensor], rows: np.ndarray, batch_size: int, shuffle: bool,
                 device: torch.device, seed: int = 0, transform: Callable[[dict], dict] | None = None,
                 shard: tuple[int, int] = (0, 1), prefetch: bool = True):
        self.tensors, self.rows, self.batch_size, self.shuffle = tensors, torch.as_tensor(rows), batch_size, shuffle
        self.shard, self.prefetch = shard, prefetch
        self.device, self.transform = hardware.indexed(device), transform or (lambda b: b)
        self.generator = torch.Generator().manual_seed(seed)
        self.index_device = next(iter(tensors.values())).device
        mask, self.lengths = tensors.get("mask"), None  # lengths: (S,) on the host, once
        if mask is not None:
            self.lengths = torch.from_numpy(mask.numpy().sum(1)) if mask.device.type == "cpu" else mask.sum(1).cpu()

    def __len__(self) -> int:
        return (len(self._mine(self.rows)) + self.batch_size - 1) // self.batch_size

    def _mine(self, order: torch.Tensor) -> torch.Tensor:
        return shard_rows(order, self.shard, even=self.shuffle)  # training (shuffled) shards are even

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        order = host_rows(self.rows, torch.randperm(len(self.rows), generator=self.generator)) if self.shuffle else self.rows
        order = self._mine(order)
        placed = order.to(self.index_device)  # once per epoch; batches slice it where the tables are
        steps = [(order[i : i + self.batch_size], placed[i : i + self.batch_size]) for i in range(0, len(order), self.batch_size)]
        if self.index_device == self.device or self.device.type != "cuda" or not self.prefetch:
            batches = (self._gather(*idx) for idx in steps)
        else:  # host-resident tables on a GPU: copy one batch ahead
            batches = one_ahead(steps, lambda idx: self._gather(*idx), self.device)
        for batch in batches:
            yield self.transform(batch)

    def _gather(self, host_idx: torch.Tensor, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        batch = {k: self._rows(v, idx) for k, v in self.tensors.items()}
        if self.lengths is not None:
            batch["lengths"] = host_rows(self.lengths, host_idx)
        return batch

    def _rows(self, tensor: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        if tensor.device.type != "cpu":
            return tensor.index_select(0, idx)  # where the tables live on the device
        if self.device.type != "cuda":
            return host_rows(tensor, idx).to(self.device)
        staging = torch.empty((len(idx), *tensor.shape[1:]), dtype=tensor.dtype, pin_memory=True)
        host_rows(tensor, idx, out=staging)  # one batch page-locked, never the whole table
        return staging.to(self.device, non_blocking=True)


def host_rows(tensor: torch.Tensor, idx: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Rows `idx` of a host tensor, gathered by numpy on this thread. torch's index_select spreads even a batch's
    few hundred KB over its intra-op threads, and where the cores are busy (a shared 2-core machine, a Kaggle
    CPU session's loader workers) each call then waits for a core: 3.9 ms a call instead of ~30 us on two loaded
    cores, where make bench's sequence data path read 0.2x its per-sequence DataLoader instead of 12x."""
    if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16
        return torch.index_select(tensor, 0, idx, out=out) if out is not None else tensor.index_select(0, idx)
    rows = np.take(tensor.numpy(), idx.numpy(), axis=0, out=None if out is None else out.numpy())
    return out if out is not None else torch.from_numpy(rows)


GPU_SHARE = 0.25  # tables stay on the GPU when they take less than this share of its free memory


def placement(nbytes: int, gpu_free: int) -> str:
    """"gpu" when tables of `nbytes` fit in GPU_SHARE of `gpu_free` bytes, else "host"."""
    return "gpu" if nbytes < GPU_SHARE * gpu_free else "host"


def place(tensors: dict[str, torch.Tensor], device: torch.device, log: Callable[[str], None]) -> dict[str, torch.Tensor]:
    """On the GPU if they fit (`placement`); else left where they are, in host memory, shared with the numpy
    arrays they were made from (a pinned copy of a big table would double it, and round it up)."""
    if device.type != "cuda":
        return tensors
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    free, _ = torch.cuda.mem_get_info(device)
    if placement(nbytes, free) == "gpu":
        log(f"sequences      {nbytes / 2**20:.0f} MB resident on the GPU: batches are gathered there")
        return {k: v.to(device) for k, v in tensors.items()}
    log(f"sequences      {nbytes / 2**20:.0f} MB stay in host memory (too big for the GPU's {free / 2**30:.1f} GB free): "
        "each batch is copied one ahead")
    return tensors
