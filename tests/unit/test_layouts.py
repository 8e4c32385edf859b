"""Image layouts: class folders and pixel tables read as the id tables are, with one-line errors."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from kit.data import images, layouts
from kit.errors import KitError
from kit.spec import Spec

PIXELS = Spec(slug="digit-recognizer", layout="pixels", train="train.csv", test="test.csv", id_column="ImageId",
              target_column="label", metric="accuracy")
FOLDERS = Spec(slug="plant-seedlings-classification", layout="folders", id_column="file", target_column="species",
               image_ext="", metric="accuracy")


def digits(n, side=4, seed=0, label=True):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.integers(0, 256, (n, side * side)), columns=[f"pixel{i}" for i in range(side * side)])
    if label:
        frame.insert(0, "label", rng.integers(0, 10, n))
    return frame


def write_pixels(folder, train, test, sample=None):
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sample = pd.DataFrame({"ImageId": np.arange(1, len(test) + 1), "Label": 0}) if sample is None else sample
    sample.to_csv(folder / "sample_submission.csv", index=False)
    return sample.astype({"ImageId": str})


def test_pixel_tables_are_square_images_numbered_from_one(tmp_path):
    train, test = digits(6), digits(3, seed=1, label=False)
    sample = write_pixels(tmp_path, train, test)
    table, where = layouts.training_table(PIXELS, tmp_path)
    assert table["ImageId"].tolist() == ["1", "2", "3", "4", "5", "6"] and where == "train.csv"
    columns = layouts.pixel_columns(table, ["ImageId", "label"], where)
    source = layouts.training_source(PIXELS, tmp_path, table, where, columns)
    assert source.pixels.shape == (6, 4, 4) and source.pixels.dtype == np.uint8
    assert source.pixels[2].ravel().tolist() == train.iloc[2, 1:].tolist() and source.names[0] == "train.csv line 2"
    test_images = layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv", columns)
    assert test_images.pixels[1].ravel().tolist() == test.iloc[1].tolist()


def test_a_test_table_with_ids_is_read_in_the_samples_order(tmp_path):
    test = digits(3, seed=1, label=False)
    test.insert(0, "ImageId", ["c", "a", "b"])
    sample = write_pixels(tmp_path, digits(4), test, pd.DataFrame({"ImageId": ["a", "b", "c"], "Label": 0}))
    got = layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv")
    assert got.pixels[0].ravel().tolist() == test.iloc[1, 1:].tolist()


def test_pixel_cache_resizes_once_to_gray_rgb(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, (5, 28, 28)).astype(np.uint8)
    cache = images.pixel_cache(pixels, 32, tmp_path, log=lambda line: None)
    got = cache.read(np.arange(5))
    assert got.shape == (5, 32, 32, 3) and (got[..., 0] == got[..., 2]).all()
    assert np.array_equal(got, images.PixelImages(pixels, 32).read(np.arange(5)))
    said = []
    images.pixel_cache(pixels, 32, tmp_path, log=said.append)
    assert said[0].startswith("resize: reusing the decoded cache")
    assert np.array_equal(images.PixelImages(pixels, 28).read(np.array([3]))[0, ..., 1], pixels[3])


@pytest.mark.parametrize("change, message", [
    (lambda f: f.drop(columns=["pixel15", "pixel14"]), r"^train.csv: 14 pixel columns \(all but label\) do not make a square "
                                                       r"image \(3 x 3 is 9, 4 x 4 is 16\); check target_column and id_column"),
    (lambda f: f.assign(pixel3=300), r"^train.csv, line 2, column 'pixel3': 300 is outside 0 to 255"),
    (lambda f: f.assign(pixel3="x"), r"^train.csv, line 2, column 'pixel3': 'x' is not a pixel value \(6 such cells\)"),
])
def test_bad_pixel_tables_are_one_line(tmp_path, change, message):
    write_pixels(tmp_path, change(digits(6)), digits(3, label=False))
    table, where = layouts.training_table(PIXELS, tmp_path)
    with pytest.raises(KitError, match=message):
        columns = layouts.pixel_columns(table, ["ImageId", "label"], where)
        layouts.training_source(PIXELS, tmp_path, table, where, columns)


def test_test_tables_that_do_not_match_are_one_line(tmp_path):
    sample = write_pixels(tmp_path, digits(6), digits(3, label=False), pd.DataFrame({"ImageId": [1, 2], "Label": 0}))
    with pytest.raises(KitError, match="^test.csv has 3 rows and sample_submission.csv 2: without an 'ImageId' column"):
        layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv")
    sample = write_pixels(tmp_path, digits(6), digits(3, side=5, label=False))
    with pytest.raises(KitError, match=r"^test.csv: 25 pixel columns \(pixel0 ... pixel24\), not the 16 of train.csv"):
        layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv", [f"pixel{i}" for i in range(16)])
    with pytest.raises(KitError, match=r'^layout = "pixels" needs the test table: set test'):
        layouts.test_source(dataclasses.replace(PIXELS, test=""), tmp_path, sample, tmp_path / "sample_submission.csv")


def test_class_folders_are_the_labels(tmp_path):
    for name, files in (("Black-grass", ["b.png", "a.png"]), ("Common Chickweed", ["c.png"])):
        (tmp_path / "train" / name).mkdir(parents=True)
        for f in files:
            (tmp_path / "train" / name / f).write_bytes(b"")
    (tmp_path / "train" / ".DS_Store").write_bytes(b"")
    (tmp_path / "train" / "__MACOSX" / "Black-grass").mkdir(parents=True)  # a zip made on macOS, unpacked by hand
    (tmp_path / "train" / "__MACOSX" / "Black-grass" / "._a.png").write_bytes(b"")
    table, where = layouts.training_table(FOLDERS, tmp_path)
    assert table[["file", "species"]].values.tolist() == [["Black-grass/a.png", "Black-grass"],
                                                          ["Black-grass/b.png", "Black-grass"],
                                                          ["Common Chickweed/c.png", "Common Chickweed"]]
    source = layouts.training_source(FOLDERS, tmp_path, table, where)
    assert source.paths[2] == tmp_path / "train" / "Common Chickweed" / "c.png" and source.names[0] == "train/Black-grass/a.png"
    (tmp_path / "train" / "Maize").mkdir()
    with pytest.raises(KitError, match="^train/Maize/: a class folder with no images; add its images or remove the folder$"):
        layouts.training_table(FOLDERS, tmp_path)


def test_a_train_folder_without_class_folders_says_so(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.png").write_bytes(b"")
    with pytest.raises(KitError, match='^train/ holds no class folders; layout = "folders" reads train/<class>/<file>'):
        layouts.training_table(FOLDERS, tmp_path)


def test_pixel_errors_name_the_tables_own_line_and_test_labels_are_not_pixels(tmp_path):
    """Fashion-MNIST's test table carries its labels; a bad cell is named by its line in the file, also
    when the sample's ids reorder the rows."""
    test = digits(3, seed=1)  # label + pixels
    test.insert(0, "ImageId", ["c", "a", "b"])
    test.loc[0, "pixel5"] = 999
    sample = write_pixels(tmp_path, digits(4), test, pd.DataFrame({"ImageId": ["a", "b", "c"], "Label": 0}))
    with pytest.raises(KitError, match="^test.csv, line 2, column 'pixel5': 999 is outside 0 to 255"):
        layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv", [f"pixel{i}" for i in range(16)])
    test.loc[0, "pixel5"] = 9
    test.loc[1, "ImageId"] = "c"
    sample = write_pixels(tmp_path, digits(4), test, pd.DataFrame({"ImageId": ["a", "b", "c"], "Label": 0}))
    with pytest.raises(KitError, match="^test.csv: id 'c' appears more than once"):
        layouts.test_source(PIXELS, tmp_path, sample, tmp_path / "sample_submission.csv")
