"""Submission shapes beyond `id + targets`: pass-through and blank-headed index columns, rows matched by order,
top-k labels, regression within range. Each checked as the competition's grader checks it."""
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from kit import templates
from kit.errors import KitError
from kit.pipelines import base
from kit.pipelines.base import submission_frame, validate
from kit.spec import Spec
from kit.train import mask_kinds, metrics, targets  # mask_kinds: segmentation's kinds, registered as its run registers them
from kit.train.objectives import Regression, moments


def graded(sub: pd.DataFrame) -> pd.DataFrame:
    """The submission as a grader reads it back (mlebench.utils.read_csv)."""
    return pd.read_csv(io.StringIO(sub.to_csv(index=False)))


def spec(**data) -> Spec:
    return Spec.from_dict({"slug": "x", "template": "text", **data})


def test_a_blank_headed_index_column_is_copied_through_and_written_blank():
    """iwildcam-2019: the sample was written with pandas' index, header `,Id,Category`."""
    sample = pd.read_csv(io.StringIO(",Id,Category\n7,a1,0\n3,b2,0\n"), dtype={"Id": str})
    assert list(sample.columns) == ["Unnamed: 0", "Id", "Category"]
    columns = base.sample_targets(sample, spec(id_column="Id"), Path("sample_submission.csv"))
    assert columns == ["Category"]
    target = targets.Target("label", ("Category",), (0, 4, 22))
    sub = submission_frame(sample, target, np.eye(3)[[2, 1]])
    validate(sub, sample, target, "Id")
    text = base.csv_text(sub)
    assert text.splitlines() == [",Id,Category", "7,a1,22", "3,b2,4"]  # the sample's header and index, as it had them
    assert graded(sub)["Category"].map(int).tolist() == [22, 4]  # the grader's int() of each


def test_columns_the_test_table_holds_are_copied_through_and_rows_match_by_order_without_an_id():
    """detecting-insults: the sample is `Insult,Date,Comment` (no id: its rows are test.csv's, in order), the
    test table `Date,Comment`; only Insult is predicted, Date and Comment stay as the sample has them."""
    sample = pd.DataFrame({"Insult": [0, 0, 0], "Date": ["20120618192155Z", np.nan, "20120619094753Z"],
                           "Comment": ['"you are"', '"nice"', '"you are"']})  # a comment may repeat
    data = spec(id_column="", target_column="Insult", metric="auc")
    columns = base.sample_targets(sample, data, Path("sample_submission_null.csv"), ["Date", "Comment"])
    assert columns == ["Insult"]
    target = targets.infer("auc", pd.Series([0, 1, 1, 0]), columns, "train.csv, column 'Insult'")
    sub = submission_frame(sample, target, np.array([[0.2, 0.8], [0.9, 0.1], [0.4, 0.6]]))
    validate(sub, sample, target, "")
    back = graded(sub)
    assert list(back.columns) == ["Insult", "Date", "Comment"] and back["Insult"].tolist() == [0.8, 0.1, 0.6]
    assert back["Comment"].tolist() == sample["Comment"].tolist() and back["Date"].isna().tolist() == [False, True, False]
    with pytest.raises(KitError, match=r"^submission has 2 rows, the sample submission 3$"):
        validate(sub.iloc[:2], sample, target, "")


def test_submission_columns_name_the_targets_where_inference_cannot():
    sample = pd.DataFrame({"Insult": [0], "Date": ["x"], "Comment": ["y"]})
    assert base.sample_targets(sample, spec(id_column="", submission_columns=["Insult"]), Path("s.csv")) == ["Insult"]
    assert base.sample_targets(sample, spec(id_column=""), Path("s.csv")) == ["Insult", "Date", "Comment"]  # no test table
    with pytest.raises(KitError, match=r"^s.csv: no column 'insult' \(it has: Insult, Date, Comment\); fix \[data\] "
                                       r"submission_columns in the config$"):
        base.sample_targets(sample, spec(id_column="", submission_columns=["insult"]), Path("s.csv"))
    with pytest.raises(KitError, match=r"^s.csv: 'Comment' is the id column and in \[data\] submission_columns"):
        base.sample_targets(sample, spec(id_column="Comment", submission_columns=["Insult", "Comment"]), Path("s.csv"))
    with pytest.raises(KitError, match=r"^s.csv: its other columns \(Date\) are in the test table or unnamed; the sample "
                                       r"submission needs target columns \(name them in \[data\] submission_columns\)$"):
        base.sample_targets(sample[["Comment", "Date"]], spec(id_column="Comment"), Path("s.csv"), ["Date", "Comment"])


