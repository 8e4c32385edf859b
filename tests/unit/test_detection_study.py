"""siim-covid19's study rows beside its image rows (kit.pipelines.detection_study): the sample split by the study
table's id suffix, a test image's study read from its folder, the count-of-boxes table counted from the training
studies, and a study's classes from its images' likeliest boxes; images found by id under nested folders and the
sample's named nothing class (kit.pipelines.detection_data)."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from kit.data.boxes import ImageBoxes
from kit.pipelines import detection_data, detection_study
from kit.train.detection import pack


def record(image: str, study: str, n: int) -> ImageBoxes:
    return ImageBoxes(image, np.tile(np.array([[1, 1, 5, 5]], np.float32), (n, 1)), np.zeros(n, np.int64), group=study)


def test_the_sample_splits_into_study_and_image_rows_by_the_study_tables_suffix(tmp_path):
    sample = pd.DataFrame({"id": ["s1_study", "i1_image", "s2_study", "i2_image"], "PredictionString": "x"})
    rows = detection_study.split_sample(sample, "id", "_study")
    assert rows.rows.tolist() == [0, 2] and rows.ids.tolist() == ["s1", "s2"] and rows.images.tolist() == [1, 3]
    assert detection_study.split_sample(sample, "id", "").images.tolist() == [0, 1, 2, 3]  # no study table: all images
    root = tmp_path / "test"
    assert detection_study.study_of([str(root / "s1" / "se" / "i1.dcm"), str(root / "i2.dcm")], root) == ["s1", ""]


def test_the_count_table_counts_each_studys_boxes_over_its_images_with_the_prior_last():
    # study a: 0 boxes, negative; b: 1 + 1 boxes over two images, typical; c: 1 box, atypical; d: not in the table
    records = [record("a1", "a", 0), record("b1", "b", 1), record("b2", "b", 1), record("c1", "c", 1), record("d1", "d", 4)]
    table = np.array(detection_study.count_table(records, {"a": 0, "b": 1, "c": 3}, 4))
    assert table.shape == (detection_study.MAX_COUNT + 2, 4) and np.allclose(table.sum(1), 1)
    assert np.allclose(table[0], [2, 1, 1, 1] / np.float64(5)) and np.allclose(table[2], [1, 2, 1, 1] / np.float64(5))
    assert np.allclose(table[1], [1, 1, 1, 2] / np.float64(5)) and np.allclose(table[3], 0.25)
    assert np.allclose(table[-1], [2, 2, 1, 2] / np.float64(7))


def test_a_studys_number_of_true_boxes_is_the_poisson_binomial_of_its_likeliest_three():
    assert np.allclose(detection_study.count_distribution(np.array([0.9, 0.5])), [0.05, 0.5, 0.45, 0])
    assert np.allclose(detection_study.count_distribution(np.array([0.1, 1.0, 1.0, 1.0])), [0, 0, 0, 1])  # top 3
    assert np.allclose(detection_study.count_distribution(np.zeros(0)), [1, 0, 0, 0])


def test_a_study_takes_the_class_its_images_boxes_count_for_and_one_without_images_the_prior():
    table = [[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7], [0.1, 0.7, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.4, 0.3, 0.2, 0.1]]
    box = np.array([[1, 1, 9, 9]], np.float32)
    pred = pack([(np.repeat(box, 2, 0), np.array([0.99, 0.98], np.float32), np.array([0, 0])),  # study b: two boxes
                 (np.repeat(box, 2, 0), np.array([0.99, 0.01], np.float32), np.array([0, 1])),  # c: one (and "none")
                 (box, np.array([0.02], np.float32), np.array([0]))], 4)  # a: none likely
    probs = detection_study.probabilities(pred, ["b", "c", "a"], np.array(["a", "b", "c", "e"]), table, nothing=1)
    assert probs.argmax(1).tolist() == [0, 1, 3, 0] and np.allclose(probs.sum(1), 1)
    assert np.allclose(probs[3], table[-1])  # study e has no image
    assert detection_study.cells(("negative", "typical", "indeterminate", "atypical"), probs[1:2])[0].startswith(
        "typical 0.")


def test_an_image_is_found_by_its_id_under_study_and_series_folders_and_siims_none_is_a_named_class(tmp_path):
    for path in ("train/s1/se1/abc.dcm", "train/s2/se2/def.dcm", "train/flat.dcm"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"")
    session = SimpleNamespace(data_dir=tmp_path, spec=SimpleNamespace(image_ext=".dcm", train_images="train"), log=print)
    found = detection_data.image_paths(session, "train", ["abc_image", "def", "flat", "gone_image"])
    assert [Path(f).relative_to(tmp_path).as_posix() for f in found] == [
        "train/s1/se1/abc.dcm", "train/s2/se2/def.dcm", "train/flat.dcm", "train/gone_image.dcm"]  # missing: its flat path
    images = pd.DataFrame({"id": ["i_image"], "PredictionString": ["none 1 0 0 1 1"]})
    assert detection_data.nothing_class(images, "PredictionString", ("opacity",)) == (1, "none 1 0 0 1 1")
    boxed = images.assign(PredictionString="opacity 1 0 0 1 1")
    assert detection_data.nothing_class(boxed, "PredictionString", ("opacity",))[0] == -1


@pytest.mark.parametrize("ids", [["x_study"], ["x"]])
def test_the_study_tables_suffix_is_read_from_its_ids(tmp_path, ids):
    pd.DataFrame({"id": ids, "Negative for Pneumonia": [1], "Typical Appearance": [0]}).to_csv(tmp_path / "s.csv", index=False)
    session = SimpleNamespace(data_dir=tmp_path, spec=SimpleNamespace(study_table="s.csv"), log=lambda *a: None)
    classes, names, suffix = detection_study.read_table(session)
    assert classes == {"x": 0} and names == ("negative", "typical") and suffix == ("_study" if ids[0].endswith("y") else "")


def test_siims_submission_writes_study_classes_beside_named_boxes_and_the_prior_where_no_fold_predicts():
    from kit.pipelines.detection import DetectionPipeline
    from kit.train import box_kinds
    from kit.train.kinds import Target

    sample = pd.DataFrame({"id": ["s1_study", "i1_image", "i2_image"], "PredictionString": "x"})
    table = [[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7], [0.1, 0.7, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.4, 0.3, 0.2, 0.1]]
    names = ["negative", "typical", "indeterminate", "atypical"]
    data = SimpleNamespace(sample=sample, target=Target(box_kinds.NAMED.name, ("PredictionString",), ("opacity", "none")),
                           test=SimpleNamespace(sizes=np.array([[64, 128], [32, 32]])), images=np.array([1, 2]),
                           studies=detection_study.split_sample(sample, "id", "_study"), test_studies=("s1", "s1"),
                           recipe={"side": 32, "nothing": 1, "study": {"names": names, "suffix": "_study", "table": table}})
    pipe = DetectionPipeline.__new__(DetectionPipeline)
    pipe.p = SimpleNamespace(score_threshold=0.0)
    pred = pack([(np.array([[8, 8, 24, 24]], np.float32), np.array([0.9], np.float32), np.array([0])),
                 (np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))], 3)
    cells = pipe.submission(data, pred)["PredictionString"].tolist()
    assert cells[0].startswith("atypical 0.") and cells[0].count(" 0 0 1 1") == 4  # one box in study s1
    assert cells[1].startswith("opacity 0.9 32 16 96 48")  # 128 x 64 px and cells[1].endswith("none 0.1 0 0 1 1")
    assert cells[2] == "none 1 0 0 1 1"
    prior = pipe.submission(data, np.zeros((3, 1), np.float32))["PredictionString"].tolist()  # no fold: the prior
    assert prior[0].startswith("negative 0.4 0 0 1 1 typical 0.3") and prior[1:] == ["none 1 0 0 1 1"] * 2
