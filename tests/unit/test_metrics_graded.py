"""The metrics of issue 25, each against scikit-learn or scipy (and, where a grader computes it its own way, that
way written out from its formula): macro_f1, f1_micro, map@k, spearman, rmsle, weighted_auc, bias_auc."""
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm
from sklearn.preprocessing import MultiLabelBinarizer

from kit import metric_records
from kit.errors import KitError
from kit.spec import Spec
from kit.train import bias_metrics, metrics
from kit.train.spans import jaccard, mean_jaccard

IDENTITIES = 4


def probs(n: int, classes: int, seed: int, signal: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    logits = rng.normal(size=(n, classes)) + signal * np.eye(classes)[y]
    return np.exp(logits) / np.exp(logits).sum(1, keepdims=True), y


def test_macro_f1_is_sklearns_over_the_classes_truth_and_predictions_hold():
    pred, y = probs(300, 6, seed=0)
    y[y == 5] = 4  # class 5 is never true, but predicted: it counts, with F1 0, as in the grader
    assert (pred.argmax(1) == 5).any()
    assert metrics.score("macro_f1", pred, y) == pytest.approx(skm.f1_score(y, pred.argmax(1), average="macro"))
    assert metrics.score("macro_f1", pred, y) < skm.f1_score(y, pred.argmax(1), average="macro", labels=range(5))


def test_f1_micro_is_the_graders_over_label_sets():
    """imet-2020, plant-pathology-2021: MultiLabelBinarizer over the answers' labels, then micro F1; a predicted
    label the answers never hold is ignored, not a false positive."""
    rng = np.random.default_rng(1)
    truth = (rng.random((200, 6)) < 0.3).astype(np.float32)
    truth[:, 5] = 0  # no row of these holds label 5
    pred = np.clip(truth * 0.5 + rng.random((200, 6)) * 0.6, 0, 1)
    cut, value = metrics.decide("f1_micro", pred, truth)
    decided = metrics.binarize(pred, cut) > 0
    assert decided[:, 5].any()  # label 5 is predicted somewhere
    names = np.array(list("abcdef"))
    answers = [" ".join(names[row > 0]) for row in truth]
    written = [" ".join(names[row]) for row in decided]
    mlb = MultiLabelBinarizer(classes=sorted({t for a in answers for t in a.split()}))
    with pytest.warns(UserWarning, match="unknown class"):
        expected = skm.f1_score(mlb.fit_transform([a.split() for a in answers]), mlb.transform([w.split() for w in written]),
                                average="micro")
    assert value == pytest.approx(expected) and metrics.score("f1_micro", pred, truth) == value
    for other in (0.2, 0.4, 0.6):  # the chosen threshold is the grid's best
        assert value >= metrics.micro_f1(truth > 0.5, metrics.binarize(pred, metrics.Cut(other, cut.at_least_one)) > 0)


def average_precision_at_k(actual: set, predicted: list, k: int) -> float:
    """AP@k as the graders define it (whale, hotel-id): hits among the first k, each new hit adding hits/(i+1)."""
    score, hits = 0.0, 0
    for i, p in enumerate(predicted[:k]):
        if p in actual and p not in predicted[:i]:
            hits += 1
            score += hits / (i + 1)
    return score / min(len(actual), k) if actual else 0.0


def test_map_at_k_is_the_graders_and_sklearns_ranking_precision():
    pred, y = probs(400, 12, seed=2, signal=0.8)
    top = metrics.ranked(pred, 5)
    expected = np.mean([average_precision_at_k({t}, row.tolist(), 5) for t, row in zip(y, top)])
    assert metrics.score("map@5", pred, y) == pytest.approx(expected)
    # over every class (k = C), one true label per row: sklearn's label ranking average precision
    onehot = np.eye(12)[y]
    assert metrics.score("map@12", pred, y) == pytest.approx(skm.label_ranking_average_precision_score(onehot, pred))
    assert metrics.score("map@1", pred, y) == pytest.approx(metrics.score("accuracy", pred, y))
    assert metrics.score("map@5", pred, y) < metrics.score("map@12", pred, y)


def test_spearman_is_scipys_mean_over_columns():
    rng = np.random.default_rng(3)
    target = rng.random((100, 3))
    pred = target + rng.normal(scale=0.3, size=(100, 3))
    expected = np.mean([stats.spearmanr(pred[:, j], target[:, j]).statistic for j in range(3)])
    assert metrics.score("spearman", pred, target) == pytest.approx(expected)
    assert metrics.score("spearman", pred[:, 0], target[:, 0]) == pytest.approx(stats.spearmanr(pred[:, 0], target[:, 0])[0])
    assert np.isnan(metrics.score("spearman", np.ones(5), target[:5, 0]))  # a constant column: no ranking (NaN, as scipy)


def test_rmsle_is_sklearns_mean_over_columns():
    rng = np.random.default_rng(4)
    target = rng.random((80, 2)) * [0.5, 5.0]
    pred = np.abs(target + rng.normal(scale=0.2, size=(80, 2)))
    expected = np.mean([skm.root_mean_squared_log_error(target[:, j], pred[:, j]) for j in range(2)])
    assert metrics.score("rmsle", pred, target) == pytest.approx(expected)
    assert metrics.score("rmsle", pred[:, :1], target[:, 0]) == pytest.approx(
        skm.root_mean_squared_log_error(target[:, 0], pred[:, 0]))
    assert metrics.better("rmsle", 0.1, 0.2) and not metrics.better("rmsle", 0.3, 0.2)


def banded_area(truth: np.ndarray, score: np.ndarray) -> float:
    """ALASKA2's weighted AUC by integration: the area left of sklearn's ROC curve, (1 - FPR) over TPR, weighted
    2 below TPR 0.4 and 1 above, over 1.4."""
    fpr, tpr, _ = skm.roc_curve(truth, score)
    levels = np.linspace(0, 1, 200_001)
    right = 1 - np.interp(levels, tpr, fpr, left=0.0)  # the curve's leftmost FPR at each TPR: roc_curve's order
    weight = np.where(levels < 0.4, 2.0, 1.0)
    return float(np.trapezoid(right * weight, levels) / 1.4)


def test_weighted_auc_is_alaska2s_banded_area():
    pred, y = probs(500, 2, seed=5, signal=1.0)
    assert metrics.score("weighted_auc", pred, y) == pytest.approx(banded_area(y, pred[:, 1]), abs=1e-4)
    assert metrics.score("weighted_auc", pred[:, 1], y) == metrics.score("weighted_auc", pred, y)
    assert metrics.weighted_auc(y, y.astype(float)) == pytest.approx(1.0)
    assert metrics.weighted_auc(y, 1.0 - y) == pytest.approx(0.0)
    assert metrics.score("weighted_auc", pred, y) != pytest.approx(metrics.score("auc", pred, y), abs=1e-3)  # weighted


def jigsaw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pred (n, 1 + G), target (n, 1 + G)): toxicity shares and identity shares (empty mostly), a model that
    is worse on identity 0's rows."""
    rng = np.random.default_rng(seed)
    toxic = rng.random(n) < 0.3
    identity = rng.random((n, IDENTITIES)) < 0.2
    target = np.column_stack([np.where(toxic, rng.uniform(0.5, 1, n), rng.uniform(0, 0.5, n)),
                              np.where(identity, rng.uniform(0.5, 1, (n, IDENTITIES)), 0.0)])
    noise = np.where(identity[:, 0], 0.5, 0.25)
    pred = np.clip(0.3 * toxic + 0.35 + rng.normal(size=n) * noise, 0, 1)
    return np.column_stack([pred, rng.random((n, IDENTITIES))]), target


