"""The imputation template's objective, its decision and its kind of target (billion-word-imputation: restore each
sentence's one missing word).

- The objective: the gap head's cross-entropy over a sentence's gaps (the missing word's gap the class) plus the
  masked-LM head's cross-entropy of the missing word at a mask put in its true gap (a word of more than one token
  is left out of this half: only a word of one token can be inserted). In validation (the model in eval mode) it
  restores too, as the test is restored (`guess`, then `restore`), and each validation row holds the Levenshtein
  distance of the restored sentence and of the sentence left as it is from the true one: the epoch's score is
  billion-word-imputation's metric on the validation rows, and the time plan measures prediction so.
- `guess`: the likeliest gap (its chance p), a mask put there, the likeliest whole word there (its chance q).
- `gain`: what inserting the word saves in expectation. Leaving the sentence as it is costs the missing word and a
  space, about L + 1 characters (L the training's mean length of an inner word); inserting word v costs, at the right
  gap, nothing if v is right and about max(|v|, L) substitutions if not, and at a wrong gap both words: L + 1 + |v| +
  1. The word goes in only where p (1 - q) max(|v|, L) + (1 - p)(L + |v| + 2) < L + 1: a wrong word at the right gap
  still saves, at a wrong gap it costs.
- The "sentence" kind: the restored sentence a row, which the pipeline's `cut` writes; registered here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from kit.data.batch import Batch
from kit.data.gaps import IGNORE, GapCoder, removed
from kit.errors import KitError
from kit.train.evaluate import unwrap
from kit.train.kinds import Kind, Target, named, register
from kit.train.levenshtein import distance

GUESS = 4  # a guess's numbers: the gap's word (the word the missing one came before), p, the word's id, q


def gain(p: np.ndarray, q: np.ndarray, length: np.ndarray, mean: float) -> np.ndarray:
    """The characters inserting a word of `length` characters at a gap of chance `p` saves in expectation, where
    the word is right with chance `q` and a missing word has `mean` characters (positive: insert it)."""
    p, q, length = (np.asarray(x, np.float64) for x in (p, q, length))
    keep = mean + 1.0
    insert = p * (1.0 - q) * np.maximum(length, mean) + (1.0 - p) * (mean + 1.0 + length + 1.0)
    return keep - insert


def mean_word(sentences: list[list[str]]) -> float:
    """The mean length in characters of the sentences' inner words (those a word can be removed from)."""
    inner = [len(w) for words in sentences for w in words[1:-1]]
    return float(np.mean(inner)) if inner else 4.0


def safe_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy over the rows not IGNOREd; 0 (with a gradient) where every row is."""
    losses = F.cross_entropy(logits.float(), target, ignore_index=IGNORE, reduction="none")
    return losses.sum() / target.ne(IGNORE).sum().clamp(min=1)


@torch.no_grad()
def guess(net: nn.Module, coder: GapCoder, damaged: list[list[str]], batch: Batch, candidates: torch.Tensor) -> torch.Tensor:
    """(B, GUESS) each damaged sentence's likeliest gap and whole word there, with their chances."""
    net = unwrap(net)
    logits = net.gap_logits(batch["input_ids"], batch["attention_mask"], batch["gaps"], batch["gap_ok"])
    p, column = logits.softmax(-1).max(-1)
    at = (column + 1).cpu().numpy()
    masked = {k: v.to(logits.device) for k, v in coder.masked(damaged, at).items()}
    words = net.word_logits(masked["mask_ids"], masked["mask_attention"], masked["mask_at"])
    words = words.masked_fill(~candidates[: words.shape[-1]], float("-inf"))
    q, word = words.softmax(-1).max(-1)
    q = torch.where(masked["mask_at"] > 0, q, torch.zeros_like(q))  # a mask cut off by max_length: no word
    return torch.stack([column.float() + 1, p, word.float(), q], -1)


def restore(damaged: list[list[str]], guesses: np.ndarray, words: list[str], mean: float) -> list[str]:
    """Each damaged sentence with its guessed word inserted where that is worth it (`gain`), else as it is."""
    guesses = np.asarray(guesses, np.float64).reshape(len(damaged), GUESS)
    lengths = np.array([len(words[int(i)]) for i in guesses[:, 2]])
    insert = gain(guesses[:, 1], guesses[:, 3], lengths, mean) > 0
    out = []
    for w, (at, _, word, _), put in zip(damaged, guesses, insert):
        at = int(at)
        out.append(" ".join(w[:at] + [words[int(word)]] + w[at:] if put and 1 <= at < len(w) else w))
    return out


class GapObjective:
    """A batch of damaged sentences (kit.data.gaps.GapBatches) -> the gap's and the word's cross-entropy; validation
    restores each row and scores it against its true sentence."""

    loss_metric = None  # the loss is not the distance

    def __init__(self, coder: GapCoder, sentences: list[list[str]], gone: np.ndarray, mean: float):
        self.coder, self.sentences, self.gone, self.mean = coder, sentences, gone, mean
        self.candidates: torch.Tensor | None = None

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        gap, word = model(batch["input_ids"], batch["attention_mask"], batch["gaps"], batch["gap_ok"], batch["mask_ids"],
                          batch["mask_attention"], batch["mask_at"])
        loss = safe_cross_entropy(gap, batch["gap_target"]) + safe_cross_entropy(word, batch["word"])
        if model.training:
            return {"loss": loss, "output": loss.detach()}
        net = getattr(model, "module", model)
        if self.candidates is None or self.candidates.device != gap.device:
            self.candidates = torch.from_numpy(self.coder.candidates).to(gap.device)
        return {"loss": loss, "output": guess(net, self.coder, self.damaged(batch), batch, self.candidates)}

    def damaged(self, batch: Batch) -> list[list[str]]:
        return [removed(self.sentences[r], int(self.gone[r])) for r in batch["row"].cpu().numpy()]

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """(B, 2) [the restored sentence's distance, the damaged one's] from the true sentence, and (B,) the rows."""
        rows = batch["row"].cpu().numpy()
        damaged = [removed(self.sentences[r], int(self.gone[r])) for r in rows]
        restored = restore(damaged, output.float().cpu().numpy(), self.coder.words, self.mean)
        truth = [" ".join(self.sentences[r]) for r in rows]
        pairs = [(distance(r, t), distance(" ".join(d), t)) for r, d, t in zip(restored, damaged, truth)]
        return {"pred": torch.tensor(pairs, dtype=torch.float64).reshape(-1, 2),
                "target": torch.from_numpy(rows.astype(np.int64))}


def sentence_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The restored sentences (cut's (rows, 1) of strings) as the one column."""
    return {target.columns[0]: np.asarray(pred, dtype=object).reshape(len(pred), -1)[:, 0]}


def check_submission(cells: pd.Series, sample: pd.Series, folder=None) -> None:
    """Every cell a text with a word in it (an empty one the grader reads as NaN, and its distance fails)."""
    wrong = [i for i, v in enumerate(cells) if not isinstance(v, str) or not v.strip()]
    if wrong:
        raise KitError(f"submission row {wrong[0] + 2} holds {cells.iloc[wrong[0]]!r}, not a sentence ({len(wrong)} such "
                       "rows)")


def as_it_is(t: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """No constant a row: the prior is each test sentence as it is, which `cut` writes where no fold predicted."""
    return np.zeros(1)


SENTENCE = register(Kind("sentence", sentence_column, "kit.train.imputation:check_submission", one_output=True,
                         describe=lambda t: "a sentence restored for each row", prior=as_it_is,
                         prior_name=named("each sentence as it is"),
                         prior_text=lambda t, name, known: "each test sentence as it is"))
