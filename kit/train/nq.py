"""tensorflow2-question-answering's metric: MLE-bench's grade.py makes two rows of each example (its long and its
short answer), each y_pred 1 where the PredictionString is not blank and y_true 1 where it matches one of the true
answers (blank: where a true answer exists), then scikit-learn's micro F1 over both classes, which is the share of
rows right: a blank row is right where the example has no such answer, an answered one where it matches exactly.

- `micro_f1`: the grader's score of the submission's strings against the examples.
- `right`: an example's rows right, answered and left blank: the out-of-fold rows the threshold is chosen on.
- `choose`: the score threshold (answer above it, leave blank under it) that scores best on out-of-fold examples,
  and that score.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kit.data.nq import YES_NO, Example
from kit.errors import KitError


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
