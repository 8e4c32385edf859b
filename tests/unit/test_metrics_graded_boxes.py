"""The box metrics (kit.train.box_metrics, family "box") against MLE-bench's graders written out in box_graders.py,
on shared cases: the sample submissions ("14 1 0 0 1 1", "none 1 0 0 1 1", "negative 1 0 0 1 1"), the gold ones,
noisy boxes of several classes, ties in confidence, empty predictions, pages without characters. The submissions
are read by kit's parsers, the answers by them too."""
import numpy as np
import pandas as pd
import pytest

from kit import metric_records
from kit.data.box_strings import detections_string, parse_detections, parse_groups, parse_points
from kit.data.boxes import ImageBoxes, corners
from kit.errors import KitError
from kit.spec import Spec
from kit.train import metrics
from tests.unit import box_graders

SEEDS = range(6)


def records(frame: pd.DataFrame, id_column: str, column: str) -> list[ImageBoxes]:
    out = []
    for row, (image_id, text) in enumerate(zip(frame[id_column], frame[column])):
        labels, scores, boxes = parse_detections(text, row + 2, column)
        out.append(ImageBoxes(str(image_id), boxes, np.array(labels), scores.astype(np.float32)))
    return out


def noisy(rng: np.random.Generator, truth: list[tuple], classes: list, empty: str, tie: bool) -> str:
    """Some true boxes moved a little, some dropped, some wrong boxes and classes; confidences tied where `tie`."""
    parts = []
    for label, box in truth:
        if rng.random() < 0.8:
            conf = 0.5 if tie else round(float(rng.random()), 3)
            parts.append((label, conf, np.asarray(box) + rng.normal(scale=6, size=4)))
    for _ in range(rng.integers(0, 4)):
        x, y = rng.uniform(0, 200, 2)
        parts.append((classes[rng.integers(len(classes))], 0.5 if tie else round(float(rng.random()), 3),
                      np.array([x, y, x + rng.uniform(-5, 80), y + rng.uniform(5, 80)])))
    if not parts:
        return empty
    return detections_string([p[0] for p in parts], np.array([p[1] for p in parts]), np.array([p[2] for p in parts]))


# -- vinbigdata: coco_map40 ----------------------------------------------------------------------------------------
def vinbigdata_case(seed: int) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for i in range(8):
        image = f"img{i}"
        if rng.random() < 0.3:  # no finding: the answers' 0 0 1 1 box
            rows.append((image, 14, 0.0, 0.0, 1.0, 1.0))
            truth[image] = [(14, (0, 0, 1, 1))]
            continue
        truth[image] = []
        for c in rng.choice(4, rng.integers(1, 3), replace=False):
            x, y = rng.uniform(0, 150, 2)
            box = (round(x, 1), round(y, 1), round(x + rng.uniform(20, 90), 1), round(y + rng.uniform(20, 90), 1))
            rows.append((image, int(c), *box))
            truth[image].append((int(c), box))
    answers = pd.DataFrame(rows, columns=["image_id", "class_id", "x_min", "y_min", "x_max", "y_max"])
    images = list(answers["image_id"].unique())
    sample = pd.DataFrame({"image_id": images, "PredictionString": "14 1 0 0 1 1"})
    gold = pd.DataFrame({"image_id": images, "PredictionString": [
        detections_string([c for c, _ in truth[i]], np.ones(len(truth[i])), np.array([b for _, b in truth[i]]))
        for i in images]})
    subs = [sample, gold]
    for tie in (False, True):
        subs.append(pd.DataFrame({"image_id": images, "PredictionString": [
            noisy(rng, truth[i], [0, 1, 2, 3, 14], "14 1 0 0 1 1", tie) + (" 14 0.3 0 0 1 1" if rng.random() < 0.5 else "")
            for i in images]}))
    return answers, subs


def vinbigdata_truth(answers: pd.DataFrame) -> list[ImageBoxes]:
    return [ImageBoxes(str(i), rows[["x_min", "y_min", "x_max", "y_max"]].to_numpy(np.float32),
                       rows["class_id"].to_numpy(np.int64)) for i, rows in answers.groupby("image_id", sort=False)]


def as_ids(images: list[ImageBoxes]) -> list[ImageBoxes]:
    return [ImageBoxes(b.image_id, b.boxes, b.labels.astype(float).astype(np.int64), b.scores) for b in images]


@pytest.mark.parametrize("seed", SEEDS)
def test_coco_map40_is_vinbigdatas_grader_on_shared_cases(seed):
    answers, subs = vinbigdata_case(seed)
    truth = vinbigdata_truth(answers)
    for sub in subs:
        expected = box_graders.vinbigdata_grade(sub, answers.copy())
        got = metrics.score("coco_map40", as_ids(records(sub, "image_id", "PredictionString")), truth)
        assert got == pytest.approx(expected, abs=1e-12), sub["PredictionString"].tolist()


def test_coco_map40_reads_corners_as_widths_and_id_0_as_no_match():
    """The grader's two readings that a plain mAP@0.4 lacks: a box spans x_min .. x_min + x_max (a prediction right
    in corners but not in that reading misses), and the first truth box, matched, still counts its match as a miss."""
    truth = [ImageBoxes("a", np.array([[10, 10, 20, 20], [100, 100, 150, 150]], np.float32), np.array([0, 0]))]
    exact = [ImageBoxes("a", truth[0].boxes.copy(), np.array([0, 0]), np.array([0.9, 0.8], np.float32))]
    answers = pd.DataFrame([("a", 0, 10, 10, 20, 20), ("a", 0, 100, 100, 150, 150)],
                           columns=["image_id", "class_id", "x_min", "y_min", "x_max", "y_max"])
    sub = pd.DataFrame({"image_id": ["a"], "PredictionString": ["0 0.9 10 10 20 20 0 0.8 100 100 150 150"]})
    assert metrics.score("coco_map40", exact, truth) == pytest.approx(box_graders.vinbigdata_grade(sub, answers))
    assert metrics.score("coco_map40", exact, truth) < 1.0  # a perfect submission does not score 1