def graders_bias_auc(pred: np.ndarray, target: np.ndarray, threshold: float) -> float:
    """MLE-bench's Jigsaw grade, written from its formula with sklearn's roc_auc_score: everything binarized (the
    prediction at the threshold, the answers at 0.5), the power mean p=-5 of each kind over the identities."""
    y, p = (target[:, 0] >= 0.5).astype(int), (pred[:, 0] >= threshold).astype(int)
    kinds = []
    for j in range(1, target.shape[1]):
        s = target[:, j] >= 0.5
        subsets = [s, ((y == 0) & s) | ((y == 1) & ~s), ((y == 1) & s) | ((y == 0) & ~s)]
        kinds.append([skm.roc_auc_score(y[m], p[m]) for m in subsets])
    means = [np.mean(np.array(k) ** -5.0) ** (-1 / 5) for k in zip(*kinds)]
    return 0.25 * skm.roc_auc_score(y, p) + 0.25 * sum(means)


def test_bias_auc_is_the_jigsaw_graders_at_each_threshold():
    pred, target = jigsaw(3000, seed=6)
    thresholds = np.array([0.3, 0.45, 0.5, 0.62])
    values = bias_metrics.bias_auc(pred, target, thresholds)
    for t, value in zip(thresholds, values):
        assert value == pytest.approx(graders_bias_auc(pred, target, t))
    cut, best = metrics.decide("bias_auc", pred, target)
    assert best == pytest.approx(graders_bias_auc(pred, target, cut.threshold)) and best >= values.max() - 1e-12
    assert metrics.score("bias_auc", pred, target) == best
    # the submission: moved so that the grader's cut at 0.5 makes the chosen decisions, the ranking kept
    written = metrics.apply_cut("bias_auc", pred, cut)
    assert ((written[:, 0] >= 0.5) == (pred[:, 0] >= cut.threshold)).all()
    assert (np.argsort(written[:, 0], kind="stable") == np.argsort(pred[:, 0], kind="stable")).all()
    assert written.min() >= 0 and written.max() <= 1
    assert graders_bias_auc(written, target, 0.5) == pytest.approx(best)


def test_bias_auc_leaves_out_an_identity_with_one_class_and_has_no_threshold_without_one():
    pred, target = jigsaw(400, seed=7)
    target[:, 2] = 0.0  # no row mentions identity 2: its AUCs are undefined, and the grader would stop
    one = bias_metrics.bias_auc(pred, target, np.array([0.5]))[0]
    assert one == pytest.approx(graders_bias_auc(np.delete(pred, 2, 1), np.delete(target, 2, 1), 0.5))
    cut, value = metrics.decide("bias_auc", pred, np.zeros_like(target))  # no toxic row: no AUC at all
    assert np.isnan(value) and cut.threshold == 0.5


def narrow(truth: np.ndarray, seed: int, low: float, width: float = 0.0006) -> np.ndarray:
    """Outputs all within `width` above `low` (between two of the 0.01 grid's steps) that rank `truth` with an AUC of
    about 0.9."""
    score = truth + np.random.default_rng(seed).normal(0, 0.6, len(truth))
    return low + width * (score - score.min()) / np.ptp(score)


