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
from kit import files, params, templates
from kit.build import bundle, execute, metadata, notebook, packages
from kit.build.bundle import ROOT
from kit.data import archives
from kit.errors import KitError
from kit.smoke import gallery
from kit.spec import Spec

SMOKE = ROOT / ".smoke"


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
    folds: int = 0  # the folds that trained (0: the submission is the training labels' fallback)


def run(comp: str, root: Path | None = None, seed: int = 0, overrides: dict | None = None,
        python: str | None = None) -> SmokeResult:
    """Generate the data under <root>/kaggle/input/<slug>, build the notebook with [smoke] overrides (and
    `overrides`), run it with outputs to <root>/kaggle/working on a kernel of `python` (default: this
    environment, without kit), and check the submission against the sample submission."""
    config = kit_config.load(comp)
    parameters = {**config.parameters(smoke=True), **(overrides or {})}
    params.check(templates.get(config.spec.template).params, {k: v for k, v in parameters.items() if k != "competition"}, "-p")
    root = root or SMOKE / config.name
    input_root = root / "kaggle" / "input"
    working = root / "kaggle" / "working"
    for stale in ("kaggle", "cache"):
        shutil.rmtree(root / stale, ignore_errors=True)
    data_dir = input_root / config.spec.slug
    make_dataset(config.spec, data_dir, seed)
    make_inputs(config.spec, data_dir, input_root, parameters, seed)
    wheels = mount_packages(config, input_root)
    built = root / "kernel.ipynb"
    files.write_text(built, notebook.dumps(notebook.build(config.spec.template, parameters, config.kernel.internet, wheels)))
    working.mkdir(parents=True)
    executed = root / "executed.ipynb"
    env = {"KIT_KAGGLE_INPUT": str(input_root), "KIT_CACHE_DIR": str(root / "cache")}
    execute.run(built, executed, {"output_dir": str(working)}, cwd=working, env=env, python=python)
    submission = working / "submission.csv"
    sample = sample_path(config.spec, data_dir, root / "cache")
    rows = check_submission(submission, sample, config.spec)
    if gallery.has(config.spec.slug):  # what the competition's grader checks beside the sample's shape
        gallery.check(config.spec.slug, submission, sample)
    cv = json.loads((working / "cv.json").read_text())
    planned = working / "resources.json"  # every run that trains prints its resource plan and what it took
    if cv["folds"] and "measured" not in (json.loads(planned.read_text()) if planned.is_file() else {}):
        raise KitError(f"{working}: no resource plan and measurement (resources.json) though folds trained; see kit.log")
    inferred = None
    if config.inference is not None:  # the pair: the inference kernel must submit what the training kernel did
        inferred = run_inference(config, root, working, data_dir, overrides, python=python)
        same_predictions(inferred, submission, config.spec)
    return SmokeResult(data_dir, executed, submission, rows, cv["metric"], cv["score"], cv["baseline"], cv["baseline_name"],
                       inferred, len(cv["folds"]))


def test_files(spec: Spec, data_dir: Path) -> list[str]:
    """What a code competition's inference kernel sees of the competition in `data_dir`: the sample
    submission, the test table and the test images (or the archives that hold them), and the table the test rows join
    (champs' structures.csv), where it has them."""
    found = [archives.locate(data_dir, name) for name in (spec.test, spec.sample_submission, spec.test_images,
                                                          spec.join_table) if name]
    return [path.relative_to(data_dir).as_posix() for path in found if path is not None]


def sample_path(spec: Spec, data_dir: Path, scratch: Path) -> Path:
    """The sample submission, unpacked from its archive where it comes archived (statoil's .csv.7z)."""
    return archives.find_file(data_dir, spec.sample_submission, "sample submission", scratch / "unpacked", lambda line: None)


def run_inference(config, root: Path, working: Path, data_dir: Path, overrides: dict | None = None,
                  env: dict | None = None, python: str | None = None, mount: str = "") -> Path:
    """The inference notebook run as Kaggle runs it: the training kernel's output mounted where Kaggle mounts
    an attached kernel's (<input>/notebooks/<user>/<slug>/; `mount`: elsewhere under <input>, such as a
    published model version's models/<owner>/<model>/<framework>/<variation>/<version>/), the competition's
    folder holding only the test files and the sample submission (from `data_dir`), and model_dir left empty.
    Returns its submission."""

    infer = root / "inference"
    shutil.rmtree(infer, ignore_errors=True)
    input_root = infer / "kaggle" / "input"
    competition = input_root / "competitions" / config.spec.slug
    competition.mkdir(parents=True)
    for name in test_files(config.spec, data_dir):
        source = data_dir / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, competition / name)
    shutil.copytree(working, input_root / (mount or f"notebooks/{owner()}/{metadata.kernel_slug(config)}"))
    models = root / "kaggle" / "input" / "models"
    if models.is_dir():  # an attached model (the text template's folder) is attached to both kernels
        shutil.copytree(models, input_root / "models")
    wheels = mount_packages(config, input_root)
    out = infer / "kaggle" / "working"
    out.mkdir(parents=True)
    built = infer / "inference.ipynb"
    values = {**config.inference_parameters(smoke=True), **(overrides or {})}
    files.write_text(built, notebook.dumps(notebook.build(config.spec.template, values, internet=False, packages=wheels)))
    execute.run(built, infer / "executed.ipynb", {"output_dir": str(out)}, cwd=out, python=python,
                env={"KIT_KAGGLE_INPUT": str(input_root), "KIT_CACHE_DIR": str(infer / "cache"), **(env or {})})
    check_submission(out / "submission.csv", sample_path(config.spec, competition, infer / "cache"), config.spec)
    return out / "submission.csv"


