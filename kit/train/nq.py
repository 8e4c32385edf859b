"""tensorflow2-question-answering's metric: MLE-bench's grade.py makes two rows of each example (its long and its
short answer), each y_pred 1 where the PredictionString is not blank and y_true 1 where it matches one of the true
answers (blank: where a true answer exists), then scikit-learn's micro F1 over both classes, which is the share of
rows right: a blank row is right where the example has no such answer, an answered one where it matches exactly.

- `micro_f1`: the grader's score of the submission's strings against the examples.
- `right`: an example's rows right, answered and left blank: the out-of-fold rows the threshold is chosen on.
- The "nq" kind of target (a submission of "start:end", YES, NO or blank cells) and `NQObjective`, whose
  validation rows say how many of an example's rows its best span gets right, answered and left blank.
- `NQObjective`'s loss: the span's start and end cross-entropy and the window's answer type's (none, span, YES,
  NO: kit.data.nq.KINDS), a third each.
- `choose`: the score threshold (answer above it, leave blank under it) that scores best on out-of-fold examples,
  and that score.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from kit.data.batch import Batch
from kit.data.nq import YES_NO, Example, char_tokens, long_answer, split, strings, token_chars, window_answer
from kit.data.spans import Windows
from kit.errors import KitError
from kit.train.kinds import Kind, Target, named, register
from kit.train.spans import SpanObjective


def valid(example: Example, which: str) -> list:
    """The answers the grader accepts for an example's "long" or "short" row."""
    if which == "long":
        return [example.long] if example.long is not None else []
    return list(example.shorts) + ([example.yes_no] if example.yes_no in YES_NO else [])


def parsed(text: str):
    """A PredictionString as the grader reads it: (start, end), "YES", "NO" or ""; KitError for anything else."""
    text = text.strip()
    if ":" in text and len(text.split(":")) == 2:
        a, b = text.split(":")
        try:
            return int(a), int(b)
        except ValueError:
            pass
    if text in ("YES", "NO", ""):
        return text
    raise KitError(f"PredictionString {text!r} is none of 'start:end', YES, NO or blank")


def row_right(text: str, answers: list) -> bool:
    pred = parsed(text)
    return pred in answers if pred else not answers


def micro_f1(rows: Mapping[str, str], examples: Sequence[Example]) -> float:
    """The grader's score: `rows` maps "<example_id>_long" and "<example_id>_short" to their PredictionStrings."""
    right = 0
    for e in examples:
        for which in ("long", "short"):
            key = f"{e.example_id}_{which}"
            if key not in rows:
                raise KitError(f"submission: no row {key}; each example needs a _long and a _short row")
            right += row_right(rows[key], valid(e, which))
    return right / (2 * len(examples)) if examples else float("nan")


def right(example: Example, long: str, short: str) -> tuple[int, int]:
    """(rows right if answered with these strings, rows right if left blank), each 0 to 2."""
    answered = row_right(long, valid(example, "long")) + row_right(short, valid(example, "short"))
    blank = row_right("", valid(example, "long")) + row_right("", valid(example, "short"))
    return answered, blank


def choose(scores: np.ndarray, answered: np.ndarray, blank: np.ndarray) -> tuple[float, float]:
    """(threshold, micro F1): answer the examples scored at or above the threshold, leave the others blank; the threshold
    among the scores (and -inf: answer all, +inf: none) that gets the most rows right on these examples."""
    scores, answered, blank = (np.asarray(a, np.float64) for a in (scores, answered, blank))
    if not len(scores):
        return float("inf"), float("nan")
    order = np.argsort(-scores, kind="stable")
    # answering the top k: rows right = sum(answered[top k]) + sum(blank[the rest])
    gains = np.concatenate([[0.0], np.cumsum(answered[order] - blank[order])])
    k = int(np.argmax(gains))
    if k == 0:
        cut = np.inf
    elif k == len(scores):
        cut = -np.inf
    else:
        cut = float((scores[order[k - 1]] + scores[order[k]]) / 2)
    return cut, float((blank.sum() + gains[k]) / (2 * len(scores)))