def test_outputs_in_a_band_narrower_than_the_grid_get_a_cut_inside_it():
    """Seen: every output within 0.0006 of another, rank AUC 0.93: the grid's best cut was outside the band, and the
    submission one label set for every row. The cut is searched among the outputs' own quantiles too."""
    truth = (np.random.default_rng(0).random((400, 3)) < 0.3).astype(np.float32)
    pred = np.stack([narrow(truth[:, k], k, 0.3013) for k in range(3)], 1)
    cut, value = metrics.decide("f1_micro", pred, truth)
    assert pred.min() < cut.threshold < pred.max()
    decided = metrics.binarize(pred, cut) > 0
    assert 0 < decided.mean() < 1  # not one label set for all
    grid = max(metrics.micro_f1(truth > 0.5, metrics.binarize(pred, metrics.Cut(float(t), cut.at_least_one)) > 0)
               for t in metrics.THRESHOLDS)
    assert value > grid + 0.05
    assert metrics.describe_cut("f1_micro", cut) == f"labels above {metrics.threshold_text(cut.threshold)}"
    assert len(metrics.candidates(pred)) <= len(metrics.THRESHOLDS) + metrics.QUANTILES


def test_bias_auc_of_outputs_in_a_narrow_band_moves_a_cut_inside_it_to_the_graders():
    pred, target = jigsaw(2000, seed=8)
    pred[:, 0] = narrow(target[:, 0] >= 0.5, 8, 0.5003)
    cut, best = metrics.decide("bias_auc", pred, target)
    assert pred[:, 0].min() < cut.threshold <= pred[:, 0].max()
    written = metrics.apply_cut("bias_auc", pred, cut)
    assert 0 < (written[:, 0] >= 0.5).mean() < 1  # toxic and not: the grader's cut at 0.5 keeps the chosen decisions
    assert graders_bias_auc(written, target, 0.5) == pytest.approx(best) and best > graders_bias_auc(pred, target, 0.5) + 0.1


def test_new_metrics_are_names_a_config_takes():
    base = {"slug": "x", "template": "cnn"}
    for name in ("macro_f1", "f1_micro", "map@5", "map@12", "spearman", "rmsle", "weighted_auc"):
        assert Spec.from_dict({**base, "metric": name}).metric == name
    assert Spec.from_dict({**base, "metric": "map@5"}).greater_is_better
    assert not Spec.from_dict({**base, "metric": "rmsle"}).greater_is_better
    for wrong in ("map@0", "map@k", "map5", "f1"):
        with pytest.raises(KitError, match=rf"^competition: metric = '{wrong}' is not a metric kit knows \(log_loss, "):
            Spec.from_dict({**base, "metric": wrong})


def test_bias_auc_needs_its_identity_columns_named():
    base = {"slug": "jigsaw", "template": "text", "metric": "bias_auc"}
    with pytest.raises(KitError, match=r"^competition: metric bias_auc needs identity_columns, the training table's "):
        Spec.from_dict(base)
    assert Spec.from_dict({**base, "identity_columns": ["male", "female"]}).identity_columns == ("male", "female")
    with pytest.raises(KitError, match="identity_columns are read by metric bias_auc only"):
        Spec.from_dict({**base, "metric": "auc", "identity_columns": ["male"]})


def test_mask_metrics_score_masks_only_and_masks_are_scored_by_them():
    """A text config with iou would score probabilities as masks (1.0 for any model), and a segmentation config
    with auc would fail after the data loaded: both are one line at the config."""
    for template, metric in (("text", "iou"), ("cnn", "dice"), ("tabular", "map_iou"), ("cnn", "global_dice")):
        with pytest.raises(KitError, match=rf"^competition: metric {metric} scores masks, which only the segmentation "):
            Spec.from_dict({"slug": "s", "template": template, "metric": metric})
    with pytest.raises(KitError, match=r"^competition: metric auc does not score masks: the segmentation template takes "
                                       r"dice, iou, map_iou, global_dice, dice_hausdorff, f05, or rmse for image to image; set "
                                       r"another metric or "
                                       r"template$"):
        Spec.from_dict({"slug": "s", "template": "segmentation", "metric": "auc"})
    for metric in ("dice", "iou", "map_iou", "global_dice", "dice_hausdorff", "rmse"):
        assert Spec.from_dict({"slug": "s", "template": "segmentation", "metric": metric}).metric == metric


def test_the_metrics_drive_early_stopping_in_their_direction():
    for metric in ("macro_f1", "f1_micro", "map@5", "spearman", "weighted_auc", "bias_auc"):
        assert metrics.better(metric, 0.8, 0.7) and not metrics.better(metric, 0.6, 0.7)


def test_a_column_whose_truth_is_constant_leaves_the_correlations_mean():
    """google-quest: a rare target (question_type_spelling) may be 0 in every validation row of a fold; its
    correlation is undefined there, and the other columns still score (not NaN, which stops no epoch)."""
    rng = np.random.default_rng(8)
    target = rng.random((50, 3))
    target[:, 2] = 0.0
    pred = target + rng.normal(scale=0.2, size=(50, 3))
    expected = np.mean([stats.spearmanr(pred[:, j], target[:, j]).statistic for j in range(2)])
    assert metrics.score("spearman", pred, target) == pytest.approx(expected)
    assert np.isnan(metrics.score("spearman", pred, np.zeros((50, 3))))


