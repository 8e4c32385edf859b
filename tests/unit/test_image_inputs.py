"""The image inputs a config alone can name: labels from file names and chosen class folders, image paths
from columns, COCO label files; each with its bad inputs in one line."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from kit.data import layouts
from kit.data.image_paths import PATH
from kit.errors import KitError
from kit.smoke.packing import write_tar
from kit.spec import Spec


def touch(folder, *names):
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"x")


def sample(folder, frame, name="sample_submission.csv"):
    frame.to_csv(folder / name, index=False)
    return pd.read_csv(folder / name, dtype={frame.columns[0]: str}), folder / name


DOGS = Spec(slug="dogs-vs-cats-redux-kernels-edition", layout="names", label_pattern=r"^(cat|dog)\.", id_column="id",
            target_column="label", metric="log_loss")


def test_a_pattern_on_the_file_name_is_the_label(tmp_path):
    """dogs-vs-cats: train/cat.0.jpg, train/dog.0.jpg; no table; test/<n>.jpg named by the sample's ids."""
    touch(tmp_path, "train/cat.0.jpg", "train/cat.1.jpg", "train/dog.0.jpg", "train/.DS_Store", "test/1.jpg", "test/2.jpg")
    table, where = layouts.training_table(DOGS, tmp_path)
    assert table[["id", "label"]].values.tolist() == [["cat.0.jpg", "cat"], ["cat.1.jpg", "cat"], ["dog.0.jpg", "dog"]]
    source = layouts.training_source(DOGS, tmp_path, table, where)
    assert source.paths[2] == tmp_path / "train" / "dog.0.jpg" and source.names[0] == "train/cat.0.jpg"
    frame, path = sample(tmp_path, pd.DataFrame({"id": [1, 2], "label": 0.5}))
    assert layouts.test_source(DOGS, tmp_path, frame, path).paths == [tmp_path / "test" / "1.jpg", tmp_path / "test" / "2.jpg"]


def test_the_test_folder_inside_the_training_folder_is_never_read(tmp_path):
    spec = dataclasses.replace(DOGS, train_images="images", test_images="images/test", label_pattern=r"(cat|dog)")
    touch(tmp_path, "images/cat.0.jpg", "images/dog.0.jpg", "images/test/cat_or_dog.jpg")
    table, _ = layouts.training_table(spec, tmp_path)
    assert table["id"].tolist() == ["cat.0.jpg", "dog.0.jpg"]


@pytest.mark.parametrize("pattern, message", [
    (r"^(bird)\.", r"^\[data\] label_pattern = '\^\(bird\)\\.' matches no file in train/ \(2 files, such as cat.0.jpg\)"),
    (r"^cat", r"^\[data\] label_pattern = '\^cat' has no group; put the class in parentheses"),
    (r"^(cat", r"^\[data\] label_pattern = '\^\(cat' is not a regular expression \(missing \), unterminated subpattern"),
    ("", r'^layout = "names" needs label_pattern in \[data\]'),
])
def test_bad_label_patterns_are_one_line(tmp_path, pattern, message):
    touch(tmp_path, "train/cat.0.jpg", "train/dog.0.jpg")
    with pytest.raises(KitError, match=message):
        layouts.training_table(dataclasses.replace(DOGS, label_pattern=pattern), tmp_path)


ALASKA = Spec(slug="alaska2-image-steganalysis", layout="folders", train_images="", test_images="Test", id_column="Id",
              target_column="Label", image_ext=".jpg", class_folders=("Cover=0", "JMiPOD=1", "JUNIWARD=1", "UERD=1"),
              metric="auc")


