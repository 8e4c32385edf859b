"""Metrics against scikit-learn, targets inferred from the sample submission, submission checks."""
import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from kit.errors import KitError
from kit.pipelines.base import submission_frame, validate
from kit.train import metrics, targets


def test_log_loss_matches_sklearn_with_clipping():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.0, 1.0, 0.0]])
    y = np.array([0, 2, 0])
    assert metrics.score("log_loss", p, y) == pytest.approx(skm.log_loss(y, np.clip(p, 1e-15, 1), labels=[0, 1, 2]))
    assert metrics.score("log_loss", p[:2], y[:2]) == pytest.approx(-(np.log(0.7) + np.log(0.8)) / 2)


def test_other_metrics_exact():
    p = np.array([[0.9, 0.1], [0.4, 0.6], [0.3, 0.7], [0.8, 0.2]])
    y = np.array([0, 1, 0, 1])
    assert metrics.score("accuracy", p, y) == 0.5
    assert metrics.score("auc", p, y) == pytest.approx(skm.roc_auc_score(y, p[:, 1]))
    v, t = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0])
    assert metrics.score("mae", v, t) == pytest.approx(1.0)
    assert metrics.score("rmse", v[:, None], t) == pytest.approx(np.sqrt(5 / 3))
    assert metrics.score("mae", v, t, weight=np.array([1.0, 0.0, 1.0])) == pytest.approx(1.0)
    assert metrics.score("mae", v, t, weight=np.array([0.0, 1.0, 0.0])) == pytest.approx(1.0)


def test_better_respects_direction_and_nan():
    assert metrics.better("log_loss", 0.5, 0.6) and not metrics.better("log_loss", 0.7, 0.6)
    assert metrics.better("auc", 0.9, 0.8) and metrics.better("auc", 0.1, None)
    assert not metrics.better("auc", float("nan"), None) and metrics.better("mae", 3.0, float("nan"))


def test_infer_targets():
    t = targets.infer("log_loss", pd.Series(["b", "a", "b"]), ["a", "b", "c"], "labels.csv")
    assert (t.kind, t.classes, t.outputs) == ("probs", ("a", "b", "c"), 3)
    assert targets.encode(t, pd.Series(["c", "a"])).tolist() == [2, 0]
    t = targets.infer("auc", pd.Series([1, 0, 1]), ["label"], "train.csv")
    assert (t.kind, t.classes) == ("binary", (0, 1))
    t = targets.infer("accuracy", pd.Series(["cat", "dog", "ant"]), ["label"], "train.csv")
    assert (t.kind, t.classes) == ("label", ("ant", "cat", "dog"))
    t = targets.infer("rmse", pd.Series([1.5, 2.0]), ["y"], "train.csv")
    assert (t.kind, t.outputs, t.classification) == ("value", 1, False)


def test_infer_target_errors_name_the_row():
    with pytest.raises(KitError, match=r"labels.csv: class 'd' \(row 3\) is not a column of the sample submission \(1 such"):
        targets.infer("log_loss", pd.Series(["a", "d", "b"], index=[0, 1, 2]), ["a", "b"], "labels.csv")
    with pytest.raises(KitError, match="needs numeric targets"):
        targets.infer("mae", pd.Series(["x"]), ["y"], "t.csv")
    with pytest.raises(KitError, match="binary probability, but the labels have 3 classes"):
        targets.infer("auc", pd.Series([0, 1, 2]), ["y"], "t.csv")


def test_submission_frame_keeps_sample_order_and_columns():
    sample = pd.DataFrame({"id": ["z", "a"], "b": [0.5, 0.5], "a": [0.5, 0.5]})
    t = targets.Target("probs", ("b", "a"), ("b", "a"))
    sub = submission_frame(sample, t, np.array([[0.9, 0.1], [0.2, 0.8]]))
    assert list(sub.columns) == ["id", "b", "a"] and sub["id"].tolist() == ["z", "a"]
    assert sub["b"].tolist() == [0.9, 0.2]
    validate(sub, sample, t, "id")
    label = targets.Target("label", ("label",), ("cat", "dog"))
    sub = submission_frame(pd.DataFrame({"id": [1, 2], "label": ["cat", "cat"]}), label, np.array([[0.1, 0.9], [0.8, 0.2]]))
    assert sub["label"].tolist() == ["dog", "cat"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s.drop(columns="a"), "columns"),
        (lambda s: s.iloc[::-1], "ids differ"),
        (lambda s: s.iloc[:1], "has 1 rows"),
        (lambda s: s.assign(a=[np.nan, 0.5]), "NaN"),
        (lambda s: s.assign(a=[1.5, 0.5], b=[-0.5, 0.5]), "outside"),
        (lambda s: s.assign(a=[0.9, 0.5]), "sum to 1"),
    ],
)
def test_validate_catches(change, message):
    sample = pd.DataFrame({"id": ["x", "y"], "b": [0.5, 0.5], "a": [0.5, 0.5]})
    t = targets.Target("probs", ("b", "a"), ("b", "a"))
    with pytest.raises(KitError, match=message):
        validate(change(sample.copy()), sample, t, "id")