def test_every_metric_record_resolves_and_the_pages_agree_with_the_table():
    """One table (kit.metric_records.METRICS): each record's scorer resolves and its family is one kit reads; the metrics
    page (docs/config.md) lists each metric but the masks' once, better in the record's direction, and the
    segmentation page names the mask metrics."""
    families = {"probability", "ranking", "ordinal", "value", "label_set", "subgroup", "mask", "span", "box", "text", "edit"}
    for record in metric_records.METRICS.values():
        assert callable(record.scorer()) and record.family in families and record.blend in ("mean", "rank")
    docs = Path(__file__).resolve().parents[2] / "docs"
    page = (docs / "config.md").read_text().split("## Metrics", 1)[1]
    rows = re.findall(r"^\| (`[^|]+`) \| (higher|lower) \|", page, re.M)
    listed = {name: better for names, better in rows for name in re.findall(r"`([^`]+)`", names)}
    assert set(listed) == {m for m in metric_records.METRICS if m not in metric_records.MASK_METRICS}
    assert all((better == "higher") == metric_records.METRICS[m].greater_is_better for m, better in listed.items())
    assert all(f"`{m}`" in (docs / "templates.md").read_text() for m in metric_records.MASK_METRICS)


def graders_jaccard(str1: str, str2: str) -> float:
    """tweet-sentiment-extraction's grade.py, as MLE-bench writes it (its `jaccard`, then `mean_jaccard`)."""
    a = set(str1.lower().split())
    b = set(str2.lower().split())
    c = a.intersection(b)
    return float(len(c)) / (len(a) + len(b) - len(c))


JACCARD_CASES = [("very good", "very good"), ("Very GOOD!", "very good"), ("i  like\tit", "I like it so"),
                 ("", "sad"), ("sad", ""), ("a b c", "d e"), ("ok ok ok", "ok"), (" leading space", "leading"),
                 ("it was, yes", "it was yes")]


def test_jaccard_is_tweet_sentiments_grader_on_shared_cases():
    """Word by word, lower-cased, split on any whitespace, punctuation kept on its word; the mean over rows. The
    validation rows' score (one a window) keeps each example's best-scored window."""
    for a, b in JACCARD_CASES:
        assert jaccard(a, b) == pytest.approx(graders_jaccard(a, b)), (a, b)
    preds, answers = [a for a, _ in JACCARD_CASES], [b for _, b in JACCARD_CASES]
    assert mean_jaccard(preds, answers) == pytest.approx(np.mean([graders_jaccard(a, b) for a, b in JACCARD_CASES]))
    # windows of examples 0, 0, 1, 2, 2: (score, that window's span's Jaccard); the best-scored window counts
    pred = np.array([[1.0, 0.2], [3.0, 0.9], [0.5, 0.4], [-2.0, 1.0], [-1.0, 0.0]])
    assert metrics.score("jaccard", pred, np.array([0, 0, 1, 2, 2])) == pytest.approx((0.9 + 0.4 + 0.0) / 3)
    assert metrics.better("jaccard", 0.8, 0.7)


def test_jaccard_scores_spans_only_and_spans_are_scored_by_it():
    with pytest.raises(KitError, match=r"^competition: metric jaccard scores spans of text, which only the spans "):
        Spec.from_dict({"slug": "s", "template": "text", "metric": "jaccard"})
    with pytest.raises(KitError, match=r"^competition: metric rmse does not score spans of text: the spans template "
                                       r"takes jaccard"):
        Spec.from_dict({"slug": "s", "template": "spans", "metric": "rmse"})


def champs_grade(answers, submission) -> float:
    """MLE-bench's champs-scalar-coupling grade.py, written out: merge on id, group by type, np.log of sklearn's
    MAE in each, their np.mean."""
    merged = answers.merge(submission, on="id", suffixes=("_true", "_pred"))
    return float(np.mean([np.log(skm.mean_absolute_error(g["scalar_coupling_constant_true"], g["scalar_coupling_constant_pred"]))
                          for _, g in merged.groupby("type")]))


def test_group_log_mae_is_champs_graders_mean_over_types_of_the_log_mae():
    import pandas as pd
    rng = np.random.default_rng(11)
    types = rng.choice(["1JHC", "2JHH", "3JHN"], 300, p=[0.6, 0.3, 0.1])
    truth = np.where(types == "1JHC", 90.0, 3.0) + rng.normal(0, 1, 300)
    pred = truth + rng.normal(0, np.where(types == "1JHC", 3.0, 0.3))
    answers = pd.DataFrame({"id": np.arange(300), "type": types, "scalar_coupling_constant": truth})
    submission = pd.DataFrame({"id": rng.permutation(300)}).assign(
        scalar_coupling_constant=lambda f: pred[f["id"].to_numpy()])  # the grader merges on id: any row order
    assert metrics.score("group_log_mae", pred, truth, groups=types) == pytest.approx(champs_grade(answers, submission))
    # every type counts alike: the rare type's MAE weighs as much as the common one's (not a pooled log-MAE)
    assert metrics.score("group_log_mae", pred, truth, groups=types) != pytest.approx(np.log(np.abs(pred - truth).mean()))
    exact = truth.copy()  # a perfect type floors at log(1e-9), Kaggle's floor (the grader's log(0) is -inf)
    assert metrics.score("group_log_mae", exact, truth, groups=types) == pytest.approx(np.log(1e-9))
    with pytest.raises(ValueError, match="scores each \\[data\\] score_groups group apart"):
        metrics.score("group_log_mae", pred, truth)