def test_chosen_class_folders_map_several_folders_to_one_class(tmp_path):
    """alaska2: Cover/, JMiPOD/, JUNIWARD/, UERD/ and Test/ side by side in the data folder."""
    for folder in ("Cover", "JMiPOD", "JUNIWARD", "UERD"):
        touch(tmp_path, f"{folder}/00001.jpg", f"{folder}/00002.jpg")
    touch(tmp_path, "Test/0001.jpg")
    table, where = layouts.training_table(ALASKA, tmp_path)
    assert len(table) == 8 and table["Label"].value_counts().to_dict() == {"1": 6, "0": 2}
    assert table["Id"].tolist()[:3] == ["Cover/00001.jpg", "Cover/00002.jpg", "JMiPOD/00001.jpg"] and where == "./"
    assert layouts.training_source(ALASKA, tmp_path, table, where).paths[2] == tmp_path / "JMiPOD" / "00001.jpg"
    every = dataclasses.replace(ALASKA, class_folders=())  # every folder a class, but the test folder
    assert sorted(set(layouts.training_table(every, tmp_path)[0]["Label"])) == ["Cover", "JMiPOD", "JUNIWARD", "UERD"]
    with pytest.raises(KitError, match=r"^\[data\] class_folders names 'Test', the test folder \(test_images\)"):
        layouts.training_table(dataclasses.replace(ALASKA, class_folders=("Cover=0", "Test=1")), tmp_path)
    with pytest.raises(KitError, match=r"^\[data\] class_folders: '=1' is not a folder or folder=class"):
        layouts.training_table(dataclasses.replace(ALASKA, class_folders=("Cover=0", "=1")), tmp_path)
    with pytest.raises(KitError, match=r"^image folder 'Stego' not found in .*; fix \[data\] class_folders"):
        layouts.training_table(dataclasses.replace(ALASKA, class_folders=("Cover=0", "Stego=1")), tmp_path)


HOTEL = Spec(slug="hotel-id-2021-fgvc8", train="train.csv", id_column="image", target_column="hotel_id",
             train_images="train_images", test_images="test_images", image_path="{chain}/{image}",
             test_image_path="{image}", metric="accuracy")


def test_image_paths_are_made_from_each_rows_columns(tmp_path):
    """hotel-id: train_images/<chain>/<image>, the test images flat."""
    pd.DataFrame({"image": ["a.jpg", "b.jpg"], "chain": [0, 5], "hotel_id": [10, 11]}).to_csv(tmp_path / "train.csv",
                                                                                             index=False)
    touch(tmp_path, "train_images/0/a.jpg", "train_images/5/b.jpg", "test_images/c.jpg")
    table, where = layouts.training_table(HOTEL, tmp_path)
    assert layouts.training_source(HOTEL, tmp_path, table, where).paths == [tmp_path / "train_images/0/a.jpg",
                                                                             tmp_path / "train_images/5/b.jpg"]
    frame, path = sample(tmp_path, pd.DataFrame({"image": ["c.jpg"], "hotel_id": "10 11"}))
    assert layouts.test_source(HOTEL, tmp_path, frame, path).paths == [tmp_path / "test_images/c.jpg"]
    with pytest.raises(KitError, match=r"^\[data\] image_path = '{brand}/{image}' names column 'brand', which train.csv lacks "
                                       r"\(it has: image, chain, hotel_id\); fix image_path"):
        layouts.training_source(dataclasses.replace(HOTEL, image_path="{brand}/{image}"), tmp_path, table, where)
    with pytest.raises(KitError, match=r"^no train_images/0/a.png \(nor any of the first 2 images of train.csv\): the paths "
                                       r"match no file \(it holds 0, 5, ...\); check image_path and train_images"):
        layouts.training_source(dataclasses.replace(HOTEL, image_path="{chain}/{image}.png".replace(".jpg", "")),
                                tmp_path, table.assign(image=["a", "b"]), where)
    with pytest.raises(KitError, match=r"^\[data\] image_path = '{}/{image}': '{}' names no column"):
        layouts.training_source(dataclasses.replace(HOTEL, image_path="{}/{image}"), tmp_path, table, where)
    with pytest.raises(KitError, match=r"^\[data\] test_image_path = '{chain}/{image}' names column 'chain', which "
                                       r"sample_submission.csv lacks"):
        layouts.test_source(dataclasses.replace(HOTEL, test_image_path="{chain}/{image}"), tmp_path, frame, path)