def map5(sub: pd.DataFrame, answers: list, column: str) -> float:
    """MAP@5 as whale's and hotel-id's graders read a submission: str(cell).split(" "), the answer a set of one."""
    scores = []
    for cell, answer in zip(sub[column], answers):
        predicted = str(cell).split(" ")
        hits = [i for i, p in enumerate(predicted[:5]) if p == str(answer) and p not in predicted[:i]]
        scores.append(1 / (hits[0] + 1) if hits else 0.0)
    return float(np.mean(scores))


def test_mask_files_a_submission_names_must_be_in_the_output_folder(tmp_path):
    sample = pd.DataFrame({"id": ["a", "b"], "mask": ["masks/a.png", "masks\\b.png"]})
    target = targets.Target("files", ("mask",), ["mask"])
    (tmp_path / "masks").mkdir()
    (tmp_path / "masks" / "a.png").write_bytes(b"png")
    with pytest.raises(KitError, match=r"^1 of the 2 mask files the submission names are not in .* \(such as masks\\b\.png\)$"):
        validate(sample.copy(), sample, target, "id", tmp_path)
    (tmp_path / "masks" / "b.png").write_bytes(b"png")  # written where the sample's Windows name says
    validate(sample.copy(), sample, target, "id", tmp_path)


def test_top_k_labels_are_written_best_first_and_score_as_the_grader_scores_them():
    """hotel-id-2021: `image,hotel_id` with five hotel ids, best first, written as integers (123.0 never matches)."""
    hotels = pd.Series([36363, 53586, 18807, 64314, 60181, 7, 1200] * 3)
    target = targets.infer("map@5", hotels, ["hotel_id"], "train.csv, column 'hotel_id'")
    assert (target.kind, target.top, target.outputs) == ("label", 5, 7)
    y = targets.encode(target, hotels)
    rng = np.random.default_rng(3)
    pred = rng.random((21, 7)) + 0.5 * np.eye(7)[y]
    sample = pd.DataFrame({"image": [f"{i:016x}.jpg" for i in range(21)], "hotel_id": "36363 53586 18807 64314 60181"})
    sub = submission_frame(sample, target, pred)
    validate(sub, sample, target, "image")
    cells = sub["hotel_id"].str.split(" ")
    assert (cells.map(len) == 5).all() and cells.map(lambda c: len(set(c)) == 5).all()
    assert cells[0][0] == str(target.classes[pred[0].argmax()]) and "." not in sub["hotel_id"][0]
    assert map5(graded(sub), hotels.tolist(), "hotel_id") == pytest.approx(metrics.score("map@5", pred, y))
    with pytest.raises(KitError, match=r"^submission holds labels that are not classes: \['99'\]"):
        validate(sub.assign(hotel_id="99 7 1200 36363 53586"), sample, target, "image")


