"""Blends end to end: two runs of different models on the dog-breed smoke data keep their out-of-fold and test
predictions; `make blend` weighs them and writes a blended submission at least as good out of fold as the best
run; an inference kernel with both training outputs mounted as Kaggle mounts them writes the same submission,
and with one of them missing blends the other and says so; runs that cannot blend are one line each."""
import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit import cli, config, files, smoke
from kit.build import bundle, execute, notebook, publish
from kit.errors import KitError
from kit.run import kept
from kit.runtime.run_folder import OOF, OOF_PRED, OOF_TARGET, PREDICTIONS, TEST_IDS, TEST_PRED

pytestmark = pytest.mark.e2e
MODELS = {"dogs-a": "test_efficientnet", "dogs-b": "test_resnet"}  # two models on the same folds (same seed)
# two epochs: the two models learn enough to differ, and the blend weighs both (after one, the ResNet adds nothing)
SMALL = ["epochs=2", "folds=2", "image_size=64", "batch_size=16", "pretrained=false", "device=cpu"]
BLEND = '\n[blend]\nruns = ["you/dogs-a", "you/dogs-b"]\n'


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory):
    """The dog-breed smoke data and two training runs on it ({slug: output folder}), trained once for every test."""
    root = tmp_path_factory.mktemp("blend")
    cfg = config.load("dog-breed")
    data = root / "data"
    smoke.make_dataset(cfg.spec, data, seed=3)
    outputs = {}
    for slug, model in MODELS.items():
        outputs[slug] = root / slug
        args = ["run", "dog-breed", "--data", str(data), "--output", str(outputs[slug])]
        assert cli.main(args + [a for p in [*SMALL, f"model_name={model}"] for a in ("-p", p)]) == 0
    return root, data, outputs


@pytest.fixture(scope="session")
def made_blend(two_runs):
    """`kit blend` (make blend's verb) of the two runs: its output folder, and what it printed."""
    root, _, outputs = two_runs
    out = root / "made-blend"
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        assert cli.main(["blend", "dog-breed", str(outputs["dogs-a"]), str(outputs["dogs-b"]), "--out", str(out)]) == 0
    return out, shown.getvalue()


def inference(root: Path, data: Path, mounted: dict[str, Path]) -> Path:
    """The inference notebook of a config whose [blend] names both runs, run as Kaggle runs it: the competition's
    test files only, each training output mounted at notebooks/you/<slug>/. Returns its output folder."""
    toml = root / "dogs-blend.toml"
    toml.write_text(config.resolve("dog-breed").read_text() + BLEND)
    return mounted_inference(root, data, mounted, config.load(str(toml)))


def mounted_inference(root: Path, data: Path, mounted: dict[str, Path], cfg, files_too: tuple[str, ...] = ()) -> Path:
    """`cfg`'s inference notebook (a cnn's) with the runs `mounted` as Kaggle mounts them, the competition's test
    files and `files_too` beside them; its output folder."""
    infer = root / "inference"
    shutil.rmtree(infer, ignore_errors=True)
    input_root = infer / "kaggle" / "input"
    competition = input_root / "competitions" / cfg.spec.slug
    competition.mkdir(parents=True)
    for name in [*smoke.test_files(cfg.spec, data), *files_too]:
        (shutil.copytree if (data / name).is_dir() else shutil.copy2)(data / name, competition / name)
    for slug, output in mounted.items():
        shutil.copytree(output, input_root / "notebooks" / "you" / slug)
    out = infer / "kaggle" / "working"
    out.mkdir(parents=True)
    built = infer / "inference.ipynb"
    files.write_text(built, notebook.dumps(notebook.build("cnn", cfg.inference_parameters(smoke=True), internet=False)))
    execute.run(built, infer / "executed.ipynb", {"output_dir": str(out)}, cwd=out,
                env={"KIT_KAGGLE_INPUT": str(input_root), "KIT_CACHE_DIR": str(infer / "cache")})
    smoke.check_submission(out / "submission.csv", data / cfg.spec.sample_submission, cfg.spec)
    return out


