"""Text for the text template: tokenized once into a cache, then batched by length with dynamic padding.

Tokenizing a few thousand essays with a fast tokenizer takes seconds to a minute; every fold and every run
with the same tokenizer and `max_length` reads the ids back from the cache instead (a key of the tokenizer's
files, `max_length` and the texts). Batches are padded to their own longest text, not to `max_length`: the
rows of each training epoch are shuffled, cut into chunks of CHUNK_BATCHES batches, and sorted by length
inside each chunk, so a batch holds texts of about one length (little padding) while the order still
changes from epoch to epoch. Prediction sorts all rows by length.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kit import files
from kit.data.loaders import shard_rows
from kit.runtime import hardware, paths

CHUNK_BATCHES = 32  # batches per length-sorted chunk: more pads less, fewer keeps the epochs' orders apart
PAD_MULTIPLE = 8  # padded lengths are a multiple of this: tensor cores take fp16 matrices in multiples of 8
# a tokenizer's vocabulary is in one of these (fast, WordPiece, BPE, SentencePiece); the others complete it
TOKENIZER_VOCABS = ("tokenizer.json", "vocab.txt", "vocab.json", "spm.model", "spiece.model", "sentencepiece.model",
                    "sentencepiece.bpe.model", "tokenizer.model")
TOKENIZER_FILES = (*TOKENIZER_VOCABS, "tokenizer_config.json", "special_tokens_map.json", "merges.txt", "added_tokens.json")


@dataclass
class Tokens:
    """Every text's token ids end to end (`ids`), text i at ids[offsets[i]:offsets[i + 1]]."""

    ids: np.ndarray  # (total,) int32
    offsets: np.ndarray  # (texts + 1,) int64

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def padded(self, rows: np.ndarray, pad_id: int, multiple: int = PAD_MULTIPLE, cap: int = 0) -> np.ndarray:
        """(len(rows), L) int64 ids of `rows`, right-padded with `pad_id` to their longest, rounded up to
        `multiple` but not past `cap` (max_length: the model may have no position beyond it)."""
        lengths = self.lengths[rows]
        out = np.full((len(rows), padded_width(int(lengths.max(initial=1)), multiple, cap)), pad_id, np.int64)
        for j, (row, n) in enumerate(zip(rows, lengths)):
            out[j, :n] = self.ids[self.offsets[row] : self.offsets[row] + n]
        return out