def test_a_regression_is_clipped_to_the_training_range_or_the_stated_one():
    """petfinder: Pawpularity in [1, 100], the grader refuses anything outside; nomad2018: no negative values."""
    scores = pd.Series([1.0, 35.0, 100.0, 50.0])
    target = targets.infer("rmse", scores, ["Pawpularity"], "train.csv")
    assert target.limits == ((1.0, 100.0),)
    assert targets.to_columns(target, np.array([[-3.0], [40.0], [130.0]]))["Pawpularity"].tolist() == [1.0, 40.0, 100.0]
    stated = targets.infer("rmse", scores, ["Pawpularity"], "train.csv", target_range=(0.0, 120.0))
    assert targets.to_columns(stated, np.array([[-3.0], [130.0]]))["Pawpularity"].tolist() == [0.0, 120.0]
    table = pd.DataFrame({"id": [1, 2, 3], "formation": [0.1, 0.3, 0.2], "bandgap": [1.0, 5.0, 2.0]})
    both = targets.multi("rmsle", table, ["formation", "bandgap"], "target", "train.csv")
    assert both.kind == "values" and both.limits == ((0.1, 0.3), (1.0, 5.0))
    wide = targets.multi("rmsle", table, ["formation", "bandgap"], "target", "train.csv", target_range=(-1.0, 10.0))
    assert wide.limits == ((0.0, 10.0), (0.0, 10.0))  # never below 0 under rmsle: its grader refuses a negative
    values = targets.to_columns(wide, np.array([[-0.2, 11.0]]))
    assert (values["formation"][0], values["bandgap"][0]) == (0.0, 10.0)
    with pytest.raises(KitError, match=r"^train.csv, column 'formation': -0.5 \(row 3\) is negative; metric rmsle scores "):
        targets.multi("rmsle", table.assign(formation=[0.1, -0.5, 0.2]), ["formation", "bandgap"], "target", "train.csv")


def test_the_regression_objective_clips_and_regresses_logs_under_rmsle():
    y = np.array([[0.0, 1.0], [3.0, 10.0], [1.0, 4.0]])
    mean, std = moments(y, "rmsle")
    assert mean == pytest.approx(np.log1p(y).mean(0).tolist()) and std == pytest.approx(np.log1p(y).std(0).tolist())
    objective = Regression(mean, std, "rmsle", limits=((0.0, 3.0), (1.0, 10.0)))
    out = torch.tensor([[0.0, 0.0], [5.0, -5.0]])
    pred = objective.predict(out)
    assert pred[0].tolist() == pytest.approx(np.expm1(mean).tolist(), rel=1e-5)  # output 0: the mean log
    assert pred[1].tolist() == [3.0, 1.0]  # clipped to each column's range
    batch = {"image": torch.zeros(2), "target": torch.tensor([[1.0, 4.0], [0.0, 1.0]])}
    loss = objective(lambda x: out, batch)["loss"]
    scaled = (torch.log1p(batch["target"]) - torch.tensor(mean)) / torch.tensor(std)
    assert float(loss) == pytest.approx(float(torch.nn.functional.mse_loss(out, scaled)), rel=1e-5)


def test_target_range_and_folds_keys_are_checked_in_one_line():
    with pytest.raises(KitError, match=r"^competition: target_range = \(100.0, 1.0\) must be \[low, high\] with low below high"):
        spec(target_range=[100, 1])
    assert spec(target_range=[1, 100]).target_range == (1.0, 100.0)
    with pytest.raises(KitError, match=r"^competition: group_column and fold_column are both set; the folds come from one"):
        spec(group_column="patient", fold_column="fold")


def test_fold_and_group_columns_and_identities_are_checked_in_one_line():
    table = pd.DataFrame({"id": ["a", "b", "c"], "patient": ["p1", None, "p2"], "fold": [0, 0, 0], "target": [0.1, 0.9, 0.4]})
    with pytest.raises(KitError, match=r"^train.csv: no column 'subject' \(it has: id, patient, fold, target\); fix \[data\] "
                                       r"group_column in the config$"):
        base.fold_keys(spec(group_column="subject"), table, Path("train.csv"))
    with pytest.raises(KitError, match=r"^train.csv: group_column 'patient' is empty in row 3 \(1 such rows\); give every "
                                       r"training row its group$"):
        base.fold_keys(spec(group_column="patient"), table, Path("train.csv"))
    with pytest.raises(KitError, match=r"^train.csv: fold_column 'fold' holds one fold \('0'\) for every row; it needs two"):
        base.fold_keys(spec(fold_column="fold"), table, Path("train.csv"))
    groups, folds = base.fold_keys(spec(fold_column="fold"), table.assign(fold=[1, 0, 1]), Path("train.csv"))
    assert groups is None and folds.tolist() == ["1", "0", "1"]
    with pytest.raises(KitError, match=r"^train.csv: no column 'male' for metric bias_auc \(1 such\); fix target_column or "
                                       r"identity_columns in \[data\]$"):
        targets.multi("bias_auc", table, ["prediction"], "target", "train.csv", identities=("male",))
    with pytest.raises(KitError, match=r"^train.csv: metric bias_auc scores one probability column, but the sample "):
        targets.multi("bias_auc", table, ["prediction", "toxicity"], "target", "train.csv", identities=("patient",))
    with pytest.raises(KitError, match=r"^train.csv, column 'target': 1.5 \(row 3\) is not a probability in \[0, 1\]"):
        targets.multi("bias_auc", table.assign(target=[0.1, 1.5, 0.0], male=np.nan), ["prediction"], "target", "train.csv",
                      identities=("male",))


