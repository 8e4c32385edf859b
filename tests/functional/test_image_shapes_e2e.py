"""The new image competition shapes end to end: each shipped config's smoke in its competition's Kaggle
layout (pixel tables, Planet's tags, class folders), and their bad inputs stopped in one line by `kit run`."""
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from kit import cli, config, smoke
from kit.smoke.images import LAND, WEATHER

pytestmark = pytest.mark.e2e
PLANET = "planet-understanding-the-amazon-from-space"
PLANET_TAGS = sorted({**WEATHER, **LAND})


def log_of(result) -> str:
    return (result.submission.parent / "kit.log").read_text()


def test_digit_recognizer_reads_pixel_tables_and_numbers_rows_from_one(tmp_path):
    result = smoke.run("digit-recognizer", root=tmp_path)
    sub = pd.read_csv(result.submission)
    assert sub["ImageId"].tolist() == list(range(1, 51)) and set(sub["Label"]) <= set(range(10))
    assert result.score > result.baseline + 0.3  # 10 digits: the prior is 0.1
    log = log_of(result)
    assert "resize train: 400 images of 28 x 28 pixels resized into" in log
    assert "hflip auto     0: the images look different mirrored" in log  # digits: no flips
    assert "decode" not in log  # no image file anywhere


@pytest.fixture(scope="module")
def planet_pair(tmp_path_factory):
    """Planet's shipped config as a code competition's pair: the training kernel's run is the shipped config's
    (an [inference] table adds the second kernel and changes no training value), so one run serves both tests."""
    root = tmp_path_factory.mktemp("planet")
    path = root / "planet.toml"
    path.write_text(config.resolve(PLANET).read_text() + "\n[inference]\n")
    return smoke.run(str(path), root=root / "run")  # fails unless both submissions agree


def test_planet_chooses_its_threshold_on_the_out_of_fold_predictions(planet_pair):
    result = planet_pair
    log = log_of(result)
    oof = re.search(r"out-of-fold f2_samples over 2 of 2 folds: ([0-9.]+) at threshold ([0-9.]+) \(predicting each "
                    r"label's frequency: ([0-9.]+)\)", log)
    assert oof, log[-2000:]
    score, threshold, baseline = map(float, oof.groups())
    assert score > baseline + 0.05 and 0.02 <= threshold <= 0.98
    assert f"labels above {oof.group(2)} (at least the likeliest one): the threshold with the best out-of-fold f2_samples" in log
    sub = pd.read_csv(result.submission, dtype=str, keep_default_na=False)
    sample = pd.read_csv(result.input_dir / "sample_submission_v2.csv", dtype=str)
    assert sub["image_name"].tolist() == sample["image_name"].tolist()
    tags = [row.split() for row in sub["tags"]]
    assert all(tags) and {t for row in tags for t in row} <= set(PLANET_TAGS)
    assert all(row == sorted(set(row)) for row in tags)  # each tag once, in the training's order
    assert "vflip=0.5, rotate90=True" in log  # the config's augmentation is the one in force


def test_plant_seedlings_reads_class_folders(tmp_path):
    result = smoke.run("plant-seedlings-classification", root=tmp_path)
    species = sorted(p.name for p in (result.input_dir / "train").iterdir())
    sub = pd.read_csv(result.submission, dtype=str)
    assert set(sub["species"]) <= set(species) and len(species) == 12
    assert all((result.input_dir / "test" / f).is_file() for f in sub["file"])
    assert result.score > result.baseline + 0.15  # 12 species: the prior is 1/12
    assert "train          192 images, 12 classes (16 to 16 images per class)" in log_of(result)


