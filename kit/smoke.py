"""`make smoke`: a tiny dataset in the competition's exact Kaggle layout, the built notebook run on it with
papermill on a real Jupyter kernel, and the submission it writes checked."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit import config as kit_config
from kit import files, params
from kit.errors import KitError
from kit.kernel import execute, notebook
from kit.kernel.bundle import ROOT
from kit.smoke_images import make_class_folders, make_images, make_pixels, make_tags
from kit.smoke_text import build_tiny_encoder, make_essays
from kit.spec import Spec

SMOKE = ROOT / ".smoke"
MULTI_LABEL = ("f1_samples", "f2_samples")  # a cnn whose rows hold several labels: planet's tags


@dataclass(frozen=True)
class SmokeResult:
    input_dir: Path
    executed: Path
    submission: Path
    rows: int
    metric: str
    score: float  # out-of-fold
    baseline: float  # predicting the training mean or the class prior
    baseline_name: str
    inference: Path | None = None  # with [inference]: the inference kernel's submission, equal to `submission`


def run(comp: str, root: Path | None = None, seed: int = 0, overrides: dict | None = None,
        python: str | None = None) -> SmokeResult:
    """Generate the data under <root>/kaggle/input/<slug>, build the notebook with [smoke] overrides (and
    `overrides`), run it with outputs to <root>/kaggle/working on a kernel of `python` (default: this
    environment, without kit), and check the submission against the sample submission."""
    config = kit_config.load(comp)
    parameters = {**config.parameters(smoke=True), **(overrides or {})}
    params.check(config.spec.template, {k: v for k, v in parameters.items() if k != "competition"}, "-p")
    root = root or SMOKE / config.name
    input_root = root / "kaggle" / "input"
    working = root / "kaggle" / "working"
    for stale in ("kaggle", "cache"):
        shutil.rmtree(root / stale, ignore_errors=True)
    data_dir = input_root / config.spec.slug
    make_dataset(config.spec, data_dir, seed)
    if config.spec.template == "text":  # the model folder an attached dataset would hold, in a Kaggle model's layout
        make_text_model(config.spec, data_dir, input_root, parameters["model_path"], seed)
    built = root / "kernel.ipynb"
    files.write_text(built, notebook.dumps(notebook.build(config.spec.template, parameters, config.kernel.internet)))
    working.mkdir(parents=True)
    executed = root / "executed.ipynb"
    env = {"KIT_KAGGLE_INPUT": str(input_root), "KIT_CACHE_DIR": str(root / "cache")}
    execute.run(built, executed, {"output_dir": str(working)}, cwd=working, env=env, python=python)
    submission = working / "submission.csv"
    rows = check_submission(submission, data_dir / config.spec.sample_submission, config.spec)
    cv = json.loads((working / "cv.json").read_text())
    inferred = None
    if config.inference is not None:  # the pair: the inference kernel must submit what the training kernel did
        inferred = run_inference(config, root, working, data_dir, overrides, python=python)
        same_predictions(inferred, submission, config.spec)
    return SmokeResult(data_dir, executed, submission, rows, cv["metric"], cv["score"], cv["baseline"], cv["baseline_name"],
                       inferred)


def test_files(spec: Spec) -> list[str]:
    """What a code competition's inference kernel sees of the competition: the test files and the sample."""
    if spec.template == "cnn" and spec.layout != "pixels":
        return [spec.sample_submission, spec.test_images]
    return [spec.test, spec.sample_submission]  # tables: pixels' test.csv, a sequence's long table


def run_inference(config, root: Path, working: Path, data_dir: Path, overrides: dict | None = None,
                  env: dict | None = None, python: str | None = None) -> Path:
    """The inference notebook run as Kaggle runs it: the training kernel's output mounted where Kaggle mounts
    an attached kernel's (<input>/notebooks/<user>/<slug>/), the competition's folder holding only the test
    files and the sample submission (from `data_dir`), and model_dir left empty. Returns its submission."""
    from kit.kernel import metadata

    infer = root / "inference"
    shutil.rmtree(infer, ignore_errors=True)
    input_root = infer / "kaggle" / "input"
    competition = input_root / "competitions" / config.spec.slug
    competition.mkdir(parents=True)
    for name in test_files(config.spec):
        source = data_dir / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, competition / name)
    shutil.copytree(working, input_root / "notebooks" / owner() / metadata.kernel_slug(config))
    models = root / "kaggle" / "input" / "models"
    if models.is_dir():  # an attached model (the text template's folder) is attached to both kernels
        shutil.copytree(models, input_root / "models")
    out = infer / "kaggle" / "working"
    out.mkdir(parents=True)
    built = infer / "inference.ipynb"
    values = {**config.inference_parameters(smoke=True), **(overrides or {})}
    files.write_text(built, notebook.dumps(notebook.build(config.spec.template, values, internet=False)))
    execute.run(built, infer / "executed.ipynb", {"output_dir": str(out)}, cwd=out, python=python,
                env={"KIT_KAGGLE_INPUT": str(input_root), "KIT_CACHE_DIR": str(infer / "cache"), **(env or {})})
    check_submission(out / "submission.csv", competition / config.spec.sample_submission, config.spec)
    return out / "submission.csv"


