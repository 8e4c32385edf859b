"""Blends: each metric family's rule (kit.run.blend), and the out-of-fold rows of several runs lined up or refused
with one line (kit.run.predictions writes a run's files, kit.run.kept reads them back)."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from kit.data.text import TextBatches, Tokens
from kit.errors import KitError
from kit.pipelines.text import TextPipeline
from kit.run import blend, kept, predictions
from kit.runtime import checkpoint, runs, trained
from kit.runtime.run_folder import OOF, OOF_PRED
from kit.train import metrics
from kit.train.targets import Target

RNG = np.random.default_rng(0)
PROBS = Target("probs", ("a", "b", "c"), ("a", "b", "c"))
BINARY = Target("binary", ("is_dog",), (0, 1))


def softmax(logits):
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def two_experts(n=300, classes=3):
    """Two runs of class probabilities, each sure and right on its own half of the rows and unsure on the other:
    together they are better than either alone."""
    truth = RNG.integers(0, classes, n)
    sure = np.eye(classes)[truth] * 4.0
    noise = RNG.normal(0, 1.0, (n, classes))
    half = np.arange(n) < n // 2
    a = softmax(np.where(half[:, None], sure, 0.0) + noise)
    b = softmax(np.where(half[:, None], 0.0, sure) + RNG.normal(0, 1.0, (n, classes)))
    return truth, a, b


@pytest.mark.parametrize("metric", ["log_loss", "accuracy"])
def test_class_probabilities_blend_by_their_weighted_mean_renormalised(metric):
    truth, a, b = two_experts()
    fitted = blend.fit(metric, [a, b], truth, None, PROBS)
    assert fitted.rule == "mean" and fitted.how in ("hill climbing", "least squares")
    assert (fitted.weights >= 0).all() and fitted.weights.sum() == pytest.approx(1.0)
    assert 0.2 < fitted.weights[0] < 0.8  # both experts count
    mixed = blend.combine([a, b], fitted.weights, fitted.rule, PROBS)
    assert np.allclose(mixed.sum(1), 1.0)
    assert fitted.score == pytest.approx(metrics.score(metric, mixed, truth))
    assert all(metrics.better(metric, fitted.score, s) for s in fitted.singles)  # better than each run alone


def test_auc_blends_ranks_not_scores():
    """A run whose scores are squashed into a corner (p**12) ranks the rows as well as any: averaged as scores it
    would count for nothing, averaged as ranks it counts as much as the other."""
    n = 400
    truth = RNG.integers(0, 2, n)
    p = np.clip(0.5 * truth + RNG.normal(0.25, 0.25, n), 0.001, 0.999)
    q = np.clip(0.5 * truth + RNG.normal(0.25, 0.25, n), 0.001, 0.999) ** 12
    a, b = np.stack([1 - p, p], 1), np.stack([1 - q, q], 1)
    assert blend.rule("auc", BINARY) == "rank" and blend.rule("log_loss", BINARY) == "mean"
    mixed = blend.combine([a, b], np.array([0.5, 0.5]), "rank", BINARY)
    want = (stats.rankdata(p) + stats.rankdata(q)) / (2 * n)
    assert np.allclose(mixed[:, 1], want) and np.allclose(mixed.sum(1), 1.0)
    fitted = blend.fit("auc", [a, b], truth, None, BINARY)
    assert fitted.score >= max(fitted.singles)
    assert fitted.score == pytest.approx(metrics.score("auc", mixed if fitted.weights[0] == 0.5 else
                                                       blend.combine([a, b], fitted.weights, "rank", BINARY), truth))


def test_multiclass_auc_keeps_probabilities_that_sum_to_one():
    assert blend.rule("auc", PROBS) == "mean"  # sklearn's one-vs-rest AUC wants distributions


@pytest.mark.parametrize("metric", ["mae", "rmse"])
def test_values_blend_by_their_weighted_mean(metric):
    """Two regressions biased in opposite directions: their mean is right."""
    truth = RNG.normal(10, 3, 200)
    up, down = truth + 1.0 + RNG.normal(0, 0.1, 200), truth - 1.0 + RNG.normal(0, 0.1, 200)
    target = Target("value", ("y",))
    fitted = blend.fit(metric, [up[:, None], down[:, None]], truth, None, target)
    assert fitted.weights == pytest.approx([0.5, 0.5], abs=0.05)
    assert fitted.score < 0.2 < min(fitted.singles)


def test_qwk_is_taken_on_the_blended_value():
    """Scores regressed 0.6 too high and 0.6 too low each round to the wrong whole score; their blend to the right one."""
    truth = RNG.integers(1, 7, 300).astype(float)
    target = Target("ordinal", ("score",), (1, 2, 3, 4, 5, 6))
    high, low = (truth + 0.6)[:, None], (truth - 0.6)[:, None]
    fitted = blend.fit("qwk", [high, low], truth, None, target)
    assert max(fitted.singles) < 0.99 and fitted.score == pytest.approx(1.0)
    assert blend.combine([high, low], fitted.weights, fitted.rule, target)[:, 0] == pytest.approx(truth)


@pytest.mark.parametrize("metric", ["f1_samples", "f2_samples", "f1_micro"])
def test_f_scores_choose_their_threshold_again_on_the_blend(metric):
    """Label probabilities that never reach 0.5: the blend's threshold is chosen on the blend's rows, not kept."""
    n, labels = 300, 5
    truth = (RNG.random((n, labels)) < 0.3).astype(float)
    truth[truth.sum(1) == 0, 0] = 1.0
    a = np.clip(0.3 * truth + RNG.normal(0.05, 0.08, truth.shape), 0, 1)
    b = np.clip(0.3 * truth + RNG.normal(0.05, 0.08, truth.shape), 0, 1)
    target = Target("tags", ("tags",), tuple("vwxyz"))
    fitted = blend.fit(metric, [a, b], truth, None, target)
    mixed = blend.combine([a, b], fitted.weights, fitted.rule, target)
    cut, value = metrics.decide(metric, mixed, truth)
    assert fitted.cut == cut and cut.threshold < 0.5 and fitted.score == pytest.approx(value)
    assert fitted.score >= max(fitted.singles)


def test_a_blend_no_better_than_the_best_run_is_that_run_alone():
    truth, a, _ = two_experts()
    perfect = np.eye(3)[truth] * 0.98 + 0.01
    fitted = blend.fit("log_loss", [a, perfect], truth, None, PROBS)
    assert fitted.how == "the best run alone" and list(fitted.weights) == [0.0, 1.0]
    table = blend.describe(fitted, ["run-a", "run-b"], [[1.0, 1.1], [0.1, 0.1]], [0.1, 0.1], [0, 1], len(truth))
    assert "the blend scores no better than run-b alone" in table and "the submission is run-b's" in table


def test_the_table_shows_each_runs_score_the_blends_and_the_weights():
    truth, a, b = two_experts()
    fitted = blend.fit("log_loss", [a, b], truth, None, PROBS)
    folds = np.arange(len(truth)) % 2
    per = [blend.fold_scores("log_loss", p, truth, None, PROBS, folds) for p in (a, b)]
    mixed = blend.combine([a, b], fitted.weights, fitted.rule, PROBS)
    table = blend.describe(fitted, ["run-a", "run-b"], per, blend.fold_scores("log_loss", mixed, truth, None, PROBS, folds),
                           [0, 1], len(truth))
    lines = table.splitlines()
    assert "fold 1" in lines[1] and "fold 2" in lines[1] and "weight" in lines[1]
    assert lines[2].split()[0] == "run-a" and float(lines[2].split()[-1]) == pytest.approx(fitted.weights[0], abs=1e-3)
    assert lines[4].split()[0] == "blend" and float(lines[4].split()[-1]) == pytest.approx(fitted.score, abs=1e-4)
    assert lines[5].startswith("weights by ")


def test_rows_the_score_masks_out_count_for_nothing():
    truth, a, b = two_experts()
    weight = (np.arange(len(truth)) < len(truth) // 2).astype(float)  # only a's half is scored
    fitted = blend.fit("log_loss", [a, b], truth, weight, PROBS)
    assert fitted.weights[0] > 0.9


# -- oof.csv of several runs, lined up or refused ---------------------------------------------------------------

def run(name, ids, folds, target=PROBS, labels=None, seed=0):
    rng = np.random.default_rng(seed)
    labels = labels if labels is not None else np.array(["a", "b", "c"])[np.asarray(ids) % 3]
    pred = softmax(rng.normal(size=(len(ids), 3)))
    frame = pd.DataFrame({"id": [str(i) for i in ids], "fold": folds, "scored": 1})
    truth = np.array([list(target.classes).index(x) for x in labels])
    return kept.RunPredictions(name, Path(name), {}, target, frame, pred, truth)


def test_runs_line_up_on_the_rows_every_one_predicted():
    ids = np.arange(12)
    full = run("full", ids, ids % 3)
    partial = run("partial", ids[ids % 3 != 2], ids[ids % 3 != 2] % 3, seed=1)  # its fold 3 never finished
    said = []
    aligned = kept.align([full, partial], said.append)
    assert len(aligned.ids) == 8 and set(aligned.folds) == {0, 1} and len(aligned.preds) == 2
    assert aligned.preds[0].shape == (8, 3) and list(aligned.truth[:3]) == [0, 1, 0]  # ids 0, 1, 3: a, b, a
    assert said == ["blend: 4 out-of-fold rows of full are left out: not every run predicted them (folds [3])"]


@pytest.mark.parametrize("change, message", [
    (lambda ids: run("other", ids, (ids + 1) % 3), r"other splits the rows into other folds than first \(id '0': "
                                                   r"fold 2 there, 1 here, 12 such rows\); blend runs trained with the same"),
    (lambda ids: run("other", ids + 100, ids % 3), r"first validates id '0' in fold 1, and other has no such id "
                                                   r"\(12 such rows\); blend runs trained on the same rows"),
    (lambda ids: run("other", ids, ids % 3, target=Target("probs", ("x", "y", "z"), ("x", "y", "z")),
                     labels=np.array(["x", "y", "z"])[ids % 3]),
     r"other predicts the target columns \['x', 'y', 'z'\] and first \['a', 'b', 'c'\]; blend runs of one competition"),
    (lambda ids: run("other", ids, ids % 3, labels=np.array(["c", "b", "a"])[ids % 3]),
     r"other holds another target than first for id '0'; blend runs trained on the same labels"),
])
def test_runs_that_cannot_blend_are_one_line(change, message):
    ids = np.arange(12)
    with pytest.raises(KitError, match=message) as e:
        kept.align([run("first", ids, ids % 3), change(ids)], print)
    assert "\n" not in str(e.value)


def test_predictions_round_trip_through_their_files(tmp_path):
    """What a run writes is what a blend reads: the ids, the folds, the mask, the truth and every output."""
    p = RNG.random(6)
    rows = {"pred": np.stack([1 - p, p], 1).astype(np.float32), "target": np.array([0, 1, 1, 0, 1, 0]),
            "weight": np.array([1, 1, 0, 1, 1, 1.0])}
    parts = [(0, np.arange(3), {k: v[:3] for k, v in rows.items()}), (1, np.arange(3, 6), {k: v[3:] for k, v in rows.items()})]
    test = {0: np.array([[0.2, 0.8], [0.6, 0.4]]), 1: np.array([[0.4, 0.6], [0.8, 0.2]])}
    record = {"target": {"kind": "binary", "columns": ["is_dog"], "classes": ["cat", "dog"], "top": 1, "limits": []}}
    predictions.save(tmp_path, record, parts, np.array(["t1", "t2"]), test)
    oof = pd.read_csv(tmp_path / OOF)
    assert list(oof.columns) == ["id", "fold", "scored"] and list(oof["scored"]) == [1, 1, 0, 1, 1, 1]
    assert np.load(tmp_path / OOF_PRED).dtype == np.float32  # 4 bytes a prediction, binary, not text
    back = kept.read(kept.find(tmp_path), "run", with_test=True)
    aligned = kept.align([back], print)
    assert list(aligned.truth) == [0, 1, 1, 0, 1, 0] and list(aligned.weight) == [1, 1, 0, 1, 1, 1]
    assert np.array_equal(aligned.preds[0], rows["pred"])  # every float as it was
    ids, mean = kept.test_mean(back)
    assert list(ids) == ["t1", "t2"] and mean[:, 1] == pytest.approx([0.7, 0.3])


def test_text_names_its_validation_rows_in_the_order_its_batches_yield_them():
    """Validation batches texts longest first (fewer pad tokens): oof.csv's ids follow that order, not the fold's."""
    lengths = RNG.integers(1, 40, 50)
    tokens = Tokens(np.ones(lengths.sum(), np.int32), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    y = RNG.normal(size=50).astype(np.float32)
    rows = np.sort(RNG.choice(50, 23, replace=False))
    batches = TextBatches(tokens, rows, y, 4, shuffle=False, device=torch.device("cpu"), pad_id=0)
    seen = np.concatenate([b["target"].numpy() for b in batches])
    data = SimpleNamespace(train=tokens, ids=np.array([f"essay{i}" for i in range(50)]), y=y)
    ids, truth = TextPipeline.validation_rows(None, data, rows)
    assert np.array_equal(truth, seen) and not np.array_equal(seen, y[rows])  # their order, not the fold's
    assert [int(i.removeprefix("essay")) for i in ids] == [int(np.flatnonzero(y == t)[0]) for t in seen]


@pytest.mark.parametrize("source, mounted", [
    ("you/dogs-a", "notebooks/you/dogs-a"),  # a kernel's output, today's layout
    ("you/dogs-a", "dogs-a"),  # and the older one
    ("you/dogs/pytorch/default/2", "models/you/dogs/pytorch/default/2"),  # a published model version
    ("you/dogs/pytorch/default/2", "dogs/pytorch/default/2"),
    ("runs/c", "runs/c"),  # a folder relative to /kaggle/input
])
def test_a_blends_runs_are_found_where_kaggle_mounts_them(tmp_path, monkeypatch, source, mounted):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    (tmp_path / mounted).mkdir(parents=True)
    assert trained.locate(source, tmp_path) == tmp_path / mounted
    assert trained.locate(str(tmp_path / mounted), tmp_path) == tmp_path / mounted  # an absolute folder
    assert trained.locate("you/elsewhere", tmp_path) is None


def test_a_run_not_attached_is_a_line_and_none_attached_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    run = tmp_path / "notebooks" / "you" / "dogs-a" / "checkpoints" / "abc"
    run.mkdir(parents=True)
    checkpoint.save_json({"format": runs.FORMAT, "template": "cnn"}, run / "run.json")
    checkpoint.save({}, run / "fold0.pt")
    stamp = {"format": runs.FORMAT, "version": "0", "template": "cnn", "params": {}, "recipe": {}}
    checkpoint.save({"epoch": 1, "score": 0.5, "kit": stamp}, run / "fold0.meta.pt")
    found, missing = trained.find_blend(("you/dogs-a", "you/dogs-b"))
    assert [(s, t.folder) for s, t in found] == [("you/dogs-a", run)]
    assert missing == ["blend: you/dogs-b is not attached; blending the other runs"]
    with pytest.raises(KitError, match=r"blend: none of its 1 runs is attached \(you/dogs-b; .* holds notebooks/you/dogs-a\)"):
        trained.find_blend(("you/dogs-b",))


def classes(k):
    return lambda n: (np.arange(n) % k, softmax(RNG.normal(size=(n, k))))


def values(k, labels=False):
    return lambda n: ((RNG.random((n, k)) > 0.5 if labels else RNG.random((n, k))).astype(np.float32), RNG.random((n, k)))


KINDS = {  # each kind of target: its record, and (truth, predictions) as the objectives' metric rows hold them
    "probs": (PROBS, classes(3)),
    "onehot": (Target("onehot", ("a", "b", "tie"), ("a", "b", "tie")), classes(3)),
    "binary": (Target("binary", ("y",), (0, 1)), classes(2)),
    "label": (Target("label", ("Label",), ("NA", "cat", "dog"), top=3), classes(3)),
    "value": (Target("value", ("y",), limits=((0.0, 9.0),)), lambda n: (RNG.random(n).astype(np.float32), RNG.random((n, 1)))),
    "ordinal": (Target("ordinal", ("score",), (1, 2, 3)), lambda n: (RNG.integers(1, 4, n).astype(np.float32),
                                                                    RNG.random((n, 1)))),
    "values": (Target("values", ("u", "v")), values(2)),
    "multi": (Target("multi", ("u", "v"), ("u", "v")), values(2, labels=True)),
    "tags": (Target("tags", ("tags",), ("clear", "haze", "road")), values(3, labels=True)),
    "bias_auc": (Target("multi", ("prediction",), ("toxic", "male", "female")), values(3)),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_target_round_trips_through_the_files(tmp_path, kind):
    """What the metric rows of any target hold is what a blend reads back: the truth as the metrics take it, and
    every output (a class called NA stays a class)."""
    target, make = KINDS[kind]
    truth, pred = make(8)
    parts = [(0, np.arange(4), {"pred": pred[:4], "target": truth[:4]}),
             (1, np.arange(4, 8), {"pred": pred[4:], "target": truth[4:]})]
    record = {"target": {"kind": target.kind, "columns": list(target.columns), "classes": list(target.classes),
                         "top": target.top, "limits": [list(x) for x in target.limits]}}
    predictions.save(tmp_path, record, parts, np.arange(3), {0: pred[:3], 1: pred[3:6]})
    back = kept.read(tmp_path, kind, with_test=True)
    aligned = kept.align([back], print)
    assert np.allclose(aligned.truth, truth) and aligned.truth.shape == np.asarray(truth).shape
    assert np.allclose(aligned.preds[0], pred) and back.target == target
    fitted = blend.fit("qwk" if kind == "ordinal" else "log_loss" if target.classification or kind == "multi" else "rmse",
                       aligned.preds, aligned.truth, None, target) if kind not in ("tags", "bias_auc") else None
    assert fitted is None or fitted.weights == pytest.approx([1.0])
