"""Code competitions: `make kernel` builds a training kernel and an inference kernel that reads its output;
the inference notebook finds the trained folds in Kaggle's mount layouts and predicts from the test files
alone, equal to the training kernel's own submission, and again on a hidden test set at a rerun."""
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from kit import config, smoke
from kit.build import bundle, metadata
from kit.errors import KitError
from kit.runtime import checkpoint, runs, trained
from kit.smoke import images as smoke_images

INFERENCE = """
[inference]
machine_shape = "NvidiaTeslaT4"
"""
SMALL = {"epochs": 2, "folds": 2}  # [smoke] keeps its tiny model; fewer epochs are enough to compare


@pytest.fixture
def pair_toml(write_toml):
    return write_toml(INFERENCE, name="dogs-pair.toml", base=True)


def test_make_kernel_builds_both_bundles(tmp_path, kaggle_user, pair_toml):
    built = bundle.build(str(pair_toml), tmp_path / "dogs-pair")
    infer = built.inference
    assert infer is not None and infer.folder == tmp_path / "dogs-pair-infer"
    meta = json.loads((infer.folder / "kernel-metadata.json").read_text())
    metadata.validate(meta)  # the strict check, on what was written
    metadata.validate(json.loads((built.folder / "kernel-metadata.json").read_text()))
    assert meta["kernel_sources"] == ["tester/dog-breed-efficientnet"]
    assert meta["id"] == "tester/dog-breed-efficientnet-inference" and meta["title"] == "Dog Breed EfficientNet Inference"
    assert meta["enable_internet"] is False and meta["competition_sources"] == ["dog-breed-identification"]
    assert 'mode: str = \\"predict\\"' in infer.notebook.read_text()
    assert 'mode: str = \\"train\\"' in built.notebook.read_text()
    again = bundle.build(str(pair_toml), tmp_path / "dogs-pair")
    assert not again.changed and not again.inference.changed  # byte-identical rebuilds


@pytest.mark.parametrize("table, message", [
    ('[inference]\ntitle = "Dog Breed EfficientNet"\n', "gives the training kernel's slug"),
    ('[inference]\ntitle = "x" \n', "has 1 characters"),
    ('[inference]\nenable_internet = true\n', "enable_internet"),
    ('[inference]\ntrained_model = "tester/dogs/pytorch/default"\n', "trained_model 'tester/dogs/pytorch/default' is not of "
                                                                     "the form owner/model/framework/variation/version"),
])
def test_bad_inference_tables_are_one_line(tmp_path, kaggle_user, write_toml, table, message):
    with pytest.raises(KitError, match=message):
        bundle.build(str(write_toml(table, base=True)), tmp_path / "out")


def test_a_long_title_needs_its_own_inference_title(tmp_path, kaggle_user, write_toml):
    path = write_toml(INFERENCE, base=True)
    path.write_text(path.read_text().replace('title = "Dog Breed EfficientNet"', f'title = "{"Dog Breed " * 4}Net"'))
    with pytest.raises(KitError, match=r"\[inference\] title .* set \[inference\] title"):
        bundle.build(str(path), tmp_path / "out")


@pytest.fixture(scope="module")
def trained_pair(tmp_path_factory):
    """The dog-breed smoke with an [inference] table: the training notebook, then the inference notebook on
    its mounted output (smoke.run compares the two submissions to 1e-4 and raises if they differ)."""
    root = tmp_path_factory.mktemp("pair")
    path = root / "dogs-pair.toml"
    path.write_text(config.resolve("dog-breed").read_text() + INFERENCE)
    return config.load(str(path)), root, smoke.run(str(path), root=root, overrides=SMALL)


def test_the_inference_notebook_submits_what_the_training_kernel_did(trained_pair):
    cfg, root, result = trained_pair
    assert result.inference is not None
    competition = root / "inference" / "kaggle" / "input" / "competitions" / cfg.spec.slug
    assert sorted(p.name for p in competition.iterdir()) == ["sample_submission.csv", "test"]  # no labels, no train/
    mounted = root / "inference" / "kaggle" / "input" / "notebooks" / smoke.owner() / "dog-breed-efficientnet"
    assert list(mounted.glob("checkpoints/*/fold*.pt"))
    a, b = pd.read_csv(result.submission), pd.read_csv(result.inference)
    numbers = a.columns[1:]
    assert (a[numbers] - b[numbers]).abs().to_numpy().max() <= 1e-4
    log = (root / "inference" / "kaggle" / "working" / "kit.log").read_text()
    assert "predict mode" in log and " epoch 1/" not in log  # nothing trained


