"""The detection template's own steps on small arrays: packed box rows scored as the box metrics score ImageBoxes,
the nothing-found class read from the sample and added to every image's rows, folds' boxes fused (not averaged), the
model's transform leaving kit's size alone, and a training step's loss the sum of the detector's."""
import numpy as np
import pandas as pd
import torch

from kit.data.boxes import ImageBoxes
from kit.pipelines import detection_data
from kit.train import box_metrics, metrics
from kit.train.box_metrics import unpack
from kit.train.detection import Detection, fuse_views, pack, with_nothing


def test_packed_rows_score_as_the_image_boxes_they_hold():
    truth = [ImageBoxes("a", np.array([[10, 10, 40, 40]], np.float32), np.array([0])),
             ImageBoxes("b", np.zeros((0, 4), np.float32), np.zeros(0, np.int64))]
    pred = [ImageBoxes("a", np.array([[11, 9, 41, 40], [60, 60, 70, 70]], np.float32), np.array([0, 0]),
                       np.array([0.9, 0.2], np.float32)),
            ImageBoxes("b", np.array([[5, 5, 9, 9]], np.float32), np.array([0]), np.array([0.3], np.float32))]
    p = pack([(x.boxes, x.scores, x.labels) for x in pred], 4)
    t = pack([(x.boxes, np.ones(len(x.labels), np.float32), x.labels) for x in truth], 2)[..., [0, 1, 2, 3, 5]]
    back_p, back_t = unpack(p, t)
    assert [len(x.labels) for x in back_p] == [2, 1] and [len(x.labels) for x in back_t] == [1, 0]
    for metric in ("coco_map40", "voc_map50", "centre_f1"):
        assert metrics.score(metric, p, t) == box_metrics.score(metric, pred, truth)


def test_the_sample_names_its_nothing_class_and_every_image_carries_it():
    sample = pd.DataFrame({"image_id": ["a", "b"], "PredictionString": "14 1 0 0 1 1"})
    assert detection_data.nothing_class(sample, "PredictionString", tuple(map(str, range(14))))[0] == 14
    plain = pd.DataFrame({"image_id": ["a"], "labels": [""]})
    assert detection_data.nothing_class(plain, "labels", ("U+0041",))[0] == -1
    boxes, scores, labels = with_nothing(np.array([[1, 2, 3, 4]], np.float32), np.array([0.8], np.float32),
                                         np.array([3]), 14)
    assert labels.tolist() == [3, 14] and np.allclose(scores, [0.8, 0.2]) and boxes[1].tolist() == [0, 0, 1, 1]


def test_two_folds_boxes_of_one_object_fuse_into_one_and_a_box_one_fold_saw_loses_half_its_confidence():
    one = {"boxes": np.array([[10, 10, 30, 30], [50, 50, 60, 60]], np.float32), "scores": np.array([0.8, 0.6], np.float32),
           "labels": np.array([1, 1])}
    two = {"boxes": np.array([[12, 10, 32, 30]], np.float32), "scores": np.array([0.8], np.float32), "labels": np.array([1])}
    boxes, scores, labels = fuse_views([one, two], iou=0.5, keep=10)
    assert len(boxes) == 2 and np.allclose(boxes[0], [11, 10, 31, 30]) and np.allclose(scores, [0.8, 0.3])


def test_the_detector_keeps_kits_size_and_its_loss_is_the_sum_of_its_losses():
    from kit.models import detection

    torch.manual_seed(0)
    model = detection.create("test_resnet.r160_in1k", 2, 64, max_detections=5)
    images = torch.rand(2, 3, 64, 64)
    resized, _ = model.transform(list(images))
    assert resized.tensors.shape[-2:] == (64, 64)  # normalised and batched, not resized
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the box coders decode float32 deltas under mixed precision
        scores, deltas = model.roi_heads.box_predictor(torch.rand(3, detection.HEAD))
        logits, rpn_deltas = model.rpn.head([torch.rand(1, detection.FPN_CHANNELS, 8, 8)])
    assert {scores.dtype, deltas.dtype, logits[0].dtype, rpn_deltas[0].dtype} == {torch.float32}
    batch = {"image": images, "boxes": torch.tensor([[[8.0, 8, 40, 40]], [[0, 0, 0, 0]]]),
             "labels": torch.tensor([[1], [-1]]), "scale": torch.tensor([[2.0, 2.0], [1.0, 1.0]])}
    objective = Detection(64, 2, tta=True, iou=0.55, keep=5, truth_width=2)
    model.train()
    out = objective(model, batch)
    assert out["loss"].requires_grad and out["loss"] > 0
    model.eval()
    with torch.no_grad():
        found = objective(model, batch)["output"]
    rows = objective.rows(found, batch)
    assert rows["pred"].shape == (2, 6, 6) and rows["target"].shape == (2, 2, 5)
    t = rows["target"].numpy()
    assert t[0, 0].tolist() == [16, 16, 80, 80, 1] and t[1, 0].tolist() == [0, 0, 1, 1, 2]  # original pixels; nothing