def test_a_template_indexes_into_a_column_for_both_splits(tmp_path):
    """seti: train/<id[0]>/<id>.npy and test/<id[0]>/<id>.npy from train_labels.csv and the sample's ids."""
    spec = Spec(slug="seti-breakthrough-listen", train="train_labels.csv", image_path="{id[0]}/{id}.npy", metric="auc")
    pd.DataFrame({"id": ["0a1", "f3c"], "target": [0, 1]}).to_csv(tmp_path / "train_labels.csv", index=False)
    touch(tmp_path, "train/0/0a1.npy", "train/f/f3c.npy", "test/7/7bb.npy")
    table, where = layouts.training_table(spec, tmp_path)
    assert layouts.training_source(spec, tmp_path, table, where).names == ["train/0/0a1.npy", "train/f/f3c.npy"]
    frame, path = sample(tmp_path, pd.DataFrame({"id": ["7bb"], "target": 0.5}))
    assert layouts.test_source(spec, tmp_path, frame, path).paths == [tmp_path / "test/7/7bb.npy"]


def test_a_training_table_whose_paths_name_its_images_needs_no_id_column(tmp_path):
    """iwildcam-2019: train.csv names each image in file_name and has `id`, not the sample's `Id`; its rows are
    numbered. Without image_path the id column is still required."""
    spec = Spec(slug="iwildcam-2019-fgvc6", train="train.csv", id_column="Id", target_column="category_id",
                train_images="train_images", test_images="test_images", image_path="{file_name}", test_image_path="{Id}.jpg",
                metric="macro_f1")
    pd.DataFrame({"category_id": [0, 11], "file_name": ["a-1.jpg", "b-2.jpg"], "id": ["a-1", "b-2"]}).to_csv(
        tmp_path / "train.csv", index=False)
    touch(tmp_path, "train_images/a-1.jpg", "train_images/b-2.jpg", "test_images/c-3.jpg")
    table, where = layouts.training_table(spec, tmp_path)
    assert table["Id"].tolist() == ["1", "2"] and table["id"].tolist() == ["a-1", "b-2"]
    assert layouts.training_source(spec, tmp_path, table, where).paths == [tmp_path / "train_images/a-1.jpg",
                                                                            tmp_path / "train_images/b-2.jpg"]
    frame, path = sample(tmp_path, pd.DataFrame({"Id": ["c-3"], "Category": 0}))
    assert layouts.test_source(spec, tmp_path, frame, path).paths == [tmp_path / "test_images/c-3.jpg"]
    with pytest.raises(KitError, match=r"^train.csv: no column 'Id' \(it has: category_id, file_name, id\)"):
        layouts.training_table(dataclasses.replace(spec, image_path=""), tmp_path)


def coco_file(path, images, annotations=None, categories=None, key="id"):
    value = {"images": [{key: i, "file_name": f} for i, f in images], "info": {}}
    if annotations is not None:
        value["annotations"] = [{"id": k, "image_id": i, "category_id": c} for k, (i, c) in enumerate(annotations)]
    if categories is not None:
        value["categories"] = [{"id": c, "name": n} for c, n in categories]
    path.write_text(json.dumps(value))


IWILDCAM = Spec(slug="iwildcam-2020-fgvc7", layout="coco", train="train.json", test="test.json", id_column="Id",
                target_column="Category", image_ext="", metric="accuracy")


def test_a_coco_file_is_the_training_table_and_the_test_json_names_the_test_images(tmp_path):
    coco_file(tmp_path / "train.json", [("a", "a.jpg"), ("b", "b.jpg"), ("c", "c.jpg")],
              [("a", 7), ("b", 12), ("a", 12)], [(7, "deer"), (12, "fox")])  # c has no annotation; a has two
    coco_file(tmp_path / "test.json", [("t2", "t2.jpg"), ("t1", "t1.jpg")], categories=[(7, "deer")])
    touch(tmp_path, "train/a.jpg", "train/b.jpg", "test/t1.jpg", "test/t2.jpg")
    frame, path = sample(tmp_path, pd.DataFrame({"Id": ["t1", "t2"], "Category": [3, 600]}))
    table, where = layouts.training_table(IWILDCAM, tmp_path, frame)
    assert table[["Id", "Category"]].values.tolist() == [["a", 7], ["b", 12]] and where == "train.json"
    assert table["Category"].dtype.kind == "i"  # ids stay whole numbers in the submission
    assert layouts.training_source(IWILDCAM, tmp_path, table, where).paths == [tmp_path / "train/a.jpg", tmp_path / "train/b.jpg"]
    assert layouts.test_source(IWILDCAM, tmp_path, frame, path).paths == [tmp_path / "test/t1.jpg", tmp_path / "test/t2.jpg"]
    named, _ = sample(tmp_path, pd.DataFrame({"Id": ["t1", "t2"], "Category": ["deer", "deer"]}), "named.csv")
    assert layouts.training_table(IWILDCAM, tmp_path, named)[0]["Category"].tolist() == ["deer", "fox"]


