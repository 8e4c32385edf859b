"""One-hot label columns whose rows sum to one are one class per row (issue 25's lmsys defect). These tests fail
at 474359d, where the issue found the defect, for the defect itself: what they import existed there too."""
import io

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn import metrics as skm

from kit.train import metrics, targets

try:
    from kit.train.objectives import Classification, MultiLabel
except ImportError:  # 474359d named the module tasks
    from kit.train.tasks import Classification, MultiLabel

WINNERS = ["winner_model_a", "winner_model_b", "winner_tie"]


def graded(sub: pd.DataFrame) -> pd.DataFrame:
    """The submission as a grader reads it back (mlebench.utils.read_csv)."""
    return pd.read_csv(io.StringIO(sub.to_csv(index=False)))


def one_hot(winner: np.ndarray, columns: list[str]) -> dict[str, np.ndarray]:
    return {c: (winner == i).astype(int) for i, c in enumerate(columns)}


def test_one_hot_columns_whose_rows_sum_to_one_are_one_class_per_row():
    """lmsys-chatbot-arena: winner_model_a, winner_model_b and winner_tie are one-hot (one winner per row). They
    were read as three independent labels with sigmoid outputs, whose rows do not sum to 1, and the grader
    rejects a file whose rows' sums, rounded to 6 decimals, are not 1. One class per row: softmax."""
    rng = np.random.default_rng(0)
    winner = rng.integers(0, 3, 60)
    table = pd.DataFrame({"id": np.arange(60), "prompt": "[\"hi\"]", **one_hot(winner, WINNERS)})
    target = targets.multi("log_loss", table, WINNERS, "target", "train.csv")
    objective = Classification() if target.classification else MultiLabel()  # what every pipeline picks
    pred = objective.predict(torch.randn(40, target.outputs) * 3).numpy().astype(np.float64)
    sample = pd.DataFrame({"id": np.arange(40), **{c: 1 / 3 for c in WINNERS}})
    sub = graded(sample.assign(**targets.to_columns(target, pred)))  # the sample's columns, filled
    assert sub[WINNERS].sum(axis=1).round(6).eq(1).all()  # the grader's check
    assert ((sub[WINNERS] >= 0) & (sub[WINNERS] <= 1)).all().all()
    assert target.classification and not target.multilabel and target.columns == tuple(WINNERS)
    assert targets.encode(target, table).tolist() == winner.tolist()  # each row's class, for softmax's loss


def test_one_hot_columns_scored_by_auc_keep_each_columns_auc():
    """plant-pathology-2020: one-hot healthy/multiple_diseases/rust/scab scored by the mean of each column's
    AUC. Softmax probabilities are still each column's score: kit's auc is the grader's mean of column AUCs."""
    columns = ["healthy", "multiple_diseases", "rust", "scab"]
    rng = np.random.default_rng(1)
    winner = rng.integers(0, 4, 200)
    table = pd.DataFrame({"image_id": [f"Train_{i}" for i in range(200)], **one_hot(winner, columns)})
    target = targets.multi("auc", table, columns, "target", "train.csv")
    assert target.classification
    y = targets.encode(target, table)
    logits = rng.normal(size=(200, 4)) + 1.5 * np.eye(4)[y]
    pred = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    grader = np.mean([skm.roc_auc_score(table[c], pred[:, j]) for j, c in enumerate(columns)])
    assert metrics.score("auc", pred, y) == pytest.approx(grader)


def test_label_columns_that_are_not_one_hot_stay_multilabel():
    """Rows with two labels, or none, or soft values: independent labels (sigmoid), as before."""
    table = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 0, 1], "y": [0, 1, 1]})  # row c has two
    assert targets.multi("auc", table, ["x", "y"], "target", "train.csv").kind == "multi"
    empty = table.assign(y=[0, 1, 0], x=[1, 0, 0])  # row c has none
    assert targets.multi("auc", empty, ["x", "y"], "target", "train.csv").kind == "multi"
    soft = table.assign(x=[0.3, 0.0, 1.0], y=[0.7, 1.0, 0.0])  # sums to 1, but not one-hot
    assert targets.multi("log_loss", soft, ["x", "y"], "target", "train.csv").kind == "multi"
    assert targets.multi("f1_samples", table.assign(y=[0, 1, 0]), ["x", "y"], "target", "train.csv").kind == "multi"