def osic_grade(answers, submission) -> float:
    """MLE-bench's osic-pulmonary-fibrosis-progression grade.py, written out: its answers' last three weeks with an
    FVC per patient, the submission's rows for them (sorted by Patient_Week), the confidence's NaN read as 0, and
    its laplace_log_likelihood."""
    submission = submission.copy()
    submission["Confidence"] = submission["Confidence"].fillna(0)
    answers = answers.dropna(subset=["FVC"]).copy()
    answers["Week_Number"] = answers["Patient_Week"].apply(lambda x: int(x.split("_")[-1]))
    answers = answers.sort_values("Week_Number").groupby("Patient").tail(3).drop(columns=["Week_Number"])
    submission = submission[submission["Patient_Week"].isin(answers["Patient_Week"])].sort_values(by="Patient_Week")
    answers = answers.sort_values(by="Patient_Week")
    sd = np.maximum(submission["Confidence"].to_numpy(), 70)
    delta = np.minimum(np.abs(answers["FVC"].to_numpy() - submission["FVC"].to_numpy()), 1000)
    return float(np.mean(-np.sqrt(2) * delta / sd - np.log(np.sqrt(2) * sd)))


def test_laplace_is_osics_grader_on_its_scored_rows_with_its_clips():
    import pandas as pd
    rng = np.random.default_rng(12)
    rows = [(f"ID{p:023d}", w) for p in range(6) for w in range(-3, 20)]
    answers = pd.DataFrame(rows, columns=["Patient", "Weeks"])
    answers["Patient_Week"] = answers["Patient"] + "_" + answers["Weeks"].astype(str)
    answers["FVC"] = np.where(rng.random(len(rows)) < 0.4, rng.normal(2500, 600, len(rows)), np.nan)  # the visits
    pred = answers["FVC"].fillna(2500).to_numpy() + rng.normal(0, 400, len(rows)) * (rng.random(len(rows)) < 0.9) \
        + np.where(rng.random(len(rows)) < 0.05, 3000, 0)  # some errors past the 1000 cap
    confidence = rng.choice([20.0, 150.0, 400.0, np.nan], len(rows))  # below the floor of 70, and NaN
    submission = pd.DataFrame({"Patient_Week": answers["Patient_Week"], "FVC": pred, "Confidence": confidence})
    scored = answers.dropna(subset=["FVC"]).assign(w=lambda f: f["Weeks"]).sort_values("w").groupby("Patient").tail(3).index
    rows_pred = np.stack([pred, np.nan_to_num(confidence, nan=0.0)], 1)[scored]
    assert metrics.score("laplace", rows_pred, answers["FVC"].to_numpy()[scored]) == pytest.approx(
        osic_grade(answers, submission))
    # with values alone the confidence is the one that scores the rows best, above the grader's floor
    values, truth = pred[scored], answers["FVC"].to_numpy()[scored]
    best = metrics.score("laplace", values, truth)
    assert all(best >= metrics.score("laplace", np.stack([values, np.full(len(values), c)], 1), truth) - 1e-9
               for c in (70, 100, 200, 300, 500, 800, 1500))
    assert metrics.confidence(np.zeros(10)) == 70.0 and metrics.greater_is_better("laplace")


def chaii_grade(preds: list[str], answers: list[str]) -> float:
    """chaii-hindi-and-tamil-question-answering's grade.py, as MLE-bench writes it: each text's set of lower-cased
    words binarized over every word seen, then scikit-learn's jaccard_score averaged over samples."""
    from sklearn.metrics import jaccard_score
    from sklearn.preprocessing import MultiLabelBinarizer

    y_pred = [set(sentence.lower().split()) for sentence in preds]
    y_true = [set(sentence.lower().split()) for sentence in answers]
    mlb = MultiLabelBinarizer(classes=list(set.union(*y_true, *y_pred)), sparse_output=True)
    return jaccard_score(mlb.fit_transform(y_true), mlb.transform(y_pred), average="samples")


CHAII_CASES = [("१९४७", "१९४७"), ("सन् 1947 में", "1947"), ("महात्मा गांधी", "गांधी"), ("चेन्नई", "மதராசு"),
               ("சென்னை நகரம்", "சென்னை"), ("தமிழ்நாடு  சென்னை\tநகரம்", "சென்னை நகரம் தமிழ்நாடு"), ("", "இந்தியா"),
               ("Delhi दिल्ली", "delhi"), ("a a b", "b")]


def test_jaccard_is_chaiis_grader_on_shared_cases_in_devanagari_and_tamil():
    """chaii's grader computes the same word Jaccard (scikit-learn's per-sample Jaccard of the word sets): kit's
    one `jaccard` record scores both competitions."""
    preds, answers = [a for a, _ in CHAII_CASES], [b for _, b in CHAII_CASES]
    assert mean_jaccard(preds, answers) == pytest.approx(chaii_grade(preds, answers))
    for a, b in CHAII_CASES:  # each beside an exact row (scikit-learn refuses a one-row sparse input)
        assert (jaccard(a, b) + 1) / 2 == pytest.approx(chaii_grade([a, "x"], [b, "x"])), (a, b)