def test_a_rerun_predicts_the_hidden_test_set(trained_pair, tmp_path):
    cfg, root, result = trained_pair
    hidden = tmp_path / "hidden"
    smoke_images.make_images(cfg.spec, hidden, seed=7, test=5)  # other ids, another count
    changed = {**SMALL, "image_size": 96}  # the cell says 96; the model was trained at 64, and predicts at 64
    sub = smoke.run_inference(cfg, tmp_path, root / "kaggle" / "working", hidden, changed,
                              env={"KAGGLE_IS_COMPETITION_RERUN": "1"})
    got, want = pd.read_csv(sub), pd.read_csv(hidden / cfg.spec.sample_submission)
    assert list(got["id"]) == list(want["id"]) and len(got) == 5
    assert set(got["id"]).isdisjoint(pd.read_csv(result.submission)["id"])
    log = (tmp_path / "inference" / "kaggle" / "working" / "kit.log").read_text()
    assert "on the hidden test set (a competition rerun)" in log
    assert "from the checkpoints: image_size 96 -> 64" in log


def test_a_published_run_predicts_what_the_training_kernel_did(trained_pair, tmp_path, fake_kaggle, kaggle_user):
    """make publish uploads the run's folds as a model version (through the official client); an inference
    kernel built against that version, with it mounted where Kaggle mounts a model and no training kernel
    attached, submits what the training kernel did."""
    cfg, root, result = trained_pair
    env = {**os.environ, **fake_kaggle.env(), "KAGGLE_USERNAME": "tester", "KAGGLE_KEY": "f00d" * 8, "TMPDIR": str(tmp_path),
           "KAGGLE_CONFIG_DIR": str(kaggle_user), "KIT_KERNELS_DIR": str(tmp_path / "kernels"), "KIT_POLL_S": "0.01"}
    working = root / "kaggle" / "working"
    done = subprocess.run([sys.executable, "-m", "kit", "publish", str(cfg.path), "--from", str(working)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    version = "tester/dog-breed-efficientnet/pytorch/default/1"
    assert done.stdout.splitlines()[-2:] == ["[inference]", f'trained_model = "{version}"']
    published = tmp_path / "published"
    published.mkdir()
    for name, data in fake_kaggle.instances[version.rsplit("/", 1)[0]][0].items():  # what reached Kaggle
        (published / name).write_bytes(data)
    path = tmp_path / "dogs-published.toml"
    path.write_text(cfg.path.read_text().replace("[inference]\n", f'[inference]\ntrained_model = "{version}"\n'))
    infer = bundle.build(str(path), tmp_path / "dogs-published").inference
    assert infer.metadata["model_sources"] == [version] and infer.metadata["kernel_sources"] == []
    inferred = smoke.run_inference(config.load(str(path)), tmp_path, published, root / "kaggle" / "input" / cfg.spec.slug,
                                   SMALL, mount=f"models/{version}")
    smoke.same_predictions(result.submission, inferred, cfg.spec)  # to 1e-4
    log = (tmp_path / "inference" / "kaggle" / "working" / "kit.log").read_text()
    assert f"models/{version}" in log and "predict mode" in log


def test_no_trained_model_is_one_line(trained_pair, tmp_path):
    cfg, root, _ = trained_pair
    output = tmp_path / "no-checkpoints"  # a training kernel that wrote its submission and nothing else
    output.mkdir()
    shutil.copy2(root / "kaggle" / "working" / "submission.csv", output)
    attached = f"competitions/dog-breed-identification, notebooks/{smoke.owner()}/dog-breed-efficientnet"
    with pytest.raises(KitError, match=rf"no trained kit model under .*it holds: {attached}\); "
                                       r"attach the training kernel's output"):
        smoke.run_inference(cfg, tmp_path, output, root / "kaggle" / "input" / cfg.spec.slug, SMALL)


def test_two_trained_models_are_one_line_that_names_both(trained_pair, tmp_path):
    cfg, root, _ = trained_pair
    output = tmp_path / "two"
    shutil.copytree(root / "kaggle" / "working", output / "first")
    shutil.copytree(root / "kaggle" / "working", output / "second")
    with pytest.raises(KitError, match=r"2 trained kit models under .*first.*second.*set model_dir"):
        smoke.run_inference(cfg, tmp_path, output, root / "kaggle" / "input" / cfg.spec.slug, SMALL)


# -- finding the trained run: Kaggle's mount layouts, and what cannot be used -----------------------------

def fake_run(folder, template="cnn", fmt=runs.FORMAT, stamp=True, name="abc123"):
    """A training run's output as kit writes it: checkpoints/<run>/run.json and fold0.pt (no real weights)."""
    run = folder / "checkpoints" / name
    run.mkdir(parents=True)
    checkpoint.save_json({"format": fmt, "template": template, "params": {}}, run / "run.json")
    kit_stamp = {"format": fmt, "version": "0", "template": template, "params": {"image_size": 64}, "recipe": {}}
    checkpoint.save({"model": {}}, run / "fold0.pt")
    checkpoint.save({"epoch": 1, "score": 0.5, **({"kit": kit_stamp} if stamp else {})}, run / "fold0.meta.pt")
    checkpoint.save_json({"run": name}, folder / "checkpoints" / "latest.json")
    return run


@pytest.mark.parametrize("layout", [
    "dog-breed-efficientnet",
    "notebooks/tester/dog-breed-efficientnet",
    "datasets/tester/dog-breed-weights/output/kaggle/working",
    "models/tester/dogs/pytorch/default/3",
])
def test_every_mount_layout_is_found(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    (tmp_path / "competitions" / "dog-breed-identification").mkdir(parents=True)
    run = fake_run(tmp_path / layout)
    assert trained.find("", "cnn").folder == run
    assert trained.find(layout.split("/")[0], "cnn").folder == run  # model_dir relative to /kaggle/input


def test_latest_run_of_an_output_is_taken(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    fake_run(tmp_path / "out", name="older")
    newer = fake_run(tmp_path / "out2", name="newer")
    shutil.copytree(newer, tmp_path / "out" / "checkpoints" / "newer")
    (tmp_path / "out" / "checkpoints" / "latest.json").write_text('{"run": "newer"}')
    shutil.rmtree(tmp_path / "out2")
    assert trained.find("", "cnn").folder == tmp_path / "out" / "checkpoints" / "newer"


@pytest.mark.parametrize("kwargs, template, message", [
    ({"template": "lstm"}, "cnn", "holds a lstm model and this is a cnn notebook"),
    ({"fmt": 2}, "cnn", "checkpoint format 2, and this kit reads format"),
    ({"stamp": False}, "cnn", "has no kit stamp"),
])
def test_what_cannot_predict_here_is_one_line(tmp_path, monkeypatch, kwargs, template, message):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    fake_run(tmp_path / "training-output", **kwargs)
    with pytest.raises(KitError, match=message):
        trained.find("", template)


def test_a_model_dir_that_is_not_a_folder_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    with pytest.raises(KitError, match="model_dir 'nowhere' is not a folder"):
        trained.find("nowhere", "cnn")


def test_the_text_inference_kernel_gets_the_model_folder_the_training_kernel_had(tmp_path, kaggle_user):
    """Prediction rebuilds each fold's encoder from the model folder: the dataset or model holding it is
    attached to both kernels, and the build no longer warns that it is missing."""
    from kit import config

    path = tmp_path / "essays.toml"
    shipped = config.resolve("learning-agency-lab-automated-essay-scoring-2").read_text()
    path.write_text(shipped.replace("private = true", 'private = true\ndataset_sources = ["tester/deberta-v3-small"]'))
    built = bundle.build(str(path), tmp_path / "essays")
    for folder in (built.folder, built.inference.folder):
        assert json.loads((folder / "kernel-metadata.json").read_text())["dataset_sources"] == ["tester/deberta-v3-small"]
    assert not metadata.warnings_for(config.load(str(path)))
    assert metadata.warnings_for(config.load("learning-agency-lab-automated-essay-scoring-2"))  # the shipped one names none


def kit_run(comp: str, data, out, *params: str) -> None:
    from kit import cli

    cfg = config.load(comp)
    values = {**cfg.smoke, "epochs": 1, **dict(p.split("=", 1) for p in params)}
    args = ["run", comp, "--data", str(data), "--output", str(out)]
    pairs = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in values.items()]
    assert cli.main(args + [a for p in pairs for a in ("-p", p)]) == 0


@pytest.mark.parametrize("comp", ["digit-recognizer", "learning-agency-lab-automated-essay-scoring-2", "spaceship-titanic"])
def test_a_rerun_whose_test_table_lists_rows_the_sample_does_not_predicts_them(tmp_path, comp):
    """A code competition's rerun may swap test.csv alone: the inference kernel that passed its commit stopped
    on Kaggle ("the test table and the sample submission must list the same ids"). In predict mode the test
    table's rows make the submission's, with one line."""
    cfg = config.load(comp)
    data = tmp_path / "input" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, data, seed=4)
    extra = []
    if cfg.spec.template == "text":
        from kit.smoke.text import make_model_folder

        extra = [f"model_path={make_model_folder(cfg.spec, data, tmp_path / 'input', {'model_path': 'tiny'}, seed=4)}"]
    kit_run(comp, data, tmp_path / "trained", *extra)
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    test = pd.read_csv(data / cfg.spec.test, dtype={cfg.spec.id_column: str})
    more = test.iloc[:3].copy()
    if cfg.spec.id_column in more:
        more[cfg.spec.id_column] = [f"hidden{k}" for k in range(3)]
    pd.concat([test, more]).to_csv(hidden / cfg.spec.test, index=False)
    shutil.copy(data / cfg.spec.sample_submission, hidden / cfg.spec.sample_submission)  # the public sample, unchanged
    kit_run(comp, hidden, tmp_path / "rerun", "mode=predict", f"model_dir={tmp_path / 'trained'}", *extra)
    sub = pd.read_csv(tmp_path / "rerun" / "submission.csv", dtype={cfg.spec.id_column: str})
    assert len(sub) == len(test) + 3 and list(sub.columns) == list(pd.read_csv(hidden / cfg.spec.sample_submission).columns)
    if cfg.spec.id_column in more:
        assert sub[cfg.spec.id_column].tolist()[-3:] == ["hidden0", "hidden1", "hidden2"]
    else:  # ImageId 1, 2, ... go on past the sample's
        assert sub[cfg.spec.id_column].astype(int).tolist() == list(range(1, len(test) + 4))
    assert "rows are the test table's" in (tmp_path / "rerun" / "kit.log").read_text()
