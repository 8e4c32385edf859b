"""The Levenshtein distance, and billion-word-imputation's metric: the mean distance between each restored sentence
and the true one, as MLE-bench's grade.py scores it (python-Levenshtein's `distance`: insertions, deletions and
substitutions of one character each cost 1).

python-Levenshtein is not in Kaggle's image nor in kit's requirements, so the distance is a plain dynamic programme
here. A restored sentence and its truth share all but a word or two, and the distance of two strings is that of
what is left once their common beginning and end are cut off: the programme runs on a few characters a pair.
"""
from __future__ import annotations

import numpy as np


def distance(a: str, b: str) -> int:
    """The edit distance of `a` and `b`: the fewest one-character insertions, deletions and substitutions."""
    if a == b:
        return 0
    start, end = 0, 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        previous, row[0] = row[0], i  # previous: the row above's cell to the left (the diagonal)
        for j, cb in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (ca != cb))
    return row[-1]


def mean_distance(restored: list[str], truth: list[str]) -> float:
    """The grader's score: the mean distance over the pairs."""
    return float(np.mean([distance(str(t), str(r)) for r, t in zip(restored, truth)])) if truth else float("nan")


def score(metric: str, pred: np.ndarray, target: np.ndarray) -> float:
    """Validation rows -> the mean distance of the restored sentences: `pred` (rows, 2) [the restored sentence's
    distance, the sentence left as it is's] (kit.train.imputation's rows)."""
    pred = np.asarray(pred, np.float64).reshape(len(pred), -1)
    return float(pred[:, 0].mean()) if len(pred) else float("nan")
