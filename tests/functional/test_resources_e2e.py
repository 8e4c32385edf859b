"""The resource plan against measurement: the real notebook on a CPU at a competition's real class count (iMet's
3,474 labels, herbarium 2022's 15,501 classes) or image size (Severstal's 256 x 1,600 px, four classes), with rows
enough to show the growth, prints its plan before training and, at its end, what it took: its peak resident memory
and its output folder. The two agree within 25%, the submission is valid, and iMet's predictions beside it take at
most 4 bytes each."""
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from kit import cli, config
from kit.runtime import checkpoint
from kit.runtime.run_folder import OOF_PRED, TEST_PRED
from kit.smoke import segmentation

pytestmark = pytest.mark.e2e
TOLERANCE = 0.25
FAST = ["epochs=1", "pretrained=false", "device=cpu", "batch_size=64", "num_workers=0", "time_budget_s=3000"]


def tiny(rng, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(path)


def imet(folder, train=4000, test=500, labels=3474):
    """iMet's layout: train.csv id,attribute_ids, train/<id>.png, test/: every one of the 3,474 attributes used, and
    two of ten common ones on each image, so that one epoch's threshold keeps a few labels a row (as a trained
    model's does), not thousands."""
    rng = np.random.default_rng(0)
    ids = [f"{i:016x}" for i in range(train + test)]
    rows = [" ".join(str(a) for a in sorted({i % labels, *rng.integers(0, 10, 2).tolist()})) for i in range(train)]
    for i, name in enumerate(ids):
        tiny(rng, folder / ("train" if i < train else "test") / f"{name}.png")
    pd.DataFrame({"id": ids[:train], "attribute_ids": rows}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"id": ids[train:], "attribute_ids": "0 1 2"}).to_csv(folder / "sample_submission.csv", index=False)


def herbarium(folder, classes=15501, test=500):
    """Herbarium 2022's layout: train_metadata.json (images, annotations, categories), a sheet of every species,
    test_metadata.json, sample_submission.csv Id,Predicted."""
    rng = np.random.default_rng(1)
    images, annotations = [], []
    for k in range(classes):
        image_id = f"{k:05d}__001"
        name = f"{k // 100:03d}/{k % 100:02d}/{image_id}.jpg"
        images.append({"file_name": name, "image_id": image_id})
        annotations.append({"category_id": k, "image_id": image_id})
        tiny(rng, folder / "train_images" / name)
    tests = [{"file_name": f"{i // 1000:03d}/test-{i:06d}.jpg", "image_id": str(i)} for i in range(test)]
    for t in tests:
        tiny(rng, folder / "test_images" / t["file_name"])
    (folder / "train_metadata.json").write_text(json.dumps({"images": images, "annotations": annotations,
                                                            "categories": [{"category_id": k} for k in range(classes)]}))
    (folder / "test_metadata.json").write_text(json.dumps(tests))
    pd.DataFrame({"Id": range(test), "Predicted": 42}).to_csv(folder / "sample_submission.csv", index=False)


def severstal(folder):
    segmentation.make_dataset(config.load("severstal-steel-defect-detection").spec, folder, seed=2, train=8, test=16,
                              h=256, w=1600)


def run(tmp_path, comp, make, params):
    data, out = tmp_path / "data", tmp_path / "out"
    make(data)
    assert cli.main(["run", comp, "--data", str(data), "--output", str(out)]
                    + [a for p in [*FAST, *params] for a in ("-p", p)]) == 0
    record = json.loads((out / "resources.json").read_text())
    log = (out / "kit.log").read_text()
    sample = pd.read_csv(data / config.load(comp).spec.sample_submission)
    shutil.rmtree(data)
    return out, record, log, sample


@pytest.mark.parametrize("comp, make, params", [
    ("imet-2020-fgvc7", imet, ["model_name=test_resnet", "image_size=16", "folds=2"]),
    ("herbarium-2022-fgvc9", herbarium, ["model_name=test_resnet", "image_size=16"]),
    ("severstal-steel-defect-detection", severstal, ["encoder=tu-test_efficientnet", "image_size=128", "folds=2",
                                                     "batch_size=8", "tta=false", "tile_overlap=0.0"]),
], ids=["imet-3474-labels", "herbarium-15501-classes", "severstal-256x1600"])
def test_the_plan_agrees_with_what_the_run_took(tmp_path, comp, make, params):
    out, record, log, sample = run(tmp_path, comp, make, params)
    planned, took = record["planned"], record["measured"]
    assert "resource plan: " in log and "planned (RAM at its peak)" in log and "resources: peak RAM" in log
    for what in ("ram", "output"):
        assert abs(took[what] - planned[what]) <= TOLERANCE * planned[what], (what, took[what], planned[what], log[-3000:])
    sub = pd.read_csv(out / "submission.csv")
    assert list(sub.columns) == list(sample.columns) and sub.iloc[:, 0].tolist() == sample.iloc[:, 0].tolist()
    if comp == "imet-2020-fgvc7":  # 3,474 labels: at most 4 bytes a prediction in the output folder beside it
        folder = next((out / "checkpoints").glob("*/predictions.json")).parent
        oof = np.load(folder / OOF_PRED, mmap_mode="r")
        test = np.load(folder / TEST_PRED, mmap_mode="r")
        count = oof.shape[0] * oof.shape[1] + test.shape[0] * test.shape[1] * test.shape[2]
        in_checkpoints = sum(checkpoint.load(p)["rows"]["pred"].nbytes for p in folder.glob("fold*.meta.pt"))
        kept = (folder / OOF_PRED).stat().st_size + (folder / TEST_PRED).stat().st_size
        assert oof.shape[1] == 3474 and kept + in_checkpoints <= 4 * count * 1.01, (kept, in_checkpoints, count)