def owner() -> str:
    """The training kernel's owner in the mounted layout: the Kaggle user, where one is set (the smoke needs none)."""
    return os.environ.get("KAGGLE_USERNAME") or "you"


def same_predictions(a: Path, b: Path, spec: Spec, tolerance: float = 1e-4) -> None:
    """A KitError unless two submissions hold the same labels and values within `tolerance`."""
    x, y = (pd.read_csv(p, dtype={spec.id_column: str}) for p in (a, b))
    if list(x.columns) != list(y.columns) or not x[spec.id_column].equals(y[spec.id_column]):
        raise KitError(f"{a} and {b} differ in their columns or ids")
    for column in x.columns:
        if pd.api.types.is_numeric_dtype(x[column]) and pd.api.types.is_numeric_dtype(y[column]):
            gap = float(np.abs(x[column].to_numpy(float) - y[column].to_numpy(float)).max(initial=0.0))
            if gap > tolerance:
                raise KitError(f"{a} differs from {b} in column '{column}' by up to {gap:.2g} (more than {tolerance:g})")
        elif not x[column].astype(str).equals(y[column].astype(str)):
            raise KitError(f"{a} differs from {b} in column '{column}'")


def check_submission(path: Path, sample_path: Path, spec: Spec) -> int:
    """Rows in the submission, after checking ids, order and columns against the sample submission."""
    if not path.is_file():
        raise KitError(f"the notebook finished without writing {path}")
    sub = pd.read_csv(path, dtype={spec.id_column: str})
    sample = pd.read_csv(sample_path, dtype={spec.id_column: str})
    if list(sub.columns) != list(sample.columns):
        raise KitError(f"{path}: columns differ from {sample_path.name}'s")
    if not sub[spec.id_column].equals(sample[spec.id_column]):
        raise KitError(f"{path}: ids differ from {sample_path.name}'s, or are in another order")
    if sub.isna().any().any():
        raise KitError(f"{path}: empty values")
    return len(sub)


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    """The competition's layout, picked from the spec: a cnn's image layout and metric, a sequence's slug."""
    if spec.template == "cnn" and spec.layout == "pixels":
        make_pixels(spec, folder, seed)
    elif spec.template == "cnn" and spec.layout == "folders":
        make_class_folders(spec, folder, seed)
    elif spec.template == "cnn" and spec.metric in MULTI_LABEL:
        make_tags(spec, folder, seed)
    elif spec.template == "cnn":
        make_images(spec, folder, seed)
    elif spec.template == "text":
        make_essays(spec, folder, seed)
    elif spec.slug == "ventilator-pressure-prediction":
        make_ventilator(spec, folder, seed)
    else:
        make_sequences(spec, folder, seed)


def make_text_model(spec: Spec, data_dir: Path, input_root: Path, name: str, seed: int = 0) -> Path:
    """A tiny encoder and tokenizer over the smoke texts, where Kaggle mounts an attached model:
    <input>/models/<owner>/<name>/transformers/default/1/ (model_path names it by `name`)."""
    train = pd.read_csv(data_dir / spec.train)
    texts = [t for c in spec.text_columns for t in train[c].astype(str)]
    return build_tiny_encoder(texts, input_root / "models" / "kit" / name / "transformers" / "default" / "1", seed,
                              max_positions=512)


def breath(rng: np.random.Generator, R: int, C: int, steps: int = 80) -> dict[str, np.ndarray]:
    """One breath of a pressure-controlled ventilator on a single-compartment lung.

    Inspiration (u_out = 0, about the first second): the inspiratory valve opens u_in percent; the flow
    Q = q * u_in (L/s) fills the lung, and the airway pressure is PEEP + R * Q + V / C (R in cmH2O/L/s,
    C in mL/cmH2O, V the inhaled volume in L). Expiration (u_out = 1): the expiratory valve opens, the lung
    empties through it with time constant R * C, and the pressure falls back to PEEP."""
    dt = 0.0331 + rng.normal(0, 0.0005, steps).clip(-0.001, 0.001)
    t = np.concatenate([[0.0], np.cumsum(dt[:-1])])
    t_insp = rng.uniform(0.8, 1.2)
    u_out = (t >= t_insp).astype(np.int64)
    peak, rise, decay = rng.uniform(10, 60), rng.uniform(0.05, 0.2), rng.uniform(0.4, 2.0)
    u_in = peak * (1 - np.exp(-t / rise)) * np.exp(-t / decay) + rng.normal(0, 0.5, steps)
    u_in = np.where(u_out == 1, rng.uniform(0, 5) * np.exp(-(t - t_insp) / 0.3), u_in).clip(0, 100)
    peep, q, compliance = rng.uniform(4.5, 6.5), 0.012, C / 1000.0
    volume, pressure = 0.0, np.zeros(steps)
    for i in range(steps):
        if u_out[i] == 0:
            flow = q * u_in[i]
            volume += flow * dt[i]
            pressure[i] = peep + R * flow + volume / compliance
        else:
            volume *= np.exp(-dt[i] / (R * compliance + 0.05))
            pressure[i] = peep + volume / compliance * 0.6
    return {"time_step": t, "u_in": u_in, "u_out": u_out, "pressure": pressure + rng.normal(0, 0.1, steps)}


