"""Multi-label targets: inferred from the tables, scored against scikit-learn, thresholded on out-of-fold rows."""
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn import metrics as skm

from kit.errors import KitError
from kit.pipelines.base import submission_frame, validate
from kit.train import metrics, targets
from kit.train.objectives import MultiLabel

TAGS = ["clear primary", "haze primary water", "cloudy", "clear primary road water"]


def rows(n=300, labels=5, seed=0):
    rng = np.random.default_rng(seed)
    truth = (rng.random((n, labels)) < 0.3).astype(np.float32)
    truth[truth.sum(1) == 0, 0] = 1
    return np.clip(truth * 0.45 + rng.random((n, labels)) * 0.55, 0, 1), truth


def test_label_columns_and_tags_are_multilabel_targets():
    table = pd.DataFrame({"id": ["a", "b"], "x": [1, 0], "y": [1, 1], "z": [0.0, 0.5]})
    t = targets.multi("auc", table, ["x", "y", "z"], "target", "train.csv")
    assert (t.kind, t.columns, t.outputs, t.multilabel, t.classification) == ("multi", ("x", "y", "z"), 3, True, False)
    assert targets.encode(t, table).tolist() == [[1, 1, 0], [0, 1, 0.5]]
    tags = pd.DataFrame({"image_name": ["t0", "t1", "t2", "t3"], "tags": TAGS})
    t = targets.multi("f2_samples", tags, ["tags"], "tags", "train_v2.csv")
    assert (t.kind, t.classes) == ("tags", ("clear", "cloudy", "haze", "primary", "road", "water"))
    assert targets.encode(t, tags["tags"])[3].tolist() == [1, 0, 0, 1, 1, 1]
    assert targets.multi("log_loss", pd.DataFrame({"id": ["a"], "breed": ["x"]}), ["x", "y"], "breed", "labels.csv") is None
    assert targets.multi("accuracy", tags, ["tags"], "tags", "train_v2.csv") is None


def test_multilabel_bad_inputs_are_one_line():
    table = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 0, 2], "y": [1, 1, 0]})
    with pytest.raises(KitError, match=r"^train.csv, column 'x': 2 \(row 4\) is not a probability in \[0, 1\] \(1 such rows\)"):
        targets.multi("auc", table, ["x", "y"], "target", "train.csv")
    with pytest.raises(KitError, match="^train.csv: holds the label columns x, y of the sample submission but not 'w'"):
        targets.multi("auc", table, ["x", "y", "w"], "target", "train.csv")
    with pytest.raises(KitError, match="with metric accuracy; a multi-label target is scored by auc, auc_micro, log_loss"):
        targets.multi("accuracy", table.assign(x=[1, 0, 1]), ["x", "y"], "target", "train.csv")
    with pytest.raises(KitError, match="metric f2_samples scores sets of labels, but the sample submission's column 'label'"):
        targets.infer("f2_samples", pd.Series(["a", "b"]), ["label"], "train.csv, column 'label'")


def test_multilabel_metrics_match_sklearn():
    pred, truth = rows()
    truth[:, 4] = 0  # a label no row has: AUC leaves it out, it is not 0.5 or an error
    expected = np.mean([skm.roc_auc_score(truth[:, j], pred[:, j]) for j in range(4)])
    assert metrics.score("auc", pred, truth) == pytest.approx(expected)
    expected = np.mean([skm.log_loss(truth[:, j], pred[:, j], labels=[0, 1]) for j in range(5)])
    assert metrics.score("log_loss", pred, truth) == pytest.approx(expected, rel=1e-6)
    for metric, beta in (("f1_samples", 1), ("f2_samples", 2)):
        cut, value = metrics.decide(metric, pred, truth)
        decided = metrics.binarize(pred, cut) > 0
        assert value == pytest.approx(skm.fbeta_score(truth > 0, decided, beta=beta, average="samples", zero_division=1.0))
        assert value == metrics.score(metric, pred, truth)
        for other in (0.1, 0.3, 0.5, 0.7):  # no threshold of the grid does better
            cut_other = metrics.Cut(other, cut.at_least_one)
            other = skm.fbeta_score(truth > 0, metrics.binarize(pred, cut_other) > 0, beta=beta, average="samples",
                                    zero_division=1.0)
            assert value >= other


def test_the_f2_threshold_favours_recall():
    pred, truth = rows(seed=1)
    assert metrics.decide("f2_samples", pred, truth)[0].threshold < metrics.decide("f1_samples", pred, truth)[0].threshold


def test_binarize_keeps_the_likeliest_label_only_when_every_row_has_one():
    pred = np.array([[0.1, 0.3, 0.2], [0.9, 0.1, 0.6]])
    assert metrics.binarize(pred, metrics.Cut(0.5, True)).tolist() == [[0, 1, 0], [1, 0, 1]]
    assert metrics.binarize(pred, metrics.Cut(0.5, False)).tolist() == [[0, 0, 0], [1, 0, 1]]
    truth = np.array([[0, 1, 0], [0, 0, 0]], np.float32)  # a row with no label: empty predictions are allowed
    assert not metrics.decide("f1_samples", pred, truth)[0].at_least_one


def test_tags_submission_and_its_checks():
    t = targets.Target("tags", ("tags",), ("clear", "haze", "water"))
    sample = pd.DataFrame({"image_name": ["test_0", "file_0"], "tags": ["clear", "clear"]})
    sub = submission_frame(sample, t, np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    assert sub["tags"].tolist() == ["clear water", "haze"]
    validate(sub, sample, t, "image_name")
    with pytest.raises(KitError, match=r"^submission holds tags that are not labels: \['road'\]"):
        validate(sub.assign(tags=["clear road", "haze"]), sample, t, "image_name")
    multi = targets.Target("multi", ("x", "y"), ("x", "y"))
    probs = pd.DataFrame({"id": ["a"], "x": [0.2], "y": [0.9]})
    validate(probs, probs, multi, "id")  # per-label probabilities need not sum to 1
    with pytest.raises(KitError, match=r"probabilities fall outside \[0, 1\]"):
        validate(probs.assign(y=[1.2]), probs, multi, "id")


def test_multilabel_task_is_bce_on_each_label():
    logits = torch.tensor([[2.0, -1.0, 0.0]])
    batch = {"image": torch.zeros(1), "target": torch.tensor([[1.0, 0.0, 1.0]])}
    out = MultiLabel()(lambda x: logits, batch)
    assert float(out["loss"]) == pytest.approx(float(torch.nn.functional.binary_cross_entropy(logits.sigmoid(), batch["target"])))
    assert MultiLabel().rows(out["output"], batch)["pred"][0].tolist() == pytest.approx(logits.sigmoid()[0].tolist())


def test_the_prior_is_each_labels_frequency():
    t = targets.Target("tags", ("tags",), ("a", "b"))
    assert targets.prior(t, np.array([[1, 0], [1, 1], [0, 0], [1, 0]], np.float32)).tolist() == [0.75, 0.25]


def test_label_columns_the_training_table_lacks_are_named_under_an_f_score():
    tags = pd.DataFrame({"id": ["a", "b"], "tags": ["x y", "y"]})
    with pytest.raises(KitError, match=r"^train.csv: the sample submission has 2 label columns \(x, y ...\) and this table "
                                       "none of them; under f2_samples give it one 0/1 column per label$"):
        targets.multi("f2_samples", tags, ["x", "y"], "tags", "train.csv")