def run_kit(tmp_path, comp, folder, capsys) -> list[str]:
    cfg = config.load(comp)
    smoke_params = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in cfg.smoke.items()]
    args = ["run", comp, "--data", str(folder), "--output", str(tmp_path / "out"), "-p", "fallback=none"]  # no prior
    assert cli.main(args + [a for p in smoke_params for a in ("-p", p)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert not [line for line in err if "Traceback" in line]
    return err


def make(tmp_path, comp):
    cfg = config.load(comp)
    folder = tmp_path / "data" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=1)
    return folder


def test_kit_run_stops_at_a_wrong_pixel_count(tmp_path, capsys):
    folder = make(tmp_path, "digit-recognizer")
    train = pd.read_csv(folder / "train.csv")
    train.drop(columns=["pixel783"]).to_csv(folder / "train.csv", index=False)
    err = run_kit(tmp_path, "digit-recognizer", folder, capsys)
    assert err[-1] == ("error: train.csv: 783 pixel columns (all but label) do not make a square image (27 x 27 is 729, "
                       "28 x 28 is 784); check target_column and id_column in [data]")


def test_kit_run_stops_at_an_empty_class_folder(tmp_path, capsys):
    folder = make(tmp_path, "plant-seedlings-classification")
    for path in (folder / "train" / "Maize").iterdir():
        path.unlink()
    err = run_kit(tmp_path, "plant-seedlings-classification", folder, capsys)
    assert err[-1] == "error: train/Maize/: a class folder with no images; add its images or remove the folder"


def test_kit_run_stops_at_a_class_the_sample_has_no_column_for(tmp_path, capsys):
    """A label missing from the sample submission's columns: one probability column per class, one class short."""
    folder = make(tmp_path, "plant-seedlings-classification")
    species = sorted(p.name for p in (folder / "train").iterdir())
    sample = pd.read_csv(folder / "sample_submission.csv")
    wide = pd.DataFrame({"file": sample["file"], **{s: 1 / 11 for s in species if s != "Maize"}})
    wide.to_csv(folder / "sample_submission.csv", index=False)
    err = run_kit(tmp_path, "plant-seedlings-classification", folder, capsys)
    assert re.fullmatch(r"error: train/: class 'Maize' \(row \d+\) is not a column of the sample "
                        r"submission \(1 such classes\); fix the labels or the \[data\] names", err[-1]), err[-1]


def test_kit_run_stops_at_a_label_probability_outside_0_1(tmp_path, capsys):
    """Planet's tags written as one 0/1 column per tag (as a multi-label table may be), one cell a 2."""
    folder = make(tmp_path, PLANET)
    train = pd.read_csv(folder / "train_v2.csv")
    tags = sorted(PLANET_TAGS)
    columns = {t: train["tags"].str.split().map(lambda r, t=t: int(t in r)) for t in tags}
    wide = pd.DataFrame({"image_name": train["image_name"], **columns})
    wide.loc[3, "haze"] = 2
    wide.to_csv(folder / "train_v2.csv", index=False)
    sample = pd.read_csv(folder / "sample_submission_v2.csv")
    halves = pd.DataFrame({"image_name": sample["image_name"], **{t: 0.5 for t in tags}})
    halves.to_csv(folder / "sample_submission_v2.csv", index=False)
    err = run_kit(tmp_path, PLANET, folder, capsys)
    assert err[-1] == ("error: train_v2.csv, column 'haze': 2 (row 5) is not a probability in [0, 1] (1 such rows); "
                       "label columns hold 0 or 1")
    assert np.isin(wide[tags].to_numpy(), [0, 1, 2]).all()


def test_planets_inference_kernel_writes_the_training_kernels_tags(planet_pair):
    """As a code competition's pair: the inference kernel chooses the threshold again on the out-of-fold rows
    its checkpoints carry, and predicts with the views training made (flips and quarter turns)."""
    result = planet_pair
    assert result.inference is not None  # smoke.run ran the inference kernel and found its submission the same
    cut = re.compile(r"labels above [0-9.]+ \(at least the likeliest one\)")
    inferred = (result.inference.parent / "kit.log").read_text()
    assert cut.search(log_of(result)).group() == cut.search(inferred).group()
    assert "predict mode" in inferred and pd.read_csv(result.inference).equals(pd.read_csv(result.submission))


def test_planet_rows_without_tags_are_left_out_not_trained_as_none(tmp_path):
    from kit.pipelines import create_pipeline
    from kit.run import start

    folder = make(tmp_path, PLANET)
    train = pd.read_csv(folder / "train_v2.csv")
    train.loc[[4, 9], "tags"] = ""  # an empty cell, which pandas reads as NaN
    train.to_csv(folder / "train_v2.csv", index=False)
    values = config.load(PLANET).parameters(smoke=True)
    pipe = create_pipeline(start("cnn", {**values, "data_dir": str(folder), "output_dir": str(tmp_path / "out")}))
    data = pipe.load()
    assert len(data.ids) == len(train) - 2 and not {train["image_name"][4], train["image_name"][9]} & set(data.ids)
    assert (data.y.sum(1) > 0).all()  # every image trained on has its tags: the at-least-one rule holds


def test_a_cnn_reads_several_value_columns_from_its_table(tmp_path):
    """Several numeric submission columns the training table holds, under rmse: one regressed value each,
    standardised per column (the cnn read them from its one target column before, and stopped in a KeyError)."""
    from kit.pipelines import create_pipeline
    from kit.run import start

    cfg = config.load("dog-breed")
    folder = tmp_path / "data"
    smoke.make_dataset(cfg.spec, folder, seed=1)
    rng = np.random.default_rng(0)
    labels = pd.read_csv(folder / cfg.spec.train)[["id"]]
    labels.assign(x=rng.random(len(labels)), y=10 + rng.random(len(labels))).to_csv(folder / cfg.spec.train, index=False)
    sample = pd.read_csv(folder / cfg.spec.sample_submission)[["id"]]
    sample.assign(x=0.0, y=0.0).to_csv(folder / cfg.spec.sample_submission, index=False)
    values = {**cfg.parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "out")}
    values["competition"] = {**values["competition"], "metric": "rmse"}
    pipe = create_pipeline(start("cnn", values))
    data = pipe.load()
    assert data.target.kind == "values" and data.y.shape == (len(labels), 2)
    mean = pipe.objective(data).mean.tolist()
    assert mean == pytest.approx(data.y.mean(0).tolist(), abs=1e-5) and mean[1] > 10 > mean[0]  # per column