def test_a_validation_batch_has_the_training_loss_without_touching_the_model():
    """torchvision's detectors return detections in eval mode and no loss: validation printed a loss of 0."""
    from kit.models import detection

    torch.manual_seed(0)
    model = detection.create("test_resnet.r160_in1k", 2, 64, max_detections=5)
    batch = {"image": torch.rand(2, 3, 64, 64), "boxes": torch.tensor([[[8.0, 8, 40, 40]], [[0, 0, 0, 0]]]),
             "labels": torch.tensor([[1], [-1]]), "scale": torch.ones(2, 2)}
    objective = Detection(64, 2, tta=False, iou=0.55, keep=5, truth_width=2)
    model.eval()
    norms = {k: v.clone() for k, v in model.state_dict().items() if "running" in k}
    with torch.inference_mode():
        first, state = objective(model, batch), torch.get_rng_state()
        second = objective(model, batch)
    assert first["loss"] > 0 and float(first["loss"]) == float(second["loss"])  # the regions' draw is seeded
    assert torch.equal(torch.get_rng_state(), state) and first["output"].shape == (2, 5, 6)
    assert not model.training and all(torch.equal(model.state_dict()[k], v) for k, v in norms.items())


def test_a_blend_of_detection_runs_is_refused_in_one_line():
    from types import SimpleNamespace

    import pytest

    from kit.errors import KitError
    from kit.run.blending import write_blend
    from kit.train import box_kinds
    from kit.train.targets import Target

    session = SimpleNamespace(template="detection", blend=[("a", None), ("b", None)])
    data = SimpleNamespace(target=Target(box_kinds.NOTHING.name, ("PredictionString",), ("0", "1")))
    with pytest.raises(KitError, match="predicts masks or boxes") as e:
        write_blend(session, None, data)
    assert "\n" not in str(e.value)


def test_an_image_that_could_not_be_read_is_written_as_nothing_found():
    """Its size is (0, 0): its boxes were scaled to nothing (`label conf 0 0 0 0`), not the nothing-found class the
    log says it is given."""
    from types import SimpleNamespace

    from kit.pipelines.detection import DetectionPipeline
    from kit.train import box_kinds
    from kit.train.kinds import Target

    target = Target(box_kinds.NOTHING.name, ("PredictionString",), tuple(map(str, range(14))))
    pred = np.full((2, 3, 6), -1, np.float32)
    pred[:, 0] = [8, 8, 24, 24, 0.9, 3]  # a box found in both (at 32 px), one of them unreadable
    data = SimpleNamespace(sample=pd.DataFrame({"image_id": ["a", "b"], "PredictionString": "14 1 0 0 1 1"}),
                           target=target, test=SimpleNamespace(sizes=np.array([[64, 128], [0, 0]])),
                           recipe={"side": 32, "nothing": 14}, images=None, studies=None)
    pipe = DetectionPipeline.__new__(DetectionPipeline)
    pipe.p = SimpleNamespace(score_threshold=0.05)
    cells = pipe.submission(data, pred)["PredictionString"].tolist()
    assert cells[1] == "14 1 0 0 1 1"
    assert cells[0].startswith("3 0.9 32") and cells[0].endswith("14 0.1 0 0 1 1")


def test_a_sample_of_blank_cells_is_written_as_box_strings():
    """A sample whose PredictionString cells are all blank is read as a float column (NaN); writing the images'
    strings into some of its rows refused them ("Invalid value ... for dtype 'float64'": make quality's detection
    row), where the whole column used to be replaced."""
    from types import SimpleNamespace

    from kit.pipelines.detection import DetectionPipeline
    from kit.train import box_kinds
    from kit.train.kinds import Target

    target = Target(box_kinds.NOTHING.name, ("PredictionString",), tuple(map(str, range(14))))
    pred = np.full((2, 3, 6), -1, np.float32)
    pred[0, 0] = [8, 8, 24, 24, 0.9, 3]
    data = SimpleNamespace(sample=pd.DataFrame({"image_id": ["a", "b"], "PredictionString": [np.nan, np.nan]}),
                           target=target, test=SimpleNamespace(sizes=np.array([[64, 128], [64, 64]])),
                           recipe={"side": 32, "nothing": 14}, images=None, studies=None)
    pipe = DetectionPipeline.__new__(DetectionPipeline)
    pipe.p = SimpleNamespace(score_threshold=0.05)
    cells = pipe.submission(data, pred)["PredictionString"].tolist()
    assert cells[0].startswith("3 0.9 32") and cells[1] == "14 1 0 0 1 1"