def test_prior():
    t = targets.Target("probs", ("a", "b", "c"), ("a", "b", "c"))
    assert targets.prior(t, np.array([0, 0, 2, 2])).tolist() == [0.5, 0.0, 0.5]
    assert targets.prior(targets.Target("value", ("y",)), np.array([1.0, 3.0])).tolist() == [2.0]


def test_the_prior_is_the_constant_the_metric_scores_best():
    """What the fallback submission writes (kit.run.fallback) and the baseline the out-of-fold score is set against."""
    value, skewed = targets.Target("value", ("y",)), np.array([1.0, 1.0, 2.0, 10.0])
    assert targets.prior(value, skewed, "rmse").tolist() == [3.5]  # the mean
    assert targets.prior(value, skewed, "mae").tolist() == [1.5]  # the median
    assert targets.prior(value, np.array([0.0, 3.0]), "rmsle").tolist() == pytest.approx([1.0])  # exp(mean log1p) - 1
    ordinal = targets.Target("ordinal", ("score",), (1, 2, 3, 4))
    assert targets.prior(ordinal, np.array([1.0, 4.0, 4.0, 2.0, 3.0]), "qwk").tolist() == [4.0]  # the most frequent
    label = targets.Target("label", ("y",), ("a", "b", "c"))  # accuracy writes its likeliest class: the mode
    pred = np.tile(targets.prior(label, np.array([2, 2, 0, 1, 2]), "accuracy"), (2, 1))
    assert targets.to_columns(label, pred)["y"].tolist() == ["c", "c"]
    assert targets.prior_name(value, "mae") == "the training median"


def test_laplace_is_learnt_by_absolute_error_its_prior_the_median():
    """osic's Laplace score with one shared confidence is a function of each row's capped absolute error: its value
    is learnt by L1 (boosters and networks) and its constant is the median, as under mae."""
    from torch.nn import functional as F

    from kit.metric_records import absolute
    from kit.train.objectives import Regression

    value, skewed = targets.Target("value", ("y",)), np.array([1.0, 1.0, 2.0, 10.0])
    assert absolute("laplace") and targets.prior(value, skewed, "laplace").tolist() == [1.5]
    assert targets.prior_name(value, "laplace") == "the training median"
    assert Regression([0.0], [1.0], "laplace").loss is F.l1_loss


def test_qwk_and_pearson_match_sklearn_and_numpy():
    target = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 3.0, 2.0])
    values = np.array([1.2, 2.6, 2.9, 4.4, 6.8, 5.5, 3.4, 0.2])  # rounded and clipped to 1..6: 1 3 3 4 6 6 3 1
    expected = skm.cohen_kappa_score(target.astype(int), [1, 3, 3, 4, 6, 6, 3, 1], weights="quadratic")
    assert metrics.score("qwk", values, target) == pytest.approx(expected)
    probs = np.eye(3)[[0, 2, 1, 1]] * 0.8 + 0.1
    assert metrics.score("qwk", probs, np.array([0, 2, 2, 1])) == pytest.approx(
        skm.cohen_kappa_score([0, 2, 2, 1], [0, 2, 1, 1], weights="quadratic"))
    assert metrics.score("pearson", values[:, None], target) == pytest.approx(np.corrcoef(values, target)[0, 1])
    w = np.array([1.0, 1, 1, 1, 0, 0, 1, 1])
    assert metrics.score("pearson", values, target, weight=w) == pytest.approx(np.corrcoef(values[w > 0], target[w > 0])[0, 1])
    assert np.isnan(metrics.score("pearson", np.ones(4), target[:4]))
    assert metrics.better("qwk", 0.8, 0.7) and metrics.better("pearson", 0.5, 0.1)