def test_two_texts_without_a_word_score_0_as_scikit_learn_scores_them():
    """The one case the graders part on: chaii's (scikit-learn's jaccard_score) scores two empty texts 0, and
    tweet-sentiment's divides by zero (a crash kit's span cells, each holding a word, never meet). kit scores 0: an
    empty prediction earns nothing, whatever the answer."""
    import warnings

    assert jaccard("", "") == 0.0 and jaccard(" ", "\t") == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns that the empty row's Jaccard is ill-defined
        assert chaii_grade(["", "x y"], ["", "x y"]) == pytest.approx((jaccard("", "") + 1) / 2)
    with pytest.raises(ZeroDivisionError):
        graders_jaccard("", "")


def graders_rle_decode(code: str, height: int, width: int) -> np.ndarray:
    """mlebench.competitions.utils.rle_decode, written out (its asserts aside)."""
    img = np.zeros(height * width, dtype=bool)
    if code.strip():
        s = list(map(int, code.split()))
        for lo, n in zip(np.array(s[0::2]) - 1, s[1::2]):
            img[lo : lo + n] = True
    return img.reshape((width, height)).T


def contrails_grade(sub_codes: list[str], true_codes: list[str], height: int, width: int) -> float:
    """The contrails grader (MLE-bench's grade.py): "-" read as "", every mask decoded, flattened into one array,
    and mlebench.metrics.dice_coefficient of the two (NaN where both are empty)."""
    def decoded(codes):
        return np.array([graders_rle_decode("" if c == "-" else c, height, width) for c in codes]).ravel()
    pred, truth = decoded(sub_codes), decoded(true_codes)
    if pred.sum() == 0 and truth.sum() == 0:
        return float("nan")
    return 2 * float((pred * truth).sum()) / float(pred.sum() + truth.sum())


def test_global_dice_is_the_contrails_graders_over_every_pixel_at_once():
    """Per-image Dice and the grader's global one differ on these masks (an image with one stray pixel scores 0
    on its own and nearly nothing in the pool); kit's global_dice, from each image's overlap counts, is the
    grader's, at 0.5 and at the cut it searches, and predicting empty masks scores 0 where the grader's does."""
    from kit.data import rle
    from kit.train import mask_metrics

    rng = np.random.default_rng(41)
    h, w, n = 24, 20, 12
    truth = np.zeros((n, h, w), bool)
    for i in range(n):
        if i % 3:
            r, c = rng.integers(2, 14, 2)
            truth[i, r : r + 6, c : c + int(rng.integers(2, 6))] = True
    prob = np.clip(truth * 0.7 + rng.normal(0.15, 0.2, truth.shape), 0, 1)
    prob[0, 3, 3] = 0.95  # a stray pixel on an empty truth
    rows = [mask_metrics.statistics(p[None], t[None]) for p, t in zip(prob, truth)]
    pred, target = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
    thresholds, shares = mask_metrics.grids(pred)
    at_half = mask_metrics.grid_scores("global_dice", pred, target)[0, thresholds.index(0.5), 0]
    codes = [rle.encode(p > 0.5) or "-" for p in prob]
    answers = [rle.encode(t) or "-" for t in truth]
    assert at_half == pytest.approx(contrails_grade(codes, answers, h, w))
    assert at_half != pytest.approx(mask_metrics.grid_scores("dice", pred, target)[0, thresholds.index(0.5), 0])
    cuts, best = mask_metrics.decide("global_dice", pred, target)
    cut = [rle.encode(m) or "-" for m in (mask_metrics.apply(p[None], cuts)[0] for p in prob)]
    assert best == pytest.approx(contrails_grade(cut, answers, h, w)) and best >= at_half
    assert mask_metrics.score("global_dice", np.zeros((n, 1)), target) == 0.0 == contrails_grade(["-"] * n, answers, h, w)


# uw-madison's grade.py, written out (its rles_to_masks decoding aside: the masks are given)
def uw_group_masks_by_day(masks, cases_days_slices):
    case_day_slice_to_masks, unique_slices = {}, []
    for mask, case_day_slice in sorted(zip(masks, cases_days_slices), key=lambda x: x[1]):
        if case_day_slice not in case_day_slice_to_masks:
            case_day_slice_to_masks[case_day_slice] = []
            unique_slices.append(case_day_slice)
        case_day_slice_to_masks[case_day_slice].append(mask)
    case_day_to_masks, case_days = {}, []
    for case_day_slice in unique_slices:
        case_day = case_day_slice.split("_slice_")[0]
        if case_day not in case_day_to_masks:
            case_day_to_masks[case_day] = []
            case_days.append(case_day)
        case_day_to_masks[case_day].append(np.logical_or.reduce(case_day_slice_to_masks[case_day_slice]).astype(np.uint8))
    for case_day in case_day_to_masks:
        case_day_to_masks[case_day] = np.stack(case_day_to_masks[case_day], axis=0)
    return [case_day_to_masks[case_day] for case_day in case_days]


