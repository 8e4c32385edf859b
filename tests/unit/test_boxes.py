"""kit.data.boxes (the detection competitions' training labels as one record an image), kit.data.box_strings (their
submission strings, written and parsed) and kit.data.box_fusion (weighted box fusion), on tables in MLE-bench's
layouts."""
import numpy as np
import pandas as pd
import pytest

from kit.data.box_fusion import fuse
from kit.data.box_strings import classes_string, detections_string, parse_detections, parse_groups, parse_points, points_string
from kit.data.boxes import read_kuzushiji, read_siim_images, read_siim_studies, read_vinbigdata
from kit.errors import KitError


def test_vinbigdata_keeps_each_radiologists_box_and_no_finding_images_as_negatives():
    frame = pd.DataFrame([
        ("a", "Aortic enlargement", 0, "R9", 10.0, 20.0, 50.0, 60.0),
        ("a", "Aortic enlargement", 0, "R10", 12.0, 18.0, 52.0, 61.0),
        ("b", "No finding", 14, "R1", np.nan, np.nan, np.nan, np.nan),
        ("b", "No finding", 14, "R2", np.nan, np.nan, np.nan, np.nan),
        ("a", "Cardiomegaly", 3, "R9", 100.0, 100.0, 200.0, 180.0),
    ], columns=["image_id", "class_name", "class_id", "rad_id", "x_min", "y_min", "x_max", "y_max"])
    labels = read_vinbigdata(frame)
    a, b = labels.images
    assert (a.image_id, b.image_id) == ("a", "b")
    assert a.boxes.dtype == np.float32 and a.boxes.shape == (3, 4)
    np.testing.assert_array_equal(a.labels, [0, 0, 3])
    np.testing.assert_array_equal(a.readers, ["R9", "R10", "R9"])
    assert b.boxes.shape == (0, 4) and len(b.labels) == 0
    assert labels.classes[0] == "Aortic enlargement" and labels.classes[3] == "Cardiomegaly"
    with pytest.raises(KitError, match=r"^train.csv row 2: class 0 has no box"):
        read_vinbigdata(frame.assign(x_min=np.nan))


def test_siim_image_boxes_are_corners_from_xywh_and_an_image_without_is_negative():
    frame = pd.DataFrame({
        "id": ["000a_image", "000c_image"],
        "boxes": ["[{'x': 789.28836, 'y': 582.43035, 'width': 1026.65662, 'height': 1917.30292}, "
                  "{'x': 2245.9, 'y': 591.2, 'width': 1094.6, 'height': 1761.5}]", np.nan],
        "label": ["opacity 1 789.28836 582.43035 1815.94498 2499.73327 opacity 1 2245.9 591.2 3340.5 2352.7",
                  "none 1 0 0 1 1"],
        "StudyInstanceUID": ["5776", "ff08"]})
    labels = read_siim_images(frame)
    first, second = labels.images
    np.testing.assert_allclose(first.boxes[0], [789.28836, 582.43035, 1815.94498, 2499.73327], rtol=1e-6)
    assert first.group == "5776" and labels.classes == ("opacity",)
    assert second.boxes.shape == (0, 4)
    with pytest.raises(KitError, match=r"^train_image_level.csv row 3, column boxes: not a list of"):
        read_siim_images(frame.assign(boxes=[frame["boxes"][0], "[{'x': 1}]"]))


def test_siim_studies_are_one_hot_classes_named_as_the_submission_writes_them():
    frame = pd.DataFrame({"id": ["s1_study", "s2_study"], "Negative for Pneumonia": [0, 1], "Typical Appearance": [1, 0],
                          "Indeterminate Appearance": [0, 0], "Atypical Appearance": [0, 0]})
    ids, classes, names = read_siim_studies(frame)
    assert list(ids) == ["s1_study", "s2_study"] and list(classes) == [1, 0]
    assert names == ("negative", "typical", "indeterminate", "atypical")
    with pytest.raises(KitError, match=r"^train_study_level.csv row 3: the class columns must hold one 1"):
        read_siim_studies(frame.assign(**{"Typical Appearance": [1, 1]}))


