"""Sentences with one word missing (billion-word-imputation): the training sentences sampled from a file of one a
line, a word removed from each as MLE-bench's prepare.py removes the test's, and their tokens for the imputation
template's model (kit.models.gaps).

- `sample_lines`: `rows` sentences drawn at random from a text file of one sentence a line (30 million, 4 GB in
  train_v2.txt), read as a stream, from its zip where it is zipped (nothing unpacked): each line is kept with the
  chance that gives about `rows`, from the file's size and its first lines' length.
- `draw`: the removed word's place, 1 to n - 2 of n words (never the first or last, as prepare.py).
- `GapCoder`: a batch of damaged sentences as token ids with, for each gap between two words, the token that opens
  the word after it (the model reads a gap there: that token's state and its predecessor's); the same sentence with
  the mask token in a gap (what the masked-LM head fills); and the vocabulary's whole words, the tokens the head may
  insert (a word of one token in the middle of a sentence), with each word's id.
"""
from __future__ import annotations

import bisect
import io
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from kit.data import archives, text
from kit.data.loaders import shard_rows
from kit.errors import KitError
from kit.runtime import hardware

IGNORE = -100  # a label the loss leaves out (transformers' convention)
PROBE = 1 << 20  # bytes of the file's start read to know its lines' length
MIN_WORDS = 3  # a sentence of fewer has no inner word to remove (prepare.py keeps such in train)


@contextmanager
def open_lines(data_dir: Path, name: str, what: str) -> Iterator[tuple[io.TextIOBase, int, str]]:
    """(the text stream, its size in bytes, what it was read from) of [data] `name`: the file itself, or its one
    member in `name`.zip, read as it is unzipped."""
    found = archives.locate(data_dir, name)
    if found is None or found.is_dir():
        present = ", ".join(sorted(p.name for p in data_dir.iterdir())[:12]) if data_dir.is_dir() else "nothing"
        raise KitError(f"{what} '{name}' not found in {data_dir} (nor {name}.zip); it holds: {present}; check [data] "
                       "in the config")
    if found.suffix.lower() != ".zip":
        if archives.archive_suffix(found.name):
            raise KitError(f"{found.name}: the {what} is read as a stream from a zip or the file itself; attach it so")
        with open(found, encoding="utf-8", errors="replace", newline="\n") as f:
            yield f, found.stat().st_size, found.name
        return
    with zipfile.ZipFile(found) as z:
        inner = Path(name).name
        infos = [i for i in z.infolist() if not i.is_dir() and not archives.junk(i.filename)]
        named = [i for i in infos if Path(i.filename).name == inner] or (infos if len(infos) == 1 else [])
        if not named:
            raise KitError(f"{found.name}: holds no single {inner} (it holds {len(infos)} files); fix [data] or attach it "
                           "unzipped")
        with z.open(named[0]) as raw:
            yield io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n"), named[0].file_size, found.name


def sample_lines(data_dir: Path, name: str, rows: int, seed: int, log: Callable[[str], None] = print,
                 what: str = "training sentences") -> list[str]:
    """About `rows` sentences of at least MIN_WORDS words drawn at random from the file (every one where `rows` is 0
    or the file holds fewer), in the file's order, stripped."""
    rng = np.random.default_rng(seed)
    began = time.perf_counter()
    kept: list[str] = []
    read = 0
    with open_lines(data_dir, name, what) as (stream, size, source):
        head = stream.readlines(PROBE)
        mean = max(sum(len(line.encode("utf-8", "replace")) for line in head) / max(len(head), 1), 1.0)
        lines = max(size / mean, 1.0)
        usable = lines * max(sum(len(line.split()) >= MIN_WORDS for line in head) / max(len(head), 1), 1e-3)
        # a tenth more than the share asked: the quota fills before the file ends, seldom short of it
        rate = 1.0 if rows == 0 or rows >= usable else min(1.0, 1.1 * rows / usable)
        chunk = head
        while chunk:
            read += len(chunk)
            for line, draw in zip(chunk, rng.random(len(chunk))):
                if draw < rate and len(line.split()) >= MIN_WORDS:
                    kept.append(line.strip())
            if rows and len(kept) >= rows:
                break
            chunk = stream.readlines(PROBE)
    kept = kept[:rows] if rows else kept
    if not kept:
        raise KitError(f"{source}: no sentence of {MIN_WORDS} words or more, one a line; check [data] train")
    log(f"sentences      {len(kept)} training sentences of {read} lines read from {source} (~{lines:,.0f} in all, "
        f"each kept with chance {rate:.4f}) in {time.perf_counter() - began:.1f} s")
    return kept