def test_each_run_keeps_its_predictions_and_the_blend_beats_the_best_run(two_runs, made_blend):
    _, data, outputs = two_runs
    made, shown = made_blend
    labels = pd.read_csv(data / "labels.csv")
    sample = pd.read_csv(data / "sample_submission.csv")
    for output in outputs.values():
        folder = kept.find(output)
        oof = pd.read_csv(folder / OOF, dtype={"id": str})
        assert sorted(oof["id"]) == sorted(labels["id"]) and set(oof["fold"]) == {0, 1} and (oof["scored"] == 1).all()
        assert list(oof.columns) == ["id", "fold", "scored"]
        pred = np.load(folder / OOF_PRED)  # probabilities, the submission's shape, 4 bytes each
        assert pred.shape == (len(oof), len(sample.columns) - 1) and pred.dtype == np.float32
        truth = np.array(sample.columns[1:])[np.load(folder / OOF_TARGET)]
        assert dict(zip(oof["id"], truth)) == dict(zip(labels["id"], labels["breed"]))
        test = np.load(folder / TEST_PRED)
        assert test.shape == (2, len(sample), pred.shape[1]) and np.allclose(test.sum(2), 1.0, atol=1e-5)
        assert list(pd.read_csv(folder / TEST_IDS, dtype={"id": str})["id"]) == list(sample["id"])
        assert json.loads((folder / PREDICTIONS).read_text())["run"] == folder.name
        published = {p.name for p in publish.run_files(folder)}  # make publish carries them with the folds
        assert {OOF, TEST_PRED, PREDICTIONS, "fold0.pt", "fold0.meta.pt"} <= published
    record = json.loads((made / "blend.json").read_text())
    singles = [r["score"] for r in record["runs"]]
    assert record["score"] <= min(singles) + 1e-12  # log loss: the blend at least as good as the best run
    assert all(r["weight"] >= 0 for r in record["runs"]) and sum(r["weight"] for r in record["runs"]) == pytest.approx(1)
    assert "out-of-fold  weight" in shown and f"{record['runs'][0]['weight']:.3f}" in shown
    assert len(pd.read_csv(made / OOF)) == len(labels)


def test_the_inference_kernel_blends_as_make_blend_does(two_runs, made_blend):
    root, data, outputs = two_runs
    out = inference(root, data, outputs)
    smoke.same_predictions(out / "submission.csv", made_blend[0] / "submission.csv", config.load("dog-breed").spec)
    log = (out / "kit.log").read_text()
    assert "blend          2 of 2 runs attached: you/dogs-a (cnn" in log
    assert "blend of 2 runs on the" in log and "you/dogs-b: a cnn run; its own set-up" in log


def test_with_a_run_missing_the_kernel_blends_the_rest_and_says_so(two_runs):
    root, data, outputs = two_runs
    out = inference(root, data, {"dogs-a": outputs["dogs-a"]})
    smoke.same_predictions(out / "submission.csv", outputs["dogs-a"] / "submission.csv", config.load("dog-breed").spec)
    log = (out / "kit.log").read_text()
    assert "WARNING: blend: you/dogs-b is not attached; blending the other runs" in log
    assert "WARNING: blend: 1 of the 2 runs named take part (you/dogs-a): the submission is its predictions alone" in log


def other_folds(folder: Path) -> None:
    oof = pd.read_csv(folder / OOF)
    oof["fold"] = 1 - oof["fold"]
    oof.to_csv(folder / OOF, index=False)


def other_ids(folder: Path) -> None:
    oof = pd.read_csv(folder / OOF)
    oof["id"] = "x" + oof["id"].astype(str)
    oof.to_csv(folder / OOF, index=False)


def other_columns(folder: Path) -> None:
    record = json.loads((folder / PREDICTIONS).read_text())
    record["target"]["columns"] = [c.upper() for c in record["target"]["columns"]]
    (folder / PREDICTIONS).write_text(json.dumps(record))


