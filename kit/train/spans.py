"""Span extraction's objective, its metric and its kind of target.

- The objective: the mean cross-entropy of the start and the end logits over each window's tokens; its validation
  rows, one a window, hold the window's best valid span's score, that span's Jaccard with the answer and the whole
  context's (the trivial submission's), and the window's example: the metric keeps each example's best-scored
  window, as prediction keeps it over the windows of a context (kit.data.spans.best_spans).
- `jaccard`: tweet-sentiment-extraction's and chaii's word Jaccard, as MLE-bench's grade.py computes it.
- The "span" kind: a text a row, which the pipeline's `cut` decodes from the folds' mean logits; registered here
  (kit.train.kinds.register), and named by the spans template's record for a plan made without the pipeline.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from kit.data.batch import Batch
from kit.data.spans import Windows, span_texts, window_best
from kit.errors import KitError
from kit.train.kinds import Kind, Target, named, register


def jaccard(a: str, b: str) -> float:
    """The word Jaccard of two texts, lower-cased and split on whitespace (MLE-bench's grade.py). Two texts without
    a word score 0, as chaii's grader (scikit-learn's jaccard_score) scores them; tweet-sentiment's divides by zero
    on them, which kit's span cells, each holding a word, never meet."""
    x, y = set(a.lower().split()), set(b.lower().split())
    union = len(x | y)
    return len(x & y) / union if union else 0.0


def mean_jaccard(preds: list[str], answers: list[str]) -> float:
    return float(np.mean([jaccard(p, a) for p, a in zip(preds, answers)])) if preds else float("nan")


def score(metric: str, pred: np.ndarray, target: np.ndarray) -> float:
    """Validation rows of windows -> the mean over examples of the Jaccard of each example's best-scored window's
    span. `pred`: (windows, 2) the span's score and its Jaccard with the answer; `target`: (windows,) the example."""
    pred, target = np.asarray(pred, np.float64), np.asarray(target)
    if not len(pred):
        return float("nan")
    order = np.lexsort((-pred[:, 0], target))  # by example, its best-scored window first
    first = np.r_[True, target[order][1:] != target[order][:-1]]
    return float(pred[order[first], 1].mean())


class SpanObjective:
    """Start and end logits (B, L, 2) against each window's first and last answer token (B, 2)."""

    loss_metric = None  # the loss is not the Jaccard

    def __init__(self, w: Windows | None, max_answer: int):
        self.windows, self.max_answer = w, max_answer

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        logits = model(batch["input_ids"]).float()  # (B, L, 2)
        y = batch["target"]  # (B, 2)
        loss = (F.cross_entropy(logits[..., 0], y[:, 0]) + F.cross_entropy(logits[..., 1], y[:, 1])) / 2
        return {"loss": loss, "output": logits}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output.float()

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """(B, 3) [score, Jaccard of its best span, Jaccard of the whole context] and (B,) examples, a window a row."""
        w, logits = self.windows, output.float().cpu().numpy()
        rows, examples = [], []
        for i, window in enumerate(batch["window"].cpu().numpy()):
            n, example = int(w.tokens.lengths[window]), int(w.example[window])
            best, a, b = window_best(logits[i, :n, 0], logits[i, :n, 1], w.span(window), self.max_answer)
            context, answer = w.contexts[example], w.answers[example]
            found = span_texts([context], np.array([[a, b]]))[0]
            rows.append((best if np.isfinite(best) else -1e9, jaccard(found, answer), jaccard(context, answer)))
            examples.append(example)
        return {"pred": torch.tensor(rows, dtype=torch.float64).reshape(-1, 3),
                "target": torch.tensor(examples, dtype=torch.int64)}


def text_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The span texts (cut's (rows, 1) of strings) as the one column."""
    return {target.columns[0]: np.asarray(pred, dtype=object).reshape(len(pred), -1)[:, 0]}


def check_submission(cells: pd.Series, sample: pd.Series, folder=None) -> None:
    """Every cell a text with a word: the grader reads an empty one as NaN, then as an empty text, and
    tweet-sentiment's divides by zero where its answer is empty too."""
    wrong = [i for i, v in enumerate(cells) if not isinstance(v, str)]
    if wrong:
        raise KitError(f"submission row {wrong[0] + 2} holds {cells.iloc[wrong[0]]!r}, not a text ({len(wrong)} such rows)")
    blank = [i for i, v in enumerate(cells) if not v.split()]
    if blank:
        raise KitError(f"submission row {blank[0] + 2} holds {cells.iloc[blank[0]]!r}, no word: the grader reads it as an "
                       f"empty text ({len(blank)} such rows); write a word in each span cell")


def whole_text(t: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """No constant a row: the prior is each row's whole context, which `cut` writes where no fold predicted."""
    return np.zeros(1)


SPAN = register(Kind("span", text_column, "kit.train.spans:check_submission", one_output=True,
                     describe=lambda t: "a span of each context", prior=whole_text, prior_name=named("the whole text"),
                     prior_text=lambda t, name, known: "the whole text of each row"))