def test_kuzushiji_labels_are_boxes_of_sorted_codes_and_an_empty_page_is_kept():
    frame = pd.DataFrame({"image_id": ["p1", "p2"], "labels": ["U+306F 1231 3465 133 53 U+304C 275 1652 84 69", np.nan]})
    labels = read_kuzushiji(frame)
    assert labels.classes == ("U+304C", "U+306F")
    np.testing.assert_array_equal(labels.images[0].boxes, [[1231, 3465, 1364, 3518], [275, 1652, 359, 1721]])
    np.testing.assert_array_equal(labels.images[0].labels, [1, 0])
    assert labels.images[1].boxes.shape == (0, 4)
    with pytest.raises(KitError, match=r"^train.csv row 3, column labels: 4 tokens are not groups of 5"):
        read_kuzushiji(frame.assign(labels=["U+306F 1 2 3 4", "U+306F 1 2 3"]))


def test_strings_round_trip_and_empty_rows_are_each_graders_form():
    boxes = np.array([[10.5, 20, 30, 40], [1, 2, 3, 4]], np.float32)
    text = detections_string([3, 14], np.array([0.9, 0.25]), boxes, empty="14 1 0 0 1 1")
    assert text == "3 0.9 10.5 20 30 40 14 0.25 1 2 3 4"
    labels, scores, parsed = parse_detections(text, 2)
    assert labels == ["3", "14"] and list(scores) == [0.9, 0.25]
    np.testing.assert_array_equal(parsed, boxes)
    assert detections_string([], np.zeros(0), np.zeros((0, 4))) == ""
    assert detections_string([], np.zeros(0), np.zeros((0, 4)), empty="none 1 0 0 1 1") == "none 1 0 0 1 1"
    assert classes_string(["negative", "typical"], np.array([0.3, 0.7])) == "typical 0.7 0 0 1 1 negative 0.3 0 0 1 1"
    assert points_string(["U+003F", "U+FF2F"], np.array([[1, 1], [2.5, 2]])) == "U+003F 1 1 U+FF2F 2.5 2"
    assert points_string([], np.zeros((0, 2))) == ""
    codes, centres = parse_points("U+003F 1 1 U+FF2F 2.5 2", 2)
    assert codes == ["U+003F", "U+FF2F"] and centres.tolist() == [[1, 1], [2.5, 2]]
    assert parse_groups(np.nan, 6, 2, "PredictionString")[1].shape == (0, 5)


@pytest.mark.parametrize("text,why", [("14 1 0 0 1", "5 tokens are not groups of 6"),
                                      ("14 high 0 0 1 1", "a number that is not one"),
                                      ("14 1 0 0 inf 1", "a number that is not finite")])
def test_a_malformed_string_is_refused_in_one_line_naming_row_and_column(text, why):
    with pytest.raises(KitError) as e:
        parse_detections(text, 7, "PredictionString")
    assert str(e.value).startswith(f"submission row 7, column PredictionString: {why}") and "\n" not in str(e.value)


def test_fusion_averages_overlapping_readers_boxes_by_confidence_and_keeps_the_rest_apart():
    boxes = np.array([[10, 10, 50, 50],  # reader 1
                      [14, 10, 54, 50],  # reader 2, the same object (IoU 0.82)
                      [100, 100, 140, 140],  # reader 1 only
                      [10, 10, 50, 50]], np.float32)  # another class on the first object
    labels = np.array([0, 0, 0, 1])
    scores = np.array([0.9, 0.3, 0.8, 0.6])
    fused, fused_labels, confidence = fuse(boxes, labels, scores, sources=2, iou=0.55)
    assert fused.dtype == np.float32 and fused_labels.tolist() == [0, 0, 1]
    np.testing.assert_allclose(fused[0], [(0.9 * 10 + 0.3 * 14) / 1.2, 10, (0.9 * 50 + 0.3 * 54) / 1.2, 50], rtol=1e-6)
    np.testing.assert_allclose(confidence, [(0.9 + 0.3) / 2, 0.8 / 2, 0.6 / 2], rtol=1e-6)
    np.testing.assert_array_equal(fused[1], boxes[2])
    apart, _, _ = fuse(boxes[:2], labels[:2], scores[:2], sources=2, iou=0.9)  # below the threshold: two boxes
    assert len(apart) == 2
    none = fuse(np.zeros((0, 4)), np.zeros(0, np.int64))
    assert none[0].shape == (0, 4)


def test_fusion_of_radiologists_boxes_without_confidences_is_their_mean():
    boxes = np.array([[0, 0, 100, 100], [10, 0, 110, 100], [0, 10, 100, 110]], np.float32)
    fused, _, confidence = fuse(boxes, np.zeros(3, np.int64), sources=3, iou=0.5)
    np.testing.assert_allclose(fused, [[10 / 3, 10 / 3, 310 / 3, 310 / 3]], rtol=1e-6)
    assert confidence.tolist() == [1.0]
