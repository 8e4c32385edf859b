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


def test_groups_with_classes_are_stratified_group_folds():
    """Patients (groups) with one class each: no patient on both sides, and each fold about the classes' mix."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(60), rng.integers(1, 6, 60))
    y = (groups % 3 == 0).astype(np.int64)  # a third of the patients are positive, all their rows
    folds = make_folds(len(y), 5, seed=0, classes=y, groups=groups)
    check_partition(folds, len(y))
    for t, v in folds:
        assert not set(groups[t]) & set(groups[v])
        assert abs(y[v].mean() - y.mean()) < 0.12
    again = make_folds(len(y), 5, seed=0, classes=y, groups=groups)
    assert all((a[1] == b[1]).all() for a, b in zip(folds, again))


def test_a_fold_column_gives_the_folds():
    assigned = np.array(["2", "0", "1", "0", "2", "1", "0"])
    folds = make_folds(7, 5, seed=0, assigned=assigned)
    assert [v.tolist() for _, v in folds] == [[1, 3, 6], [2, 5], [0, 4]]  # each value once, in sorted order
    check_partition(folds, 7)
    assert [v.tolist() for _, v in make_folds(7, 2, seed=0, assigned=assigned)] == [[1, 3, 6], [2, 5]]  # the first two
    ((t, v),) = make_folds(7, 1, seed=0, assigned=assigned)
    assert v.tolist() == [1, 3, 6] and t.tolist() == [0, 2, 4, 5]
    with pytest.raises(KitError, match=r"^fold_column holds one fold \('0'\) for every row; it needs two or more"):
        make_folds(3, 5, seed=0, assigned=np.array(["0", "0", "0"]))


def multilabel_rows(n=600, labels=8, seed=0):
    rng = np.random.default_rng(seed)
    rates = np.array([0.4, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.0])[:labels]
    y = (rng.random((n, labels)) < rates).astype(np.float32)
    y[:5, -1] = 1  # a label of five rows
    return y


def test_multilabel_folds_are_iteratively_stratified():
    y = multilabel_rows()
    folds = make_folds(len(y), 5, seed=0, labels=y)
    check_partition(folds, len(y))
    assert sorted(len(v) for _, v in folds) == [120] * 5  # the folds' sizes as asked
    for _, v in folds:
        assert y[v, -1].sum() == 1  # the five-row label: one in each fold
        assert np.abs(y[v].sum(0) - y.sum(0) / 5).max() <= 1.0  # each label within a row of its share
    plain = make_folds(len(y), 5, seed=0)  # shuffled k-fold misses by more on the rare labels
    assert max(np.abs(y[v].sum(0) - y.sum(0) / 5).max() for _, v in plain) > 1.0
    again = make_folds(len(y), 5, seed=0, labels=y)
    assert all((a[1] == b[1]).all() for a, b in zip(folds, again))
    assert not all((a[1] == b[1]).all() for a, b in zip(folds, make_folds(len(y), 5, seed=1, labels=y)))


def test_a_multilabel_holdout_keeps_the_labels_shares():
    y = multilabel_rows(seed=1)
    ((t, v),) = make_folds(len(y), 1, seed=0, labels=y)
    assert len(v) == 120 and len(t) == 480
    assert np.abs(y[v].sum(0) - 0.2 * y.sum(0)).max() <= 1.0