def make_ventilator(spec: Spec, folder: Path, seed: int = 0, train: int = 240, test: int = 40) -> pd.DataFrame:
    """ventilator-pressure-prediction's layout: train.csv id,breath_id,R,C,time_step,u_in,u_out,pressure;
    test.csv without pressure; sample_submission.csv id,pressure; 80 rows per breath. Returns the test rows
    with their pressure (what `make quality` scores against)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    rows, row_id = {"train": [], "test": []}, 1
    for split, count in (("train", train), ("test", test)):
        for b in range(count):
            R, C = int(rng.choice([5, 20, 50])), int(rng.choice([10, 20, 50]))
            sim = breath(rng, R, C)
            n = len(sim["u_in"])
            frame = pd.DataFrame({"id": np.arange(row_id, row_id + n), "breath_id": b * 3 + 1 + (split == "test"),
                                  "R": R, "C": C, "time_step": sim["time_step"], "u_in": sim["u_in"],
                                  "u_out": sim["u_out"], "pressure": sim["pressure"]})
            rows[split].append(frame)
            row_id += n
    train_df = pd.concat(rows["train"], ignore_index=True)
    answers = pd.concat(rows["test"], ignore_index=True)
    test_df = answers.drop(columns="pressure")
    train_df.to_csv(folder / spec.train, index=False)
    test_df.to_csv(folder / spec.test, index=False)
    pd.DataFrame({spec.id_column: test_df["id"], spec.target_column: 0.0}).to_csv(folder / spec.sample_submission, index=False)
    return answers


def make_sequences(spec: Spec, folder: Path, seed: int = 0, train: int = 160, test: int = 40) -> None:
    """Any other sequence layout the config describes: variable-length sequences whose features are noisy
    waves; per sequence, the class (or value) sets the wave's frequency; per step, the target follows the
    running sum of the first feature."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    regression = spec.metric in ("mae", "rmse")
    classes = ["walk", "run", "sit"] if spec.metric in ("accuracy", "log_loss") else ["0", "1"]
    per_step = spec.task == "per_step"
    frames = {"train": [], "test": []}
    row_id = 0
    for split, count in (("train", train), ("test", test)):
        for s in range(count):
            n = int(rng.integers(20, 60))
            k = int(rng.integers(len(classes)))
            t = np.arange(n)
            frame = {spec.sequence_column: f"{split[:2]}{s:04d}", spec.order_column: t}
            for j, name in enumerate(spec.features):
                frame[name] = np.sin(2 * np.pi * (k + 1) * t / 20 + rng.uniform(0, 6) + j) + rng.normal(0, 0.3, n)
            for name in spec.categorical:
                frame[name] = int(rng.integers(3))
            if per_step:
                frame[spec.id_column] = np.arange(row_id, row_id + n)
                row_id += n
                first = frame[spec.features[0]]
                if regression:
                    frame[spec.target_column] = np.cumsum(first) / 5
                else:
                    frame[spec.target_column] = np.where(np.cumsum(first) > 0, classes[1], classes[0])
            else:
                frame[spec.target_column] = (k * 1.5 + rng.normal(0, 0.1)) if regression else classes[k]
            frames[split].append(pd.DataFrame(frame))
    train_df = pd.concat(frames["train"], ignore_index=True)
    test_df = pd.concat(frames["test"], ignore_index=True).drop(columns=spec.target_column)
    train_df.to_csv(folder / spec.train, index=False)
    test_df.to_csv(folder / spec.test, index=False)
    ids = test_df[spec.id_column] if per_step else pd.unique(test_df[spec.sequence_column])
    sample = pd.DataFrame({spec.id_column: ids})
    if spec.metric == "log_loss" and not per_step:
        for c in classes:
            sample[c] = 1 / len(classes)
    else:
        sample[spec.target_column] = 0.0 if regression or spec.metric == "auc" else classes[0]
    sample.to_csv(folder / spec.sample_submission, index=False)