def draw(words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The place of the word removed from each sentence of `words` words: 1 to n - 2 (as prepare.py's randint)."""
    return rng.integers(1, np.maximum(words - 1, 2)).astype(np.int64)


def removed(words: list[str], at: int) -> list[str]:
    """The sentence's words without its word `at`."""
    return words[:at] + words[at + 1 :]


class GapCoder:
    """A tokenizer's view of sentences and their gaps (a fast tokenizer: the gaps are found by its offsets)."""

    def __init__(self, tokenizer, max_length: int):
        if not getattr(tokenizer, "is_fast", False) or tokenizer.mask_token_id is None:
            raise KitError("the imputation template needs the model folder's fast tokenizer (tokenizer.json) with a mask "
                           "token: attach a masked language model's folder (BERT, RoBERTa, DeBERTa)")
        self.tokenizer, self.max_length = tokenizer, max_length
        self.mask_id, self.pad_id = tokenizer.mask_token_id, tokenizer.pad_token_id or 0
        self.prefix = tokenizer("a", add_special_tokens=False)["input_ids"]
        self.words, self.candidates = self._vocabulary()

    def _vocabulary(self) -> tuple[list[str], np.ndarray]:
        """Each token's text, and which tokens are words of their own (one token in the middle of a sentence)."""
        tok = self.tokenizer
        size = len(tok)
        texts = [t.strip() for t in tok.batch_decode([[i] for i in range(size)])]
        special = set(tok.all_special_ids)
        ids = self.word_ids(texts)
        candidates = np.array([ids[i] == i and i not in special and texts[i] != "" for i in range(size)])
        return texts, candidates

    def word_ids(self, words: list[str]) -> np.ndarray:
        """(n,) each word's token id where it is one token of the vocabulary in the middle of a sentence, else IGNORE."""
        out = np.full(len(words), IGNORE, np.int64)
        if not words:
            return out
        n = len(self.prefix)
        encoded = self.tokenizer([f"a {w}" for w in words], add_special_tokens=False)["input_ids"]
        for i, (w, ids) in enumerate(zip(words, encoded)):
            if w and " " not in w and len(ids) == n + 1 and ids[:n] == self.prefix:
                out[i] = ids[n]
        return out

    def _encode(self, texts: list[str]) -> dict:
        return self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True,
                              return_offsets_mapping=True, return_tensors="np")

    def gaps(self, sentences: list[list[str]]) -> dict[str, torch.Tensor]:
        """{"input_ids", "attention_mask": (B, L), "gaps": (B, G) the token opening word j + 1 for the gap j before
        it (j = 0 .. G - 1: the gap after word j), 0 where none, "gap_ok": (B, G) whether the gap was read (not cut
        off by max_length)}, G the most gaps of a sentence of the batch."""
        enc = self._encode([" ".join(w) for w in sentences])
        count = max(max((len(w) - 1 for w in sentences), default=1), 1)
        gaps = np.zeros((len(sentences), count), np.int64)
        for b, words in enumerate(sentences):
            starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]]).tolist()
            seen = set()
            for t, (lo, hi) in enumerate(enc["offset_mapping"][b].tolist()):
                if hi <= lo:
                    continue  # a special token, padding
                j = bisect.bisect_right(starts, hi - 1) - 1  # the word holding the token's last character
                if j >= 1 and j not in seen:
                    seen.add(j)
                    gaps[b, j - 1] = t
        return {"input_ids": torch.from_numpy(enc["input_ids"].astype(np.int64)),
                "attention_mask": torch.from_numpy(enc["attention_mask"].astype(np.int64)),
                "gaps": torch.from_numpy(gaps), "gap_ok": torch.from_numpy(gaps > 0)}

    def masked(self, sentences: list[list[str]], at: np.ndarray) -> dict[str, torch.Tensor]:
        """{"mask_ids", "mask_attention": (B, L') each sentence with the mask token before its word `at` (in the gap
        after word at - 1), "mask_at": (B,) the mask's token, 0 where max_length cut it off}."""
        mask = self.tokenizer.mask_token
        enc = self._encode([" ".join(w[:a] + [mask] + w[a:]) for w, a in zip(sentences, np.asarray(at).tolist())])
        ids = enc["input_ids"].astype(np.int64)
        hit = ids == self.mask_id
        where = np.where(hit.any(1), hit.argmax(1), 0)
        return {"mask_ids": torch.from_numpy(ids), "mask_attention": torch.from_numpy(enc["attention_mask"].astype(np.int64)),
                "mask_at": torch.from_numpy(where.astype(np.int64))}