def uw_hausdorff_distance(predicted_mask, true_mask):
    from scipy.spatial.distance import directed_hausdorff

    if np.sum(predicted_mask) == 0 and np.sum(true_mask) == 0:
        return np.nan
    elif np.array_equal(predicted_mask, true_mask):
        return 0
    elif (np.sum(predicted_mask) == 0 and np.sum(true_mask) > 0) or (np.sum(predicted_mask) > 0 and np.sum(true_mask) == 0):
        return 1
    if predicted_mask.sum() > 10 * true_mask.sum():
        return 1
    true_coordinates = np.argwhere(true_mask) / true_mask.shape
    predicted_coordinates = np.argwhere(predicted_mask) / true_mask.shape
    h1, _, _ = directed_hausdorff(true_coordinates, predicted_coordinates)
    h2, _, _ = directed_hausdorff(predicted_coordinates, true_coordinates)
    return max(h1, h2) / np.sqrt(3)


def uw_dice_coefficient(predicted_mask, true_mask, both_empty_value=np.nan):
    if np.sum(predicted_mask) == 0 and np.sum(true_mask) == 0:
        return both_empty_value
    return 2 * np.sum(predicted_mask * true_mask) / (np.sum(predicted_mask) + np.sum(true_mask))


def uw_grade(sub_masks, answer_masks, ids):
    dice = np.nanmean([uw_dice_coefficient(s, a) for s, a in zip(sub_masks, answer_masks)])
    hd = np.nanmean([uw_hausdorff_distance(s, a) for s, a in zip(uw_group_masks_by_day(sub_masks, ids),
                                                                  uw_group_masks_by_day(answer_masks, ids))])
    return 0.4 * dice + 0.6 * (1 - hd)


def uw_cases(seed: int, scans: int = 3, slices: int = 6, h: int = 14, w: int = 12):
    """Rows of (slice, class) masks over a few scans: organs as boxes drifting through the slices, predictions the
    boxes moved and grown, some rows empty on both sides, one scan predicted exactly, one predicted empty."""
    rng = np.random.default_rng(seed)
    ids, truth, pred = [], [], []
    for s in range(scans):
        for z in range(slices):
            for _organ in range(3):
                t = np.zeros((h, w), bool)
                if rng.random() < 0.7:
                    r, c = rng.integers(0, h - 5), rng.integers(0, w - 5)
                    t[r : r + int(rng.integers(2, 5)), c : c + int(rng.integers(2, 5))] = True
                p = np.roll(t, tuple(rng.integers(-1, 2, 2)), (0, 1)) | (rng.random((h, w)) < 0.01)
                ids.append(f"case{10 + s}_day{3 + s}_slice_{z + 1:04d}")
                truth.append(t)
                pred.append(t.copy() if s == 1 else np.zeros_like(t) if s == 2 and z < 3 else p)
    order = rng.permutation(len(ids))  # the grader sorts by id: rows in any order
    return [ids[i] for i in order], [pred[i] for i in order], [truth[i] for i in order]


def test_dice_hausdorff_is_the_uw_madison_graders_and_kits_rows_score_its_dice_part():
    from kit.train import mask_metrics, volume_metrics

    for seed in range(4):
        ids, pred, truth = uw_cases(seed)
        assert volume_metrics.grade(pred, truth, ids) == pytest.approx(uw_grade(pred, truth, ids), abs=1e-12)
        rows = [mask_metrics.statistics(p[None].astype(float), t[None], thresholds=(0.5,), shares=(0.0,))
                for p, t in zip(pred, truth)]
        counts, target = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
        dice_part = np.nanmean([uw_dice_coefficient(p, t) for p, t in zip(pred, truth)])
        assert mask_metrics.grid_scores("dice_hausdorff", counts, target)[0, 0, 0] == pytest.approx(dice_part)
    assert volume_metrics.grade(truth, truth, ids) == pytest.approx(1.0)  # every Hausdorff 0, every Dice 1
    empty = [np.zeros_like(t) for t in truth]
    assert volume_metrics.grade(empty, truth, ids) == pytest.approx(uw_grade(empty, truth, ids)) == pytest.approx(0.0)


def graders_birds_auc(sub, answers) -> float:
    """mlsp-2013-birds' grade.py: prepare_for_auroc_metric (both sorted by Id), then one roc_auc_score."""
    sub, answers = sub.sort_values("Id"), answers.sort_values("Id")
    assert (sub["Id"].to_numpy() == answers["Id"].to_numpy()).all()
    return skm.roc_auc_score(y_true=answers["Probability"].to_numpy(), y_score=sub["Probability"].to_numpy())


def test_auc_micro_is_the_birds_graders_over_the_melted_rows():
    """One AUC over every (recording, species) row, not the mean of the species' AUCs (kit's multi-label auc),
    which differs wherever the species' scores sit at different levels."""
    import pandas as pd

    rng = np.random.default_rng(11)
    truth = (rng.random((64, 19)) < 0.15).astype(np.float32)
    truth[0, 0] = truth[1, 0] = 0
    truth[2, 0] = 1
    pred = np.clip(truth * 0.3 + rng.random((64, 19)) * 0.7 + np.linspace(0, 0.3, 19), 0, 1)
    ids = [r * 100 + k for r in range(64) for k in range(19)]
    order = rng.permutation(len(ids))  # the grader sorts; the submission's order is free
    sub = pd.DataFrame({"Id": np.array(ids)[order], "Probability": pred.ravel()[order]})
    answers = pd.DataFrame({"Id": ids, "Probability": truth.ravel().astype(int)})
    value = metrics.score("auc_micro", pred, truth)
    assert value == pytest.approx(graders_birds_auc(sub, answers))
    assert abs(value - metrics.score("auc", pred, truth)) > 0.005
    assert metrics.better("auc_micro", 0.8, 0.7) and metric_records.METRICS["auc_micro"].blend == "mean"
    assert np.isnan(metrics.score("auc_micro", pred, np.zeros_like(truth)))