def test_coco_file_names_given_from_the_data_folder_find_the_unpacked_archive(tmp_path):
    """inaturalist: file_name train_val2019/Plants/400/a.jpg, the folder shipped as a plain tar named .tar.gz
    holding Plants/400/a.jpg; test2019.json's test2019/t.jpg likewise; int ids."""
    coco_file(tmp_path / "train2019.json", [(1, "train_val2019/Plants/400/a.jpg"), (2, "train_val2019/Plants/401/b.jpg")],
              [(1, 400), (2, 401)], [(400, "x"), (401, "y")])
    coco_file(tmp_path / "test2019.json", [(9, "test2019/t.jpg")])
    touch(tmp_path / "src", "Plants/400/a.jpg", "Plants/401/b.jpg", "t.jpg")
    write_tar(tmp_path / "src" / "Plants", tmp_path / "train_val2019.tar.gz", prefix="Plants", compress=False)
    write_tar(tmp_path / "src" / "t.jpg", tmp_path / "test2019.tar.gz", compress=False)
    spec = Spec(slug="inaturalist-2019-fgvc6", layout="coco", train="train2019.json", test="test2019.json",
                train_images="train_val2019", test_images="test2019", sample_submission="kaggle_sample_submission.csv",
                id_column="id", target_column="predicted", metric="accuracy")
    frame, path = sample(tmp_path, pd.DataFrame({"id": [9], "predicted": [5]}), spec.sample_submission)
    table, where = layouts.training_table(spec, tmp_path, frame)
    train = layouts.training_source(spec, tmp_path, table, where)
    assert [p.relative_to(p.parents[2]).as_posix() for p in train.paths] == ["Plants/400/a.jpg", "Plants/401/b.jpg"]
    assert all(p.is_file() for p in train.paths) and table["predicted"].tolist() == [400, 401]
    assert layouts.test_source(spec, tmp_path, frame, path).paths[0].is_file()


def test_herbarium_2022s_image_id_keys_and_a_test_list_of_records(tmp_path):
    (tmp_path / "train_metadata.json").write_text(json.dumps({
        "images": [{"image_id": "00001__001", "file_name": "000/01/00001__001.jpg"}],
        "annotations": [{"image_id": "00001__001", "category_id": 1, "genus_id": 3}],
        "categories": [{"category_id": 1, "scientificName": "Abies alba"}]}))
    (tmp_path / "test_metadata.json").write_text(json.dumps([{"file_name": "000/test-000000.jpg", "image_id": "0"}]))
    touch(tmp_path, "train_images/000/01/00001__001.jpg", "test_images/000/test-000000.jpg")
    spec = Spec(slug="herbarium-2022-fgvc9", layout="coco", train="train_metadata.json", test="test_metadata.json",
                train_images="train_images", test_images="test_images", id_column="Id", target_column="Predicted",
                metric="accuracy")
    frame, path = sample(tmp_path, pd.DataFrame({"Id": [0], "Predicted": [42]}))
    table, where = layouts.training_table(spec, tmp_path, frame)
    assert table[["Id", "Predicted"]].values.tolist() == [["00001__001", 1]] and PATH in table.columns
    assert layouts.training_source(spec, tmp_path, table, where).paths[0].is_file()
    assert layouts.test_source(spec, tmp_path, frame, path).paths[0].is_file()
    names = dataclasses.replace(spec, category_field="scientificName")
    assert layouts.training_table(names, tmp_path, frame)[0]["Predicted"].tolist() == ["Abies alba"]