def score(metric: str, pred: np.ndarray, target: np.ndarray) -> float:
    """Validation rows of windows -> micro F1 at the best threshold: `pred` (windows, 3) the window's best span's
    score, the example's rows right if answered with that span, and if left blank; `target` (windows,) the example.
    Each example's best-scored window counts, as prediction keeps it."""
    pred, target = np.asarray(pred, np.float64), np.asarray(target)
    if not len(pred):
        return float("nan")
    order = np.lexsort((-pred[:, 0], target))
    first = np.r_[True, target[order][1:] != target[order][:-1]]
    best = pred[order[first]]
    return choose(best[:, 0], best[:, 1], best[:, 2])[1]


def check_submission(cells: pd.Series, sample: pd.Series, folder=None) -> None:
    """Every cell one the grader parses: "start:end", YES, NO or blank."""
    for i, v in enumerate(cells):
        text = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
        try:
            parsed(text)
        except KitError as e:
            raise KitError(f"submission row {i + 2}: {e}") from None


def blank_prior(t: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """No constant a row: the prior leaves every answer blank, which `cut` writes where no fold predicted."""
    return np.zeros(1)


def nq_columns(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The PredictionStrings (cut's (rows, 1) of strings) as the one column."""
    return {target.columns[0]: np.asarray(pred, dtype=object).reshape(len(pred), -1)[:, 0]}


NQ = register(Kind("nq", nq_columns, "kit.train.nq:check_submission", one_output=True,
                   describe=lambda t: "each example's long and short answer, or blank", prior=blank_prior,
                   prior_name=named("every answer blank"), prior_text=lambda t, name, known: "every answer blank"))


class NQObjective(SpanObjective):
    """Span extraction's loss with the answer type's: logits (B, L + KIND_ROWS, 2) against targets (B, 3) (the
    answer's first and last token, its type). Its validation rows, one a window: the window's answer's score
    (`window_answer`: its best span's, or YES/NO's), and the example's rows right answered with it (the span as
    "start:end" tokens or YES/NO, the smallest top-level candidate holding the span) and left blank."""

    def __init__(self, w: Windows | None, max_answer: int, examples: Sequence[Example] = ()):
        super().__init__(w, max_answer)
        self.examples = list(examples)
        self._tokens: dict[int, np.ndarray] = {}

    def tokens(self, example: int) -> np.ndarray:
        if example not in self._tokens:
            self._tokens[example] = token_chars(self.examples[example].document)
        return self._tokens[example]

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        output = model(batch["input_ids"]).float()  # (B, L + KIND_ROWS, 2)
        logits, kinds = split(output)  # (B, L, 2), (B, 4)
        y = batch["target"]  # (B, 3)
        loss = (F.cross_entropy(logits[..., 0], y[:, 0]) + F.cross_entropy(logits[..., 1], y[:, 1])
                + F.cross_entropy(kinds, y[:, 2])) / 3
        return {"loss": loss, "output": output}

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        w = self.windows
        logits, kinds = split(output.float().cpu().numpy())
        rows, examples = [], []
        for i, window in enumerate(batch["window"].cpu().numpy()):
            n, example = int(w.tokens.lengths[window]), int(w.example[window])
            best, a, b, yes_no = window_answer(logits[i, :n, 0], logits[i, :n, 1], kinds[i], w.span(window),
                                               self.max_answer)
            e = self.examples[example]
            short = char_tokens(self.tokens(example), a, b)
            long, short_s = strings(short, long_answer(e.candidates, short), True, yes_no)
            rows.append((best if np.isfinite(best) else -1e9, *right(e, long, short_s)))
            examples.append(example)
        return {"pred": torch.tensor(rows, dtype=torch.float64).reshape(-1, 3),
                "target": torch.tensor(examples, dtype=torch.int64)}