def test_bias_auc_learns_the_identities_as_outputs_and_writes_one_column():
    table = pd.DataFrame({"id": [1, 2, 3], "target": [0.8, 0.0, 0.3], "male": [np.nan, 1.0, 0.6], "muslim": [np.nan] * 3})
    target = targets.multi("bias_auc", table, ["prediction"], "target", "train.csv", identities=("male", "muslim"))
    assert (target.kind, target.columns, target.outputs, target.multilabel) == ("multi", ("prediction",), 3, True)
    assert targets.encode(target, table).ravel().tolist() == pytest.approx([0.8, 0, 0, 0, 1, 0, 0.3, 0.6, 0])  # empty: 0
    sub = submission_frame(pd.DataFrame({"id": [7, 8], "prediction": 0.0}), target, np.array([[0.7, 0.1, 0.2], [0.2, 0.9, 0.0]]))
    assert sub.columns.tolist() == ["id", "prediction"] and sub["prediction"].tolist() == [0.7, 0.2]


def test_a_ranking_metric_is_not_clipped_unless_a_range_is_stated():
    """Under spearman only the order counts: clipping to the training range would tie the predictions beyond it."""
    table = pd.DataFrame({"qa_id": [1, 2, 3], "a": [0.0, 0.5, 1.0], "b": [0.3, 0.3, 0.6]})
    assert targets.multi("spearman", table, ["a", "b"], "target", "train.csv").limits == ()
    stated = targets.multi("spearman", table, ["a", "b"], "target", "train.csv", target_range=(0.0, 1.0))
    assert stated.limits == ((0.0, 1.0),) * 2
    one = targets.infer("spearman", table["b"], ["b"], "t")
    assert targets.to_columns(one, np.array([[1.4], [-0.2]]))["b"].tolist() == [1.4, -0.2]


def test_every_target_kind_is_one_record_whose_check_resolves():
    """One table (kit.train.targets.KINDS): each kind's submission check is one validate knows or a function its
    mask room holds; the mask kinds are the three the segmentation template makes (and registers from its own rooms,
    kit.train.mask_kinds), the others its to_columns writes as the sample's columns."""
    for kind in targets.KINDS.values():
        assert kind.check in ("names", "distribution", "probability", "numbers") or callable(templates.load(kind.check))
    from kit.train import box_kinds  # detection's: a row of boxes per image, written by its own rooms
    boxes = {box_kinds.BOXES.name, box_kinds.NOTHING.name, box_kinds.NAMED.name, box_kinds.POINTS.name}
    assert {k.name for k in targets.KINDS.values() if k.masks} - boxes == {"pixels", "files", "rle"} == {
        k.name for k in (mask_kinds.PIXELS, mask_kinds.FILES, mask_kinds.RLE)}
    made = (Path(__file__).resolve().parents[2] / "kit" / "pipelines" / "segmentation_data.py").read_text()
    assert all(f'Target(mask_kinds.{name.upper()}.name' in made for name in ("pixels", "files", "rle"))
    target = targets.Target("binary", ("p",), (0, 1))
    assert list(targets.to_columns(target, np.array([[0.3, 0.7]]))) == ["p"] and target.record.ranks