def test_bad_coco_files_are_one_line(tmp_path):
    coco_file(tmp_path / "train.json", [("a", "a.jpg")])
    with pytest.raises(KitError, match=r"^train.json: no annotations; a COCO training file needs annotations\[\]"):
        layouts.training_table(IWILDCAM, tmp_path)
    coco_file(tmp_path / "train.json", [("a", "a.jpg")], [("a", 7)])
    with pytest.raises(KitError, match=r"^train.json: no categories\[\], so no 'name' to name classes by"):
        layouts.training_table(dataclasses.replace(IWILDCAM, category_field="name"), tmp_path)
    coco_file(tmp_path / "train.json", [("a", "a.jpg")], [("z", 7)])
    with pytest.raises(KitError, match=r"^train.json: no annotation's image_id is an image id of images\[\]"):
        layouts.training_table(IWILDCAM, tmp_path)
    coco_file(tmp_path / "train.json", [("a", "a.jpg")], [("a", 7)])
    touch(tmp_path, "train/elsewhere.jpg", "test/t1.jpg")
    table, where = layouts.training_table(IWILDCAM, tmp_path)
    with pytest.raises(KitError, match=r"^no train/a.jpg \(nor any of the first 1 images of train.json\): the paths match "
                                       r"no file \(it holds elsewhere.jpg, ...\); check train_images"):
        layouts.training_source(IWILDCAM, tmp_path, table, where)
    (tmp_path / "test.json").write_text(json.dumps({"images": [{"id": "t1", "file_name": "t1.jpg"}]}))
    frame, path = sample(tmp_path, pd.DataFrame({"Id": ["t9"], "Category": [0]}))
    with pytest.raises(KitError, match=r"^sample_submission.csv: id 't9' is not in test.json \(1 such ids\)"):
        layouts.test_source(IWILDCAM, tmp_path, frame, path)


def test_a_json_table_of_per_row_arrays_is_images_of_their_channels(tmp_path):
    """statoil: records with band_1 and band_2, each a flattened square of floats; test rows by id."""
    rng = np.random.default_rng(0)
    rows = [{"id": f"r{k}", "band_1": rng.normal(-20, 5, 16).tolist(), "band_2": rng.normal(-25, 5, 16).tolist(),
             "inc_angle": "na", "is_iceberg": k % 2} for k in range(3)]
    (tmp_path / "train.json").write_text(json.dumps(rows))
    (tmp_path / "test.json").write_text(json.dumps([{k: v for k, v in r.items() if k != "is_iceberg"} for r in rows[::-1]]))
    spec = Spec(slug="statoil-iceberg-classifier-challenge", layout="arrays", train="train.json", test="test.json",
                target_column="is_iceberg", array_columns=("band_1", "band_2"))
    table, where = layouts.training_table(spec, tmp_path)
    source = layouts.training_source(spec, tmp_path, table, where)
    assert source.pixels.shape == (3, 4, 4, 2) and source.pixels.dtype == np.float32
    assert source.pixels[1, 0, 3, 1] == np.float32(rows[1]["band_2"][3]) and source.form.channels == 2
    frame, path = sample(tmp_path, pd.DataFrame({"id": ["r0", "r2"], "is_iceberg": 0.5}))
    test = layouts.test_source(spec, tmp_path, frame, path)
    assert np.array_equal(test.pixels[1], source.pixels[2]) and test.names == ["test.json row 3", "test.json row 1"]
    short = [{**r, "band_2": r["band_2"][:15]} for r in rows]
    (tmp_path / "train.json").write_text(json.dumps(short))
    with pytest.raises(KitError, match=r"^train.json, column 'band_2': 15 values a row do not make a square image"):
        layouts.training_source(spec, tmp_path, layouts.training_table(spec, tmp_path)[0], where)
    with pytest.raises(KitError, match=r"^train.json: no column 'band_3' \(it has: id, band_1, band_2"):
        layouts.training_source(dataclasses.replace(spec, array_columns=("band_3",)), tmp_path, table, where)
    (tmp_path / "train.json").write_text(json.dumps([{**r, "band_1": [None] * 16} for r in rows]))
    with pytest.raises(KitError, match=r"^train.json, row 1, column 'band_1': NaN or infinite values \(48 such values\)"):
        layouts.training_source(spec, tmp_path, layouts.training_table(spec, tmp_path)[0], where)
