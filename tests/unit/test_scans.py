"""uw-madison's slices read as images (kit.data.scans): found by their ids under case/day/scans, every one of their
16 bits kept, 2.5-D channels of their neighbours, one line for a slice that is not a grey PNG; a row per image and
class by [data] class_column; folds grouped by the case read from the ids."""
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from kit.data import masks, scans
from kit.errors import KitError
from kit.smoke.gallery import bodies
from kit.spec import Spec

BASE = {"slug": "uw", "template": "segmentation", "metric": "dice_hausdorff"}


def slice_file(folder, case, day, z, pixels):
    where = folder / case / f"{case}_{day}" / "scans"
    where.mkdir(parents=True, exist_ok=True)
    h, w = pixels.shape
    path = where / f"slice_{z:04d}_{w}_{h}_1.50_1.50.png"
    Image.fromarray(pixels).save(path)
    return str(path)


def test_a_slice_keeps_its_16_bits_and_its_neighbours_are_its_channels(tmp_path):
    paths = [slice_file(tmp_path, "case7", "day3", z, np.full((4, 5), 1000 * z, np.uint16)) for z in (1, 2, 3)]
    paths[1] = slice_file(tmp_path, "case7", "day3", 2, np.array([[300, 2000, 4000, 70, 0]] * 4, np.uint16))
    assert scans.index(tmp_path) == {f"case7_day3_slice_{z:04d}": paths[z - 1] for z in (1, 2, 3)}
    assert scans.grey(paths[1])[0].tolist() == [300, 2000, 4000, 70, 0]  # convert("L") would clip these to 255
    reader = scans.Scans((-1, 0, 1))
    assert reader.header(paths[0]) == (4, 5, 3)
    image = reader.read(paths[1])  # slices 1, 2, 3; scaled by the largest of the three, 4000
    assert image.dtype == np.uint8 and image.shape == (4, 5, 3)
    assert image[0, :, 1].tolist() == [round(v / 4000 * 255) for v in (300, 2000, 4000, 70, 0)]
    assert image[0, 0, 0] == round(1000 / 4000 * 255) and image[0, 0, 2] == round(3000 / 4000 * 255)
    first = reader.read(paths[0])  # below the scan's first slice: the first again
    assert (first[..., 0] == first[..., 1]).all()
    alone = scans.Scans((0,)).read(paths[1])
    assert (alone[..., 0] == alone[..., 2]).all()


def test_a_slice_that_is_not_a_grey_png_is_one_line(tmp_path):
    where = tmp_path / "case1" / "case1_day1" / "scans"
    where.mkdir(parents=True)
    colour = where / "slice_0001_5_4_1.50_1.50.png"
    Image.fromarray(np.zeros((4, 5, 3), np.uint8)).save(colour)
    with pytest.raises(KitError, match=r"slice_0001_5_4_1\.50_1\.50\.png: a slice is a grey PNG of 8 or 16 bits, and this "
                                       r"one is RGB$"):
        scans.Scans((0,)).read(str(colour))
    broken = where / "slice_0002_5_4_1.50_1.50.png"
    broken.write_bytes(b"not a png")
    with pytest.raises(KitError, match=r"slice_0002_5_4_1\.50_1\.50\.png: the slice cannot be read"):
        scans.Scans((0,)).header(str(broken))
    with pytest.raises(KitError, match=r"^train\.csv: id 'case1_slice_0001' is not <case>_<day>_slice_<number>"):
        scans.parts("case1_slice_0001", "train.csv")


def test_slices_and_class_column_as_a_config_says_them():
    assert Spec.from_dict({**BASE, "slices": [-2, 0, 2], "class_column": "class"}).slices == (-2, 0, 2)
    for wrong in ([-1, 1], [0, 1], [1, 2, 3]):
        with pytest.raises(KitError, match=r"slices .* must be one or three whole offsets holding 0"):
            Spec.from_dict({**BASE, "slices": wrong})
    with pytest.raises(KitError, match=r"more than one of bands, slices and layers is set"):
        Spec.from_dict({**BASE, "slices": [0], "bands": "ash"})


def test_the_public_files_read_as_a_row_per_slice_and_organ_grouped_by_case(tmp_path):
    bodies.uw_madison(tmp_path, cases=3, slices=4)
    spec = Spec.from_dict({**BASE, "train": "train.csv", "target_column": "segmentation", "class_column": "class",
                           "submission_columns": ["predicted"], "slices": [-2, 0, 2], "group_column": "case"})
    found = masks.training(spec, tmp_path, lambda line: None)
    table = pd.read_csv(tmp_path / "train.csv")
    assert found.classes == bodies.ORGANS and len(found.ids) == len(table) // 3 == 16  # 4 scans of 4
    assert all(p.endswith(".png") and "/scans/slice_" in p for p in found.paths)
    assert set(found.table["case"]) == {i.split("_")[0] for i in found.ids}
    sample = pd.read_csv(tmp_path / "sample_submission.csv")
    out = masks.output(spec, tmp_path, sample, tmp_path / "sample_submission.csv", "predicted", lambda line: None)
    assert out.layout == "class" and out.classes == bodies.ORGANS and len(out.ids) == len(sample) // 3
    assert [out.ids[i] for i in out.image[:3]] == sample["id"][:3].tolist()  # the sample's rows, in its order
