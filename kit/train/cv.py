"""Cross-validation folds: scikit-learn's, stratified for classes, grouped for groups (both at once where both
are given), the competitor's own from a fold column, and label-stratified for multi-label targets by iterative
stratification (kit's own `iterative_folds`: neither scikit-multilearn nor iterative-stratification is on
Kaggle's image, and it is forty lines)."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    StratifiedGroupKFold,
    StratifiedKFold,
    train_test_split,
)

from kit.errors import KitError

HOLDOUT = 0.2  # share of the data a folds=1 run validates on

Folds = list[tuple[np.ndarray, np.ndarray]]


def make_folds(n: int, folds: int, seed: int, classes: np.ndarray | None = None, groups: np.ndarray | None = None,
               labels: np.ndarray | None = None, assigned: np.ndarray | None = None) -> Folds:
    """(train, validation) index arrays over range(n). `assigned` (each row's fold, [data] fold_column) gives the
    folds; `classes` stratifies (where every class can be split), `groups` keeps each group on one side,
    `labels` ((n, L) 0/1, multi-label) stratifies by label. folds=1 is one holdout split of HOLDOUT."""
    if assigned is not None:
        return given_folds(assigned, folds)
    units = len(np.unique(groups)) if groups is not None else n
    if units < max(folds, 2):
        what = "groups" if groups is not None else "rows"
        raise KitError(f"folds={folds} needs at least {max(folds, 2)} training {what}, found {units}; lower folds")
    index = np.arange(n)
    if folds == 1:
        if groups is not None:
            train, val = next(GroupShuffleSplit(1, test_size=HOLDOUT, random_state=seed).split(index, groups=groups))
            return [(train, val)]
        if labels is not None:
            part = iterative_folds(labels > 0.5, np.array([1 - HOLDOUT, HOLDOUT]), seed)
            return [(np.flatnonzero(part == 0), np.flatnonzero(part == 1))]
        counts = np.bincount(classes) if classes is not None else None
        stratify = classes if counts is not None and counts[counts > 0].min() >= 2 else None
        train, val = train_test_split(index, test_size=HOLDOUT, random_state=seed, stratify=stratify)
        return [(np.sort(train), np.sort(val))]
    with warnings.catch_warnings():
        # a class rarer than `folds` just misses some validation folds; sklearn warns about it
        warnings.simplefilter("ignore", UserWarning)
        if groups is not None and classes is not None:
            splitter = StratifiedGroupKFold(folds, shuffle=True, random_state=seed)
            return [(t, v) for t, v in splitter.split(index, classes, groups)]
        if groups is not None:
            try:
                splitter = GroupKFold(folds, shuffle=True, random_state=seed)  # scikit-learn 1.6 and newer
            except TypeError:  # older: the same kind of grouped folds, only not shuffled by the seed
                splitter = GroupKFold(folds)
            return [(t, v) for t, v in splitter.split(index, groups=groups)]
        if labels is not None:
            part = iterative_folds(labels > 0.5, np.full(folds, 1 / folds), seed)
            return [(np.flatnonzero(part != k), np.flatnonzero(part == k)) for k in range(folds)]
        if classes is not None and np.bincount(classes).max() >= folds:
            return list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(index, classes))
    return list(KFold(folds, shuffle=True, random_state=seed).split(index))


def given_folds(assigned: np.ndarray, folds: int) -> Folds:
    """The competitor's folds: each distinct value of `assigned` (in sorted order) validates once, the first
    `folds` of them (folds=1: the first only)."""
    values = np.unique(assigned)
    if len(values) < 2:
        raise KitError(f"fold_column holds one fold ('{values[0]}') for every row; it needs two or more to validate "
                       "on one and train on the others (or leave fold_column empty for kit's own folds)")
    return [(np.flatnonzero(assigned != v), np.flatnonzero(assigned == v)) for v in values[:folds]]


def iterative_folds(labels: np.ndarray, shares: np.ndarray, seed: int) -> np.ndarray:
    """(n,) each row's fold, by iterative stratification (Sechidis, Tsoumakas and Vlahavas, 2011): the label with
    the fewest rows left is dealt out first, each of its rows to the fold that wants that label most (then the
    fold that wants the most rows, then at random), so rare labels spread over the folds in the shares
    `shares` (k,) asks for. Rows without a label go last, to the folds short of rows."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    want_rows = shares * n
    want = np.outer(shares, labels.sum(0)).astype(np.float64)  # (k, L) how many rows of each label each fold wants
    fold = np.full(n, -1, np.int64)
    rows_of = [rng.permutation(np.flatnonzero(labels[:, j])) for j in range(labels.shape[1])]
    labels_of = [np.flatnonzero(row) for row in labels]
    left = labels.sum(0).astype(np.int64)  # rows of each label not yet dealt
    while (left > 0).any():
        label = int(np.argmin(np.where(left > 0, left, np.iinfo(np.int64).max)))
        for row in rows_of[label]:
            if fold[row] >= 0:
                continue
            best = np.flatnonzero(want[:, label] == want[:, label].max())
            if len(best) > 1:
                best = best[want_rows[best] == want_rows[best].max()]
            f = int(best[rng.integers(len(best))])
            fold[row] = f
            want[f, labels_of[row]] -= 1
            want_rows[f] -= 1
            left[labels_of[row]] -= 1
    rest = rng.permutation(np.flatnonzero(fold < 0))  # dealt at once: a million unlabelled rows in a Python loop take long
    need = np.maximum(want_rows, 0.0)
    share = need / need.sum() * len(rest) if need.sum() > 0 else np.full(len(shares), len(rest) / len(shares))
    quota = np.floor(share).astype(np.int64)
    quota[np.argsort(quota - share, kind="stable")[: len(rest) - quota.sum()]] += 1  # the largest remainders
    fold[rest] = np.repeat(np.arange(len(shares)), quota)
    return fold