def calculate_overall_lwlrap_sklearn(truth: np.ndarray, scores: np.ndarray) -> float:
    """freesound-audio-tagging-2019's grade.py (MLE-bench), as written there."""
    sample_weight = np.sum(truth > 0, axis=1)
    nonzero_weight_sample_indices = np.flatnonzero(sample_weight > 0)
    overall_lwlrap = skm.label_ranking_average_precision_score(
        truth[nonzero_weight_sample_indices, :] > 0,
        scores[nonzero_weight_sample_indices, :],
        sample_weight=sample_weight[nonzero_weight_sample_indices],
    )
    return overall_lwlrap


def lwlrap_per_class(truth: np.ndarray, scores: np.ndarray) -> float:
    """lwlrap from its definition (the competition's notebook): each true (row, label)'s precision at its rank,
    averaged over every true label alike."""
    precisions = []
    for row, s in zip(truth > 0, scores):
        order = np.argsort(-s, kind="stable")
        hits = row[order]
        for rank in np.flatnonzero(hits):
            precisions.append(hits[: rank + 1].sum() / (rank + 1))
    return float(np.mean(precisions))


def test_lwlrap_is_the_freesound_graders_and_its_definitions():
    rng = np.random.default_rng(12)
    truth = (rng.random((120, 80)) < 0.02).astype(np.float32)
    truth[np.arange(0, 120, 2), rng.integers(0, 80, 60)] = 1  # most rows a label or more, some none (left out)
    truth[5] = 0
    scores = np.clip(truth * 0.4 + rng.random((120, 80)), 0, None)
    value = metrics.score("lwlrap", scores, truth)
    assert value == pytest.approx(calculate_overall_lwlrap_sklearn(truth, scores))
    assert value == pytest.approx(lwlrap_per_class(truth, scores))
    assert metrics.score("lwlrap", truth, truth) == pytest.approx(1.0)
    assert metrics.better("lwlrap", 0.8, 0.7) and metric_records.METRICS["lwlrap"].blend == "mean"  # ranks within a row


def hms_kl_divergence(solution, submission, epsilon: float = 10**-15) -> float:
    """hms-harmful-brain-activity-classification's kullback_leibler_divergence.score (MLE-bench), as written there,
    micro-averaged without weights; solution and submission are frames of the target columns only."""
    import pandas as pd

    solution, submission = solution.copy(), submission.copy()
    for col in solution.columns:
        if not pd.api.types.is_float_dtype(solution[col]):
            solution[col] = solution[col].astype(float)
        submission[col] = np.clip(submission[col], epsilon, 1 - epsilon)
        y_nonzero_indices = solution[col] != 0
        solution[col] = solution[col].astype(float)
        solution.loc[y_nonzero_indices, col] = solution.loc[y_nonzero_indices, col] * np.log(
            solution.loc[y_nonzero_indices, col] / submission.loc[y_nonzero_indices, col]
        )
        solution.loc[~y_nonzero_indices, col] = 0
    return np.average(solution.sum(axis=1), weights=None)


def test_kl_div_is_the_hms_graders_on_its_examples_and_on_votes():
    import pandas as pd

    # the scorer's docstring examples
    ham = pd.DataFrame({"ham": [0, 1, 1, 0], "spam": [1, 0, 0, 1]})
    pred = np.array([[.1, .9], [.9, .1], [.8, .2], [.35, .65]])
    assert metrics.score("kl_div", pred, ham.to_numpy(float)) == pytest.approx(0.216161, abs=1e-6)
    truth = np.array([[0, 0.1, 0.9], [0.5, 0.5, 0], [0.5, 0.5, 0]])
    assert metrics.score("kl_div", truth, truth) == pytest.approx(0.0)
    guess = np.array([[0.2, 0.1, 0.7], [0.3, 0.5, 0.2], [0.5, 0.5, 0]])
    assert metrics.score("kl_div", guess, truth) == pytest.approx(0.160531, abs=1e-6)
    # votes of six classes as the grader normalises them (vote / the row's votes), predictions with zeros and ones
    rng = np.random.default_rng(3)
    votes = rng.integers(0, 4, (200, 6)) * (rng.random((200, 6)) < 0.5)
    votes[votes.sum(1) == 0, 0] = 1
    target = votes / votes.sum(1, keepdims=True)
    pred = rng.dirichlet(np.ones(6), 200)
    pred[:5] = np.eye(6)[rng.integers(0, 6, 5)]  # certain rows, some wrong: the clipping at 1e-15 decides them
    columns = [f"c{i}" for i in range(6)]
    graded = hms_kl_divergence(pd.DataFrame(target, columns=columns), pd.DataFrame(pred, columns=columns))
    assert metrics.score("kl_div", pred, target) == pytest.approx(graded, rel=1e-9)
    assert not metrics.better("kl_div", 0.5, 0.4) and metric_records.METRICS["kl_div"].soft