class GapBatches(text.DeviceBatches):
    """Batches of sentences (their words) with a word removed: the damaged sentence's ids and gaps, the sentence with
    the mask in the true gap, "gap_target" (the true gap's column, IGNORE where max_length cut it off), "word" (the
    removed word's id, IGNORE where it is not one token), "row" (the sentence's number) and "index" (its position in
    `rows`). Training draws each epoch's removed words afresh (`draw`); validation removes `gone`'s; the test's
    sentences (`gone` None and no training) are already damaged: their ids and gaps alone. Batches hold sentences
    of about one length (kit.data.text.bucketed, by words), tokenized as they are made."""

    def __init__(self, coder: GapCoder, sentences: list[list[str]], rows: np.ndarray, gone: np.ndarray | None,
                 batch_size: int, shuffle: bool, device: torch.device, seed: int = 0, shard: tuple[int, int] = (0, 1)):
        self.coder, self.sentences, self.rows, self.gone = coder, sentences, np.asarray(rows), gone
        self.batch_size, self.shuffle, self.device, self.shard = batch_size, shuffle, hardware.indexed(device), shard
        self.generator = np.random.default_rng(seed)
        self.lengths = np.array([len(w) for w in sentences], np.int64)
        self.position = {int(r): i for i, r in enumerate(self.rows)}

    def plan(self) -> list[np.ndarray]:
        rank, world = self.shard
        batches = text.bucketed(self.lengths, self.rows, self.batch_size, self.generator if self.shuffle else None,
                                group=world, full_only=world > 1 and self.shuffle)
        if world > 1:
            index = shard_rows(torch.arange(len(batches)), self.shard, even=self.shuffle).tolist()
            batches = [batches[i] for i in index]
        return batches

    def fields(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        words = [self.sentences[r] for r in rows]
        base = {"row": torch.from_numpy(np.asarray(rows, np.int64)),
                "index": torch.as_tensor([self.position[int(r)] for r in rows], dtype=torch.int64)}
        if self.gone is None and not self.shuffle:  # the test's sentences, damaged as they come
            return {**self.coder.gaps(words), **base}
        at = draw(self.lengths[rows], self.generator) if self.shuffle else self.gone[rows]
        damaged = [removed(w, int(a)) for w, a in zip(words, at)]
        batch = {**self.coder.gaps(damaged), **self.coder.masked(damaged, at), **base}
        column = torch.from_numpy(at - 1)
        read = batch["gap_ok"].gather(1, column.clamp(max=batch["gap_ok"].shape[1] - 1).unsqueeze(1)).squeeze(1)
        batch["gap_target"] = torch.where(read, column, torch.full_like(column, IGNORE))
        word = self.coder.word_ids([w[int(a)] for w, a in zip(words, at)])
        batch["word"] = torch.from_numpy(np.where(batch["mask_at"].numpy() > 0, word, IGNORE))
        return batch