def mount_packages(config, input_root: Path) -> packages.Packages | None:
    """[kernel] packages: their wheels folder (kernels/<name>-packages/, built as make kernel builds it) mounted
    where Kaggle mounts the dataset, <input>/datasets/<owner>/<slug>/."""
    wheels = packages.build(config, owner(), bundle.packages_folder(config))
    if wheels is not None:
        shutil.copytree(wheels.folder, input_root / "datasets" / wheels.dataset, dirs_exist_ok=True)
    return wheels


def owner() -> str:
    """The training kernel's owner in the mounted layout: the Kaggle user, where one is set (the smoke needs none)."""
    return os.environ.get("KAGGLE_USERNAME") or "you"


def same_predictions(a: Path, b: Path, spec: Spec, tolerance: float = 1e-4) -> None:
    """A KitError unless two submissions hold the same labels and values within `tolerance`."""
    x, y = (pd.read_csv(p, dtype={spec.id_column: str} if spec.id_column else None) for p in (a, b))
    if list(x.columns) != list(y.columns) or not same_rows(x, y, spec):
        raise KitError(f"{a} and {b} differ in their columns or ids")
    for column in x.columns:
        if pd.api.types.is_numeric_dtype(x[column]) and pd.api.types.is_numeric_dtype(y[column]):
            gap = float(np.abs(x[column].to_numpy(float) - y[column].to_numpy(float)).max(initial=0.0))
            if gap > tolerance:
                raise KitError(f"{a} differs from {b} in column '{column}' by up to {gap:.2g} (more than {tolerance:g})")
        elif not x[column].astype(str).equals(y[column].astype(str)):
            raise KitError(f"{a} differs from {b} in column '{column}'")


POINTS = r"[^\d\s-]\S* -?[\d.]+ -?[\d.]+( [^\d\s-]\S* -?[\d.]+ -?[\d.]+)*"  # "U+003F 1 1 U+FF2F 2 2", not "14 1 0 0 1 1"


def check_submission(path: Path, sample_path: Path, spec: Spec) -> int:
    """Rows in the submission, after checking ids, order and columns against the sample submission."""
    if not path.is_file():
        raise KitError(f"the notebook finished without writing {path}")
    sub, sample = (pd.read_csv(p, dtype={spec.id_column: str} if spec.id_column else None) for p in (path, sample_path))
    if list(sub.columns) != list(sample.columns):
        raise KitError(f"{path}: columns differ from {sample_path.name}'s")
    if not same_rows(sub, sample, spec):
        raise KitError(f"{path}: ids differ from {sample_path.name}'s, or are in another order")
    # a column copied through may be empty where the sample's is, a run-length code is empty for no mask, and
    # points (`name x y ...`, kuzushiji's) for a page without them
    codes = [c for c in sample.columns if sample[c].astype(str).str.fullmatch(r"\d+ \d+( \d+ \d+)*").all()
             or sample[c].astype(str).str.fullmatch(POINTS).all()]
    if (sub.drop(columns=codes).isna() & sample.drop(columns=codes).notna()).any().any():
        raise KitError(f"{path}: empty values")
    return len(sub)


def same_rows(a: pd.DataFrame, b: pd.DataFrame, spec: Spec) -> bool:
    """The same ids in the same order; with no id column, as many rows."""
    return a[spec.id_column].equals(b[spec.id_column]) if spec.id_column else len(a) == len(b)


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    """The competition's files in its public layout: a gallery competition's as MLE-bench writes them
    (kit.smoke.gallery), whatever the config says; any other by the template's smoke maker (kit.templates),
    from the config's names."""
    if gallery.has(spec.slug):
        gallery.write(spec.slug, folder, seed)
    else:
        templates.load(templates.get(spec.template).smoke)(spec, folder, seed)


def make_inputs(spec: Spec, data_dir: Path, input_root: Path, parameters: dict, seed: int = 0) -> None:
    """What else the template's kernel mounts beside the competition's data (the text template's model folder)."""
    maker = templates.get(spec.template).smoke_inputs
    if maker:
        templates.load(maker)(spec, data_dir, input_root, parameters, seed)
