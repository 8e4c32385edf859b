"""Class probabilities of which each row keeps only its likeliest classes: what a metric of the first classes
(accuracy, macro F1, MAP@k) and a submission of labels need, at a sliver of dense rows' bytes.

Herbarium 2022 has 15,501 classes: its 840,000 out-of-fold rows as dense float32 probabilities take 52 GB and its
test rows 13 GB a fold, beyond a Kaggle session's 29 GB of RAM. `kept(likeliest, outputs, metric, rows)` says when
rows are kept so (`KEPT` classes a row, where dense rows would pass `DENSE_BYTES`); validation (kit.train.objectives) and
prediction then reduce each batch on the device, and folds, blends and the submission read `TopK` as they read
a dense (rows, classes) array: `argmax`, `ranked`, rows by index, a weighted sum. A class a row does not keep
counts as probability 0 there, so a fold ensemble's mean is exact for every class some fold kept.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kit.metric_records import metric_key, metrics_where, top_k

KEPT = 32  # classes a row keeps: a fold ensemble's winner is almost always among each fold's 32 likeliest
UNION = 3 * KEPT  # classes a fold ensemble's running sum keeps a row: the union of the folds' so far, up to this
DENSE_BYTES = 2**30  # dense float32 rows x classes beyond this are kept as TopK (where the metric allows)
RANKING = metrics_where(family="ranking")  # metrics that read only the order of a row's likeliest classes
FLOAT32_UP_TO = 2**28  # bytes of float32 predictions kept (on disk) as they are; beyond, float16 (a 1e-3 step at most)
WIDE = 256  # outputs from which predictions are kept in float16 whatever their size: checkpoints and blends together


@dataclass
class TopK:
    """(rows, outputs) probabilities, each row's `index.shape[1]` likeliest classes kept, best first."""

    index: np.ndarray  # (N, k) int32 class indices, best first; -1 pads a row that has fewer (a sum of few classes)
    value: np.ndarray  # (N, k) float32 their probabilities (0 where padded)
    outputs: int  # the classes a dense row would hold

    ndim = 2

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.index), self.outputs

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + self.value.nbytes

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, rows) -> TopK:
        return TopK(self.index[rows], self.value[rows], self.outputs)

    def argmax(self) -> np.ndarray:
        return self.index[:, 0]

    def ranked(self, k: int) -> np.ndarray:
        """(N, k) the k likeliest classes of each row, best first."""
        return self.index[:, :k]

    def dense(self) -> np.ndarray:
        """(N, outputs) float32 with zeros where a row keeps no probability: for a few rows only."""
        out = np.zeros(self.shape, np.float32)
        rows, slots = np.nonzero(self.index >= 0)
        out[rows, self.index[rows, slots]] = self.value[rows, slots]
        return out

    def isfinite(self) -> bool:
        return bool(np.isfinite(self.value).all())


def kept(likeliest: bool, outputs: int, metric: str, rows: int) -> int:
    """How many classes each row keeps: 0 (all, dense) unless the target's kind keeps its rows' likeliest classes
    (`Kind.likeliest`: one label per row), the metric reads only
    the order of the likeliest classes and `rows` (a run's largest set of rows, its out-of-fold rows or its test
    rows: the decision is the run's, kept in its recipe, so that both keep rows alike) of dense float32 would pass
    DENSE_BYTES."""
    if not likeliest or metric_key(metric) not in RANKING or rows * outputs * 4 <= DENSE_BYTES:
        return 0
    return min(outputs, max(KEPT, top_k(metric)))


def of(probs: torch.Tensor | np.ndarray, k: int) -> TopK:
    """The `k` likeliest classes of each row of dense probabilities (a batch on the device: reduced there)."""
    if isinstance(probs, np.ndarray):
        probs = torch.from_numpy(probs)
    value, index = torch.topk(probs.float(), min(k, probs.shape[1]), dim=1)
    return TopK(index.to(torch.int32).cpu().numpy(), value.cpu().numpy(), probs.shape[1])


def constant(row: np.ndarray, n: int, k: int) -> TopK:
    """`n` copies of one dense row of probabilities (the class prior), each keeping its `k` likeliest."""
    one = of(np.asarray(row, dtype=np.float32)[None], k)
    return TopK(np.repeat(one.index, n, 0), np.repeat(one.value, n, 0), one.outputs)


def concat(parts: Sequence[TopK]) -> TopK:
    """Rows of several TopK one after the other (each row keeping as many as the fewest)."""
    k = min(p.index.shape[1] for p in parts)
    return TopK(np.concatenate([p.index[:, :k] for p in parts]), np.concatenate([p.value[:, :k] for p in parts]),
                parts[0].outputs)


