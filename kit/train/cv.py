"""Cross-validation folds from scikit-learn: stratified for classes, grouped for sequences."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    StratifiedKFold,
    train_test_split,
)

from kit.errors import KitError

HOLDOUT = 0.2  # share of the data a folds=1 run validates on


def make_folds(
    n: int, folds: int, seed: int, classes: np.ndarray | None = None, groups: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, validation) index arrays over range(n). `classes` stratifies (where every class can be
    split), `groups` keeps each group on one side. folds=1 is one holdout split of HOLDOUT."""
    units = len(np.unique(groups)) if groups is not None else n
    if units < max(folds, 2):
        what = "groups" if groups is not None else "rows"
        raise KitError(f"folds={folds} needs at least {max(folds, 2)} training {what}, found {units}; lower folds")
    index = np.arange(n)
    if folds == 1:
        if groups is not None:
            train, val = next(GroupShuffleSplit(1, test_size=HOLDOUT, random_state=seed).split(index, groups=groups))
            return [(train, val)]
        counts = np.bincount(classes) if classes is not None else None
        stratify = classes if counts is not None and counts[counts > 0].min() >= 2 else None
        train, val = train_test_split(index, test_size=HOLDOUT, random_state=seed, stratify=stratify)
        return [(np.sort(train), np.sort(val))]
    if groups is not None:
        try:
            splitter = GroupKFold(folds, shuffle=True, random_state=seed)  # scikit-learn 1.6 and newer
        except TypeError:  # older: the same kind of grouped folds, only not shuffled by the seed
            splitter = GroupKFold(folds)
        return [(t, v) for t, v in splitter.split(index, groups=groups)]
    if classes is not None and np.bincount(classes).max() >= folds:
        with warnings.catch_warnings():
            # a class rarer than `folds` just misses some validation folds; sklearn warns about it
            warnings.simplefilter("ignore", UserWarning)
            return list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(index, classes))
    return list(KFold(folds, shuffle=True, random_state=seed).split(index))