def padded_width(longest: int, multiple: int = PAD_MULTIPLE, cap: int = 0) -> int:
    """A batch's width: its longest text rounded up to `multiple`, but not past `cap` unless the text is."""
    longest = max(longest, 1)
    width = -(-longest // multiple) * multiple
    return max(min(width, cap), longest) if cap else width


def join_columns(table: pd.DataFrame, columns: Sequence[str], separator: str) -> list[str]:
    """One text per row: the columns' texts joined by the tokenizer's separator (" [SEP] ", " </s> ")."""
    parts = [table[c].fillna("").astype(str) for c in columns]
    joined = parts[0]
    for part in parts[1:]:
        joined = joined + separator + part
    return joined.tolist()


def tokenizer_key(folder: Path) -> str:
    """What identifies a tokenizer: the bytes of its files in the model folder."""
    h = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = folder / name
        if path.is_file():
            h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def tokenize(tokenizer, texts: list[str], max_length: int, key: str, cache_dir: Path | None = None,
             log=lambda message: None, what: str = "texts") -> Tokens:
    """The texts' token ids (special tokens added, truncated to `max_length`), from the cache when this
    tokenizer (`key`: tokenizer_key) has tokenized these texts at this `max_length` before."""
    h = hashlib.sha256(f"{key}|{max_length}|{len(texts)}".encode())
    for text in texts:
        h.update(text.encode("utf-8", "surrogatepass") + b"\0")
    path = (cache_dir or paths.scratch_dir()) / f"tokens-{h.hexdigest()[:20]}.npz"
    if path.is_file():
        with np.load(path) as saved:
            tokens = Tokens(saved["ids"], saved["offsets"])
        log(f"tokenize {what}: {len(tokens)} texts from the cache {path}")
        return tokens
    ids, offsets = [], [0]
    for start in range(0, len(texts), 1024):  # a fast tokenizer works a batch of texts on all cores
        for row in tokenizer(texts[start : start + 1024], truncation=True, max_length=max_length)["input_ids"]:
            ids.append(np.asarray(row, np.int32))
            offsets.append(offsets[-1] + len(row))
    tokens = Tokens(np.concatenate(ids) if ids else np.zeros(0, np.int32), np.asarray(offsets, np.int64))
    path.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez(f, ids=tokens.ids, offsets=tokens.offsets)
    cut = int((tokens.lengths >= max_length).sum())
    median = int(np.median(tokens.lengths)) if len(tokens) else 0
    log(f"tokenize {what}: {len(tokens)} texts, {median} tokens at the median, "
        f"{int(tokens.lengths.max(initial=0))} at most; {cut} cut at max_length {max_length}; cached in {path}")
    return tokens


def bucketed(lengths: np.ndarray, rows: np.ndarray, batch_size: int, generator: np.random.Generator | None,
             chunk_batches: int = CHUNK_BATCHES, group: int = 1, full_only: bool = False) -> list[np.ndarray]:
    """`rows` in batches of texts of about one length. Training (`generator`): shuffled, sorted by length
    within chunks of `chunk_batches` batches, and the batches shuffled in groups of `group` neighbours of one
    sorted chunk (under DDP, `group` is the number of ranks and rank r takes the r-th batch of each group: the
    ranks' batches of a step are of about one length, so neither waits for the other's longer one);
    `full_only` leaves out a batch of fewer than `batch_size` rows. Prediction (None): sorted by length,
    longest first (the first batch shows at once whether the longest fits)."""
    if generator is None:
        order = rows[np.argsort(-lengths[rows], kind="stable")]
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    order = rows[generator.permutation(len(rows))]
    chunk = batch_size * chunk_batches
    groups, spare = [], []
    for start in range(0, len(order), chunk):
        part = order[start : start + chunk]
        part = part[np.argsort(-lengths[part], kind="stable")]
        batches = [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
        batches = [b for b in batches if len(b) == batch_size] if full_only else batches
        whole = len(batches) - len(batches) % group
        groups += [batches[i : i + group] for i in range(0, whole, group)]
        spare += batches[whole:]
    spare.sort(key=lambda b: -int(lengths[b].max()))  # the chunks' leftovers, grouped by length too
    groups += [spare[i : i + group] for i in range(0, len(spare), group)]
    return [b for i in generator.permutation(len(groups)) for b in groups[i]]


def padding_share(lengths: np.ndarray, batches: list[np.ndarray], multiple: int = PAD_MULTIPLE) -> float:
    """The share of the batches' token slots that hold padding."""
    real = sum(int(lengths[b].sum()) for b in batches)
    slots = sum(len(b) * padded_width(int(lengths[b].max()), multiple) for b in batches)
    return 1.0 - real / max(slots, 1)


class DeviceBatches:
    """The epoch of a batch plan on the device: len() counts this rank's batches of `plan()`, iteration makes each
    one's host tensors (`fields`), page-locked on CUDA, and copies them without blocking. A subclass sets rows,
    batch_size, shuffle, device and shard, and implements plan() and fields()."""

    def __len__(self) -> int:
        n = -(-len(self.rows) // self.batch_size)
        world = self.shard[1]
        if world > 1 and self.shuffle:
            return (len(self.rows) // self.batch_size) // world  # whole batches only (plan)
        return n if world == 1 else len(range(self.shard[0], n, world))

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        pin = self.device.type == "cuda"
        for rows in self.plan():
            batch = self.fields(rows)
            if pin:
                batch = {k: v.pin_memory() for k, v in batch.items()}
            yield {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}


class TextBatches(DeviceBatches):
    """Batches {"input_ids": (B, L) int64, "target": (B,) or (B, K), "index": (B,) positions in `rows`} on
    `device`, padded to each batch's longest text (`bucket`; else to `max_length`, the plain way, for
    `make bench`). Ids are built in page-locked memory and copied without blocking the host."""

    def __init__(self, tokens: Tokens, rows: np.ndarray, targets: np.ndarray | None, batch_size: int, shuffle: bool,
                 device: torch.device, pad_id: int, seed: int = 0, shard: tuple[int, int] = (0, 1), bucket: bool = True,
                 max_length: int = 0):
        self.tokens, self.rows, self.targets, self.batch_size = tokens, np.asarray(rows), targets, batch_size
        self.shuffle, self.device, self.pad_id, self.shard = shuffle, hardware.indexed(device), pad_id, shard
        if not bucket and max_length < 1:
            raise ValueError("padding to max_length (bucket=False) needs max_length")
        self.bucket, self.max_length = bucket, max_length
        self.generator = np.random.default_rng(seed)
        self.position = {int(r): i for i, r in enumerate(self.rows)}

    def plan(self) -> list[np.ndarray]:
        """This epoch's batches of rows (this rank's share; under DDP every rank gets as many)."""
        lengths = self.tokens.lengths
        rank, world = self.shard
        # DDP: every rank's step must hold as many rows (with accumulation, as many micro-batches), so the
        # epoch's one short batch is left out
        full_only = world > 1 and self.shuffle
        if self.bucket:
            batches = bucketed(lengths, self.rows, self.batch_size, self.generator if self.shuffle else None,
                               group=world, full_only=full_only)
        else:
            order = self.rows[self.generator.permutation(len(self.rows))] if self.shuffle else self.rows
            batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
            batches = [b for b in batches if len(b) == self.batch_size] if full_only else batches
        if world > 1:  # whole batches per rank: a rank's batch keeps its length bucket
            index = shard_rows(torch.arange(len(batches)), self.shard, even=self.shuffle).tolist()
            batches = [batches[i] for i in index]
        return batches

    def fields(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        """A batch of `rows` on the host: its ids, each row's position in `rows`, its targets."""
        ids = self.tokens.padded(rows, self.pad_id, cap=self.max_length) if self.bucket else self._full(rows)
        batch = {"input_ids": torch.from_numpy(ids),
                 "index": torch.as_tensor([self.position[int(r)] for r in rows], dtype=torch.int64)}
        if self.targets is not None:
            batch["target"] = torch.from_numpy(self.targets[rows])
        return batch

    def _full(self, rows: np.ndarray) -> np.ndarray:
        ids = self.tokens.padded(rows, self.pad_id, multiple=1)
        out = np.full((len(rows), self.max_length), self.pad_id, np.int64)
        out[:, : ids.shape[1]] = ids[:, : self.max_length]
        return out