def test_two_value_columns_train_draw_and_predict_the_same_in_the_inference_kernel(tmp_path):
    """Two value columns on scales 0-1 and 100-200, through the built notebooks: the training notebook draws its
    sample grid (a row's values were formatted as one number, a TypeError) and the predict-mode notebook reads
    each column's scale back from the checkpoints (one pooled mean and std made every prediction ~75)."""
    from kit.build import execute, notebook
    from kit.smoke import same_predictions

    cfg = config.load("dog-breed")
    folder = tmp_path / "data"
    smoke.make_dataset(cfg.spec, folder, seed=1)
    rng = np.random.default_rng(0)
    labels = pd.read_csv(folder / cfg.spec.train)[["id"]]
    labels.assign(small=rng.random(len(labels)), big=100 + 100 * rng.random(len(labels))).to_csv(folder / cfg.spec.train,
                                                                                                  index=False)
    pd.read_csv(folder / cfg.spec.sample_submission)[["id"]].assign(small=0.0, big=0.0).to_csv(
        folder / cfg.spec.sample_submission, index=False)
    values = {**cfg.parameters(smoke=True), "epochs": 1, "image_size": 32}
    values["competition"] = {**values["competition"], "metric": "rmse"}
    out, subs = tmp_path / "out", []
    for mode in ("train", "predict"):
        built = tmp_path / f"{mode}.ipynb"
        built.write_text(notebook.dumps(notebook.build("cnn", {**values, "mode": mode})))
        work = tmp_path / mode
        extra = {"model_dir": str(out)} if mode == "predict" else {}
        execute.run(built, tmp_path / f"{mode}-executed.ipynb",
                    {"data_dir": str(folder), "output_dir": str(work), **extra}, cwd=tmp_path)
        if mode == "train":
            shutil.copytree(work, out)
        subs.append(work / "submission.csv")
    same_predictions(subs[0], subs[1], cfg.spec)
    predicted = pd.read_csv(subs[1])
    assert predicted["small"].between(-1, 2).all() and predicted["big"].between(50, 250).all()


def test_a_label_column_image_without_any_of_the_sample_labels_is_drawn(tmp_path, capsys):
    """RANZCR's shape: 0/1 label columns under auc, and images carrying none of the scored labels. The sample
    grid titles such an image by its empty label set (it divided by the empty title's length)."""
    folder = make(tmp_path, PLANET)
    train = pd.read_csv(folder / "train_v2.csv")
    tags = sorted(PLANET_TAGS)
    columns = {t: train["tags"].str.split().map(lambda r, t=t: int(t in r)) for t in tags}
    wide = pd.DataFrame({"image_name": train["image_name"], **columns})
    wide.loc[0, tags] = 0  # the first row is always in the grid
    wide.to_csv(folder / "train_v2.csv", index=False)
    sample = pd.read_csv(folder / "sample_submission_v2.csv")
    pd.DataFrame({"image_name": sample["image_name"], **{t: 0.5 for t in tags}}).to_csv(
        folder / "sample_submission_v2.csv", index=False)
    toml = tmp_path / "ranzcr-like.toml"
    toml.write_text((config.resolve(PLANET)).read_text().replace('metric = "f2_samples"', 'metric = "auc"'))
    cfg = config.load(str(toml))
    smoke_params = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in {**cfg.smoke, "epochs": 1}.items()]
    args = ["run", str(toml), "--data", str(folder), "--output", str(tmp_path / "out")]
    assert cli.main(args + [a for p in smoke_params for a in ("-p", p)]) == 0, capsys.readouterr().err[-2000:]
    sub = pd.read_csv(tmp_path / "out" / "submission.csv")
    assert list(sub.columns) == ["image_name", *tags] and sub[tags].to_numpy().max() <= 1