def weighted_sum(parts: Sequence[TopK], weights: Sequence[float], k: int | None = None) -> TopK:
    """Σ weight x part, row by row over the union of the classes the parts keep (a class a part does not keep
    counts 0 there), each row keeping its `k` largest sums (default: as many as the first part keeps; a row whose
    union is smaller is padded with class -1)."""
    k = k or parts[0].index.shape[1]
    index = np.concatenate([p.index for p in parts], axis=1)  # (N, m)
    value = np.concatenate([p.value.astype(np.float32) * np.float32(w) for p, w in zip(parts, weights)], axis=1)
    order = np.argsort(index, axis=1, kind="stable")
    index, value = np.take_along_axis(index, order, 1), np.take_along_axis(value, order, 1)
    repeat = np.zeros(index.shape, bool)
    repeat[:, 1:] = index[:, 1:] == index[:, :-1]
    for j in range(index.shape[1] - 1, 0, -1):  # each repeat's value into the first of its run, right to left
        value[:, j - 1] += np.where(repeat[:, j], value[:, j], 0.0)
    value[repeat | (index < 0)] = -np.inf  # repeats summed into their first; an earlier sum's padding
    best = np.argsort(-value, axis=1, kind="stable")[:, : min(k, index.shape[1])]
    index, value = np.take_along_axis(index, best, 1), np.take_along_axis(value, best, 1)
    pad = np.isneginf(value)
    index[pad], value[pad] = -1, 0.0
    return TopK(index, value, parts[0].outputs)


def host(v: torch.Tensor | TopK) -> np.ndarray | TopK:
    """A metric row's column on the host: numpy, floats as float32."""
    if isinstance(v, TopK):
        return v
    return (v.float() if v.is_floating_point() else v).cpu().numpy()


def join(parts: Sequence[np.ndarray | TopK]) -> np.ndarray | TopK:
    """Several batches' (or folds') rows as one."""
    if isinstance(parts[0], TopK):
        return concat(parts)
    return np.concatenate(parts)


def repeat_row(row: np.ndarray, n: int, kept: int, writable: bool = True) -> np.ndarray | TopK:
    """`n` copies of the dense `row` (the prior), each keeping its `kept` likeliest classes, or dense: float32 rows,
    or with `writable` False one row seen `n` times (no memory: iMet's baseline over 120,801 rows was 1.7 GB)."""
    if kept:
        return constant(row, n, kept)
    row = np.asarray(row, dtype=np.float32)
    return np.tile(row, (n, 1)) if writable else np.broadcast_to(row, (n, len(row)))


def set_rows(pred: np.ndarray | TopK, rows: Sequence[int], row: np.ndarray) -> None:
    """`pred`'s `rows` (images that could not be decoded, say) set to the dense `row`, in place."""
    if not len(rows):
        return
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(pred, TopK):
        fill = constant(row, len(rows), pred.index.shape[1])
        pred.index[rows], pred.value[rows] = fill.index, fill.value
    else:
        pred[rows] = row


def zeros_and_ones(values: np.ndarray, rows: int = 1024) -> bool:
    """Whether every value is 0 or 1, read a thousand rows at a time (np.isin sorted a copy of them all)."""
    return all(bool(((part == 0) | (part == 1)).all()) for part in (values[i : i + rows] for i in range(0, len(values), rows)))


def stored_dtype(outputs: int, nbytes32: int, probabilities: bool = True) -> np.dtype:
    """How predictions are kept on disk: probabilities in float16 from WIDE outputs or beyond FLOAT32_UP_TO bytes in
    float32 (iMet's 3,474 labels: 333 MB a fold's validation rows), so that a fold checkpoint's rows and the run's
    blend files together hold at most 4 bytes a prediction; values (a regression's, which float16 would round to
    three digits and cap at 65,504) and small ones in float32."""
    small = outputs < WIDE and nbytes32 <= FLOAT32_UP_TO
    return np.dtype(np.float32 if small or not probabilities else np.float16)


def stored(rows: dict) -> dict:
    """Metric rows as a checkpoint keeps them: predictions as `stored_dtype` says, and 0/1 labels of many outputs as
    bytes (iMet's truth is 3,474 of them a row)."""
    pred, truth = rows.get("pred"), rows.get("target")
    out = dict(rows)
    if not isinstance(pred, np.ndarray) or pred.ndim != 2 or not isinstance(truth, np.ndarray):
        return out
    labels = truth.ndim == 2 and zeros_and_ones(truth)
    probabilities = np.issubdtype(truth.dtype, np.integer) or labels  # classes' or labels': not a regression's values
    if pred.dtype == np.float32 and stored_dtype(pred.shape[1], pred.nbytes, probabilities) == np.float16:
        out["pred"] = pred.astype(np.float16)
    if labels and truth.shape[1] >= WIDE:
        out["target"] = truth.astype(np.uint8)
    return out