# -- siim-covid19: voc_map50 ----------------------------------------------------------------------------------------
def siim_case(seed: int) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    rng = np.random.default_rng(100 + seed)
    studies = ["negative", "typical", "indeterminate", "atypical"]
    answers, truth = [], {}
    for s in range(4):
        answers.append((f"s{s}_study", f"{studies[rng.integers(4)]} 1 0 0 1 1"))
        for i in range(2):
            image = f"s{s}i{i}_image"
            n = rng.integers(0, 3)
            boxes = []
            for _ in range(n):
                x, y = rng.uniform(0, 200, 2)
                boxes.append(("opacity", (x, y, x + rng.uniform(30, 120), y + rng.uniform(30, 120))))
            truth[image] = boxes
            answers.append((image, detections_string(["opacity"] * n, np.ones(n), np.array([b for _, b in boxes]),
                                                     empty="none 1 0 0 1 1")))
    answers = pd.DataFrame(answers, columns=["id", "PredictionString"])
    sample = answers.assign(PredictionString=[
        "negative 1 0 0 1 1" if i.endswith("_study") else "none 1 0 0 1 1" for i in answers["id"]])
    subs = [sample, answers.copy()]
    for tie in (False, True):
        subs.append(answers.assign(PredictionString=[
            " ".join(f"{c} {0.5 if tie else round(float(p), 2)} 0 0 1 1" for c, p in zip(studies, rng.dirichlet(np.ones(4))))
            if i.endswith("_study") else
            noisy(rng, truth[i], ["opacity"], "none 0.6 0 0 1 1", tie) + (" none 0.2 0 0 1 1" if rng.random() < 0.5 else "")
            for i in answers["id"]]))
    return answers, subs


@pytest.mark.parametrize("seed", SEEDS)
def test_voc_map50_is_siims_grader_with_study_rows_beside_image_rows(seed):
    answers, subs = siim_case(seed)
    for sub in subs:
        expected = box_graders.siim_grade(sub.copy(), answers.copy())
        order = np.argsort(answers["id"].to_numpy(), kind="stable")
        got = metrics.score("voc_map50", [records(sub, "id", "PredictionString")[k] for k in order],
                            [records(answers, "id", "PredictionString")[k] for k in order])
        assert got == pytest.approx(expected, abs=1e-12), sub["PredictionString"].tolist()


# -- kuzushiji: centre_f1 ---------------------------------------------------------------------------------------------
def kuzushiji_case(seed: int) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    rng = np.random.default_rng(200 + seed)
    codes = ["U+003F", "U+FF2F", "U+304A"]
    truth, preds, noisy_preds = [], [], []
    for _ in range(6):
        n = rng.integers(0, 5)
        boxes = [(codes[rng.integers(3)], *rng.integers(0, 300, 2), *rng.integers(5, 40, 2)) for _ in range(n)]
        truth.append(" ".join(" ".join(map(str, b)) for b in boxes) if n else np.nan)
        preds.append(" ".join(f"{c} {x + w // 2} {y + h // 2}" for c, x, y, w, h in boxes) if n else np.nan)
        extra = [(codes[rng.integers(3)], x + rng.integers(-10, 30), y + rng.integers(-10, 30)) for _, x, y, *_ in boxes]
        extra += [(c, x + 1, y + 1) for c, x, y, *_ in boxes[:1]]  # two centres in one box: the first is used
        noisy_preds.append(" ".join(" ".join(map(str, p)) for p in extra) if extra else np.nan)
    solution = pd.DataFrame({"image_id": [f"p{i}" for i in range(6)], "labels": truth})
    sample = solution.assign(labels="U+003F 1 1 U+FF2F 2 2")
    return solution, [sample, solution.assign(labels=preds), solution.assign(labels=noisy_preds),
                      solution.assign(labels=np.nan)]


@pytest.mark.parametrize("seed", SEEDS)
def test_centre_f1_is_kuzushijis_grader_on_shared_cases(seed):
    solution, subs = kuzushiji_case(seed)
    truth = []
    for row, text in enumerate(solution["labels"]):
        labels, numbers = parse_groups(text, 5, row + 2, "labels", "train.csv")
        truth.append(ImageBoxes(f"p{row}", corners(numbers), np.array(labels, dtype=object)))
    for sub in subs:
        pred = []
        for row, text in enumerate(sub["labels"]):
            labels, centres = parse_points(text, row + 2)
            pred.append(ImageBoxes(f"p{row}", np.tile(centres, 2).astype(np.float32), np.array(labels, dtype=object)))
        assert metrics.score("centre_f1", pred, truth) == pytest.approx(box_graders.kuzushiji_grade(sub, solution))


def test_box_metrics_are_records_of_the_box_family_that_only_the_detection_template_takes():
    assert metric_records.BOX_METRICS == ("coco_map40", "voc_map50", "centre_f1")
    assert all(metric_records.METRICS[m].greater_is_better for m in metric_records.BOX_METRICS)
    with pytest.raises(KitError, match=r"metric voc_map50 scores boxes on images, which only the detection template"):
        Spec.from_dict({"slug": "s", "template": "cnn", "metric": "voc_map50"})