@pytest.mark.parametrize("spoil, message", [
    (other_folds, r"error: .*dogs-b splits the rows into other folds than .*dogs-a \(id '\w+': fold \d there, \d here"),
    (other_ids, r"error: .*dogs-a validates id '\w+' in fold 1, and .*dogs-b has no such id \(\d+ such rows\)"),
    (other_columns, r"error: .*dogs-b predicts the target columns \['AFFENPINSCHER', .*\] and .*dogs-a \['affenpinscher'"),
])
def test_runs_that_cannot_blend_are_one_line(two_runs, tmp_path, capsys, spoil, message):
    _, _, outputs = two_runs
    spoilt = tmp_path / "dogs-b"
    shutil.copytree(outputs["dogs-b"], spoilt)
    spoil(kept.find(spoilt))
    assert cli.main(["blend", "dog-breed", str(outputs["dogs-a"]), str(spoilt), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and re.fullmatch(message + r".*", err), err
    assert not (tmp_path / "out").exists()  # nothing half-written


# -- [blend] in a config: the inference kernel attaches the runs ------------------------------------------------

def test_the_inference_kernel_attaches_every_run_of_the_blend(tmp_path, kaggle_user, write_toml):
    path = write_toml('[blend]\nruns = ["tester/dogs-a", "tester/dogs/pytorch/default/2", "/kaggle/input/runs/c"]\n',
                      base=True)
    built = bundle.build(str(path), tmp_path / "dogs")
    meta = built.inference.metadata
    assert meta["kernel_sources"] == ["tester/dogs-a"] and meta["model_sources"] == ["tester/dogs/pytorch/default/2"]
    assert 'blend = [\\"tester/dogs-a\\", \\"tester/dogs/pytorch/default/2\\", \\"/kaggle/input/runs/c\\"]' in \
        built.inference.notebook.read_text()
    assert "blend = []" in built.notebook.read_text()  # the training kernel blends nothing


@pytest.mark.parametrize("table, message", [
    ('[blend]\nruns = []\n', r"\[blend\] runs is empty"),
    ('[blend]\nruns = ["dogs-a"]\n', r"\[blend\] runs: 'dogs-a' is neither a kernel \(owner/kernel-slug\)"),
    ('[inference]\ntrained_model = "tester/dogs/pytorch/default/1"\n[blend]\nruns = ["tester/dogs-a"]\n',
     r"\[inference\] trained_model and \[blend\] are both set"),
])
def test_bad_blend_tables_are_one_line(write_toml, table, message):
    with pytest.raises(KitError, match=message):
        config.load(str(write_toml(table, base=True)))


def test_a_booster_and_a_tabular_network_blend(tmp_path, capsys):
    """Runs of different model families on one table (XGBoost's fold checkpoints and the network's, in the one
    loop) keep their predictions in the same shape and blend: the blend at least as good out of fold as the best."""
    cfg = config.load("spaceship-titanic")
    data = tmp_path / "data"
    smoke.make_dataset(cfg.spec, data, seed=3)
    outputs = []
    for model, extra in (("xgboost", []), ("mlp", ["epochs=8", "patience=0"])):
        outputs.append(tmp_path / model)
        values = {**cfg.smoke, "model_name": model, **dict(p.split("=", 1) for p in extra)}
        pairs = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items()]
        args = ["run", "spaceship-titanic", "--data", str(data), "--output", str(outputs[-1])]
        assert cli.main(args + [a for pair in pairs for a in ("-p", pair)]) == 0
    capsys.readouterr()
    assert cli.main(["blend", "spaceship-titanic", *map(str, outputs), "--out", str(tmp_path / "blend")]) == 0
    record = json.loads((tmp_path / "blend" / "blend.json").read_text())
    assert len(record["runs"]) == 2 and record["score"] >= max(r["score"] for r in record["runs"]) - 1e-12  # accuracy
    sub = pd.read_csv(tmp_path / "blend" / "submission.csv", dtype=str)
    assert sub["PassengerId"].tolist() == pd.read_csv(data / "sample_submission.csv", dtype=str)["PassengerId"].tolist()
    assert set(sub["Transported"]) <= {"True", "False"}


# -- a notebook of one template blending a run of another: a cnn's inference kernel and a tabular run -------------

TABULAR = """[competition]
slug = "dog-breed-identification"
template = "tabular"
metric = "log_loss"

[data]
train = "dogs_table.csv"
test = "dogs_test_table.csv"
sample_submission = "sample_submission.csv"
id_column = "id"
target_column = "breed"
fold_column = "fold"

[kernel]
title = "Dog Breed Table"
"""


@pytest.fixture(scope="session")
def cnn_and_table(tmp_path_factory):
    """The dog-breed smoke data with a table of numbers beside its images (each photo's features: its breed shows in
    them), the same folds for both (a fold column), a cnn run and a tabular (XGBoost) run on them; (root, data,
    {slug: output folder}, the cnn's config with a [blend] of both)."""
    root = tmp_path_factory.mktemp("mixed")
    data = root / "data"
    smoke.make_dataset(config.load("dog-breed").spec, data, seed=3)
    labels = pd.read_csv(data / "labels.csv")
    labels["fold"] = [k % 2 for k in range(len(labels))]
    labels.to_csv(data / "labels.csv", index=False)
    rng = np.random.default_rng(0)
    codes = pd.factorize(labels["breed"], sort=True)[0]
    table = labels.assign(**{f"x{k}": codes * (k + 1) + rng.normal(0, 2, len(labels)) for k in range(3)})
    table.to_csv(data / "dogs_table.csv", index=False)
    test = pd.read_csv(data / "sample_submission.csv")[["id"]]
    test.assign(**{f"x{k}": rng.normal(0, 4, len(test)) for k in range(3)}).to_csv(data / "dogs_test_table.csv", index=False)
    cnn = root / "dogs-cnn.toml"
    text = config.resolve("dog-breed").read_text().replace('image_ext = ".jpg"', 'image_ext = ".jpg"\nfold_column = "fold"')
    cnn.write_text(text + '\n[blend]\nruns = ["you/dogs-cnn", "you/dogs-table"]\n')
    tabular = root / "dogs-table.toml"
    tabular.write_text(TABULAR)
    outputs = {"dogs-cnn": root / "dogs-cnn", "dogs-table": root / "dogs-table"}
    train = {"dogs-cnn": (cnn, [*SMALL, "model_name=test_resnet"]),
             "dogs-table": (tabular, ["model_name=xgboost", "folds=2", "rounds=50", "device=cpu"])}
    for slug, (toml, values) in train.items():
        args = ["run", str(toml), "--data", str(data), "--output", str(outputs[slug])]
        assert cli.main(args + [a for p in values for a in ("-p", p)]) == 0
    return root, data, outputs, config.load(str(cnn))


def test_a_cnn_inference_kernel_blends_a_tabular_run(cnn_and_table):
    """The cnn notebook's model_name (a timm name) is no choice of the tabular run's: that run predicts with its
    own settings from its checkpoints and this notebook's prediction-time ones (device, precision, ...)."""
    root, data, outputs, cfg = cnn_and_table
    out = mounted_inference(root, data, outputs, cfg, ("dogs_test_table.csv",))
    log = (out / "kit.log").read_text()
    assert "blend: you/dogs-table: a tabular run; its own set-up and data, then its folds" in log
    assert "blend of 2 runs on the" in log and "WARNING" not in log.split("blend: you/dogs-table")[1]
    record = json.loads((out / "blend.json").read_text())
    assert [r["name"] for r in record["runs"]] == ["you/dogs-cnn", "you/dogs-table"]


def test_a_run_that_cannot_predict_is_left_out_of_the_blend(cnn_and_table):
    """The tabular run's test table is not attached: it cannot predict, and the cnn run is the submission alone."""
    root, data, outputs, cfg = cnn_and_table
    out = mounted_inference(root, data, outputs, cfg, ())
    log = (out / "kit.log").read_text()
    assert re.search(r"WARNING: blend: you/dogs-table cannot predict here \(.*dogs_test_table.csv.*\); it is left out "
                     r"of the blend", log), log[-3000:]
    assert "blend: 1 of the 2 runs named take part (you/dogs-cnn): the submission is its predictions alone" in log
    smoke.same_predictions(out / "submission.csv", outputs["dogs-cnn"] / "submission.csv", cfg.spec)
