import numpy as np
import pytest

from kit.errors import KitError
from kit.train.cv import make_folds


def check_partition(folds, n):
    vals = np.concatenate([v for _, v in folds])
    assert sorted(vals.tolist()) == list(range(n))
    for t, v in folds:
        assert not set(t) & set(v) and len(t) + len(v) == n


def test_stratified_folds_balance_classes():
    y = np.repeat([0, 1, 2], [20, 10, 5])
    folds = make_folds(35, 5, seed=0, classes=y)
    check_partition(folds, 35)
    for _, v in folds:
        assert np.bincount(y[v], minlength=3).tolist() == [4, 2, 1]


def test_rare_classes_and_no_stratification_possible():
    y = np.array([0, 1, 2, 3, 4, 5])  # every class once: plain KFold
    check_partition(make_folds(6, 2, seed=0, classes=y), 6)
    y = np.array([0, 0, 0, 0, 1])  # a class rarer than the folds still works
    check_partition(make_folds(5, 3, seed=0, classes=y), 5)


def test_holdout_and_groups():
    y = np.repeat([0, 1], 10)
    ((t, v),) = make_folds(20, 1, seed=0, classes=y)
    assert len(v) == 4 and np.bincount(y[v]).tolist() == [2, 2]
    ((t, v),) = make_folds(6, 1, seed=0, classes=np.arange(6))  # unstratifiable holdout
    assert len(t) + len(v) == 6
    groups = np.repeat(np.arange(10), 3)
    folds = make_folds(30, 5, seed=0, groups=groups)
    check_partition(folds, 30)
    for t, v in folds:
        assert not set(groups[t]) & set(groups[v])


def test_too_few_rows():
    with pytest.raises(KitError, match="folds=5 needs at least 5 training rows, found 3"):
        make_folds(3, 5, seed=0)
    with pytest.raises(KitError, match="groups"):
        make_folds(4, 3, seed=0, groups=np.array([0, 0, 1, 1]))


def test_same_seed_same_folds():
    y = np.repeat([0, 1], 10)
    a, b = make_folds(20, 4, 7, classes=y), make_folds(20, 4, 7, classes=y)
    assert all((x[1] == z[1]).all() for x, z in zip(a, b))
