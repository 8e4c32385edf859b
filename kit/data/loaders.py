"""Batches from host arrays to the device: whole-batch fetches, pinned memory, non-blocking copies on a side
stream, and a device-side transform (augmentation, normalisation) applied before the step sees the batch."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from kit.data.batch import Batch
from kit.data.images import ImageCache, ImageFiles


class ImageRows(Dataset):
    """Rows of an image source (the cache, or streamed files) with their targets, read a batch at a time:
    one fancy-index read of the cache per batch instead of one read per image."""

    def __init__(self, source: ImageCache | ImageFiles, rows: np.ndarray, targets: np.ndarray | None = None):
        self.source, self.rows, self.targets = source, np.asarray(rows), targets

    def __len__(self) -> int:
        return len(self.rows)

    def __getitems__(self, items: list[int]) -> Batch:
        items = np.asarray(items, dtype=np.int64)
        rows = self.rows[items]
        batch = {"image": torch.from_numpy(self.source.read(rows)), "row": torch.from_numpy(rows)}
        if self.targets is not None:
            batch["target"] = torch.from_numpy(np.asarray(self.targets[items]))
        return batch

    def __getitem__(self, item: int) -> Batch:
        return self.__getitems__([item])


def _whole_batch(batch: Batch) -> Batch:
    return batch


def shard_rows(order: torch.Tensor, shard: tuple[int, int], even: bool) -> torch.Tensor:
    """This rank's share of `order`: every world-th row from the rank's. `even` trims the tail first so
    every rank gets as many (DDP's training steps must match across ranks)."""
    rank, world = shard
    if world == 1:
        return order
    if even:
        order = order[: len(order) - len(order) % world]
    return order[rank::world]


class ShardSampler(torch.utils.data.Sampler):
    """Indices 0..n-1 for one rank: a fresh permutation each epoch (the same on every rank, from `seed` and
    the epoch), then this rank's share of it."""

    def __init__(self, n: int, shard: tuple[int, int], shuffle: bool, seed: int, even: bool):
        self.n, self.shard, self.shuffle, self.seed, self.even, self.epoch = n, shard, shuffle, seed, even, 0

    def __iter__(self):
        self.epoch += 1
        order = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed * 1000 + self.epoch)) \
            if self.shuffle else torch.arange(self.n)
        return iter(shard_rows(order, self.shard, self.even).tolist())

    def __len__(self) -> int:
        rank, world = self.shard
        n = self.n - self.n % world if self.even else self.n
        return len(range(rank, n, world))


class EpochBatches(torch.utils.data.Sampler):
    """`sampler`'s batches, epoch after epoch without end (each epoch a fresh pass over `sampler`: a new
    permutation), for a loader whose iterator is held across epochs: its workers are handed the next epoch's
    indices while this one ends, so they prefetch through the boundary instead of draining and waiting for
    `iter()`. Its length is one epoch's batches."""

    def __init__(self, sampler: torch.utils.data.Sampler, batch_size: int, drop_last: bool):
        self.batches = torch.utils.data.BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        while len(self.batches):  # an empty epoch would loop here for ever
            yield from self.batches


def host_loader(
    dataset: Dataset, batch_size: int, *, shuffle: bool, workers: int, pin: bool, seed: int = 0, drop_last: bool = False,
    shard: tuple[int, int] = (0, 1), repeat: bool = False,
) -> DataLoader:
    """`repeat`: the loader's batches never end (EpochBatches), for training loaders that DeviceLoader reads
    an epoch at a time from one held iterator."""
    generator = torch.Generator().manual_seed(seed)
    if shard[1] > 1:
        sampler = ShardSampler(len(dataset), shard, shuffle, seed, even=drop_last)
    elif shuffle:
        sampler = torch.utils.data.RandomSampler(dataset, generator=generator)
    else:
        sampler = torch.utils.data.SequentialSampler(dataset)
    n = len(sampler)
    # A ragged last batch is dropped on big data (noisy BatchNorm statistics) and when it would hold a single
    # row (BatchNorm fails on it); on small data it is kept, as it is a real share of the data.
    drop = drop_last and (n % batch_size == 1 or n >= 8 * batch_size)
    batches = EpochBatches(sampler, batch_size, drop) if repeat else torch.utils.data.BatchSampler(sampler, batch_size, drop)
    return DataLoader(
        dataset,
        batch_sampler=batches,
        num_workers=workers,
        pin_memory=pin,
        persistent_workers=workers > 0,
        prefetch_factor=4 if workers > 0 else None,
        collate_fn=_whole_batch,
        generator=generator,
    )


class DeviceLoader:
    """Wraps a host loader: copies each batch to `device` (non-blocking, on a side stream on CUDA, one batch
    ahead, unless `prefetch` is off) and applies `transform` there, so the training step only ever sees ready
    device batches."""

    def __init__(self, loader: DataLoader, device: torch.device, transform: Callable[[Batch], Batch] | None = None,
                 prefetch: bool = True):
        self.loader, self.device, self.transform = loader, device, transform or _whole_batch
        self.prefetch = prefetch
        self.held: Iterator[Batch] | None = None  # a repeating loader's iterator, kept from epoch to epoch
        self.whole = False  # whether the held iterator stands at an epoch's start

    def __len__(self) -> int:
        return len(self.loader)

    @property
    def batch_size(self) -> int:
        return self.loader.batch_sampler.batch_size  # the loader's own is None: its batches come from a batch sampler

    def _to_device(self, batch: Batch) -> Batch:
        return self.transform({k: v.to(self.device, non_blocking=True) for k, v in batch.items()})

    def __iter__(self) -> Iterator[Batch]:
        if self.device.type != "cuda" or not self.prefetch:
            for batch in self.host_batches():
                yield self._to_device(batch)
            return
        yield from one_ahead(self.host_batches(), self._to_device, self.device)

    def host_batches(self) -> Iterator[Batch]:
        """One epoch of the host loader's batches. A repeating loader (host_loader's `repeat`) is read from one
        iterator held across epochs, so that its workers prefetch the next epoch while this one ends and the
        model validates (they drained at every boundary and refilled only at `iter()`, while the GPU waited);
        an epoch left unfinished (a time budget, a fall-back to fp32) is dropped: the next starts afresh."""
        if not isinstance(self.loader.batch_sampler, EpochBatches):
            yield from self.loader
            return
        if self.held is None or not self.whole:
            self.held = iter(self.loader)  # persistent workers are told to start over, not forked again
        self.whole = False
        for _ in range(len(self.loader)):
            yield next(self.held)
        self.whole = True


def one_ahead(items: Iterable, make: Callable[[Any], Batch], device: torch.device) -> Iterator[Batch]:
    """`make(item)` for each item on a CUDA side stream, one batch ahead of the one handed out, so its copies
    overlap the step on the previous batch. A handed-out batch is recorded on the current stream, so the
    caching allocator does not reuse its memory while that stream still works on it."""
    stream = torch.cuda.Stream(device)
    ready = None
    for item in items:
        with torch.cuda.stream(stream):
            upcoming = make(item)
        if ready is not None:
            yield ready
        torch.cuda.current_stream(device).wait_stream(stream)
        for v in upcoming.values():
            if v.device.type == "cuda":  # a sequence batch's lengths stay on the host
                v.record_stream(torch.cuda.current_stream(device))
        ready = upcoming
    if ready is not None:
        yield ready
