"""`make publish`: a finished training run's fold checkpoints as a version of a Kaggle Model, which the config's
[inference] trained_model attaches in place of the training kernel's output. An inference kernel reads one
training kernel's latest output, which every new run of that kernel replaces; a model version stays.

The run comes from the training kernel's downloaded output (`make output ALL=1`, kernels/<name>/output/) or a
local run's output folder. The version holds the run's folder flat (run.json, fold<k>.pt, .meta.pt and .json: not
the resume state), which kit.runtime.trained finds under the models mount like any run."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from kit import config as kit_config
from kit import files
from kit.build import bundle, metadata, models
from kit.build.client import Client
from kit.errors import KitError
from kit.runtime import trained
from kit.runtime.run_folder import RunFolder

FRAMEWORK = "pytorch"
LICENSE = "Apache 2.0"


@dataclass(frozen=True)
class Published:
    version: str  # owner/model/framework/variation/version: [inference] trained_model
    run: Path
    folds: list[int]
    size: int  # bytes


def run_files(folder: Path) -> list[Path]:
    """What a run's version holds: run.json, and each fold's best weights (fold<k>.pt), what prediction reads
    beside them (fold<k>.meta.pt: epoch, score, stamp) and its summary (fold<k>.json), and the predictions a
    blend weighs it by (oof.csv, test_pred.npy and the rest: kit.run.predictions) where the run kept them."""
    return RunFolder(folder).published()


def find_run(source: Path, template: str, hint: str) -> trained.Trained:
    """The one trained run of `template` under `source` (the latest, where a checkpoints/ folder names it)."""
    if not source.is_dir():
        raise KitError(f"{source} is not a folder; download the training kernel's output first ({hint}), or pass a "
                       "local run's output folder")
    found = trained.run_folders(source)
    if not found:
        raise KitError(f"no fold checkpoints under {source} (checkpoints/<run>/run.json with fold<k>.pt); {hint}")
    if len(found) > 1:
        raise KitError(f"{len(found)} runs under {source}: {', '.join(str(f) for f in found)}; pass the one to publish")
    run = trained.read(found[0])
    if run.template != template:
        raise KitError(f"{run.folder} holds a {run.template} run and the config's template is {template}")
    return run


def publish(comp: str, source: str = "", model: str = "", license_name: str = LICENSE) -> Published:
    """Publish the run in `source` (default: the training kernel's downloaded output) as the next version of
    the model `model` (owner/slug; default: yours, named as the training kernel)."""
    cfg = kit_config.load(comp)
    folder = Path(source) if source else bundle.kernels_dir() / cfg.name / "output"
    run = find_run(folder, cfg.spec.template, f"make output COMP={comp} ALL=1")
    client = Client()
    owner, _, slug = (model or f"{client.creds.username}/{metadata.kernel_slug(cfg)}").rpartition("/")
    handle = models.Handle(owner or client.creds.username, models.model_slug(slug), FRAMEWORK)
    stage = bundle.kernels_dir() / f"{cfg.name}-model"
    with files.atomic_dir(stage) as tmp:
        for path in run_files(run.folder):
            _link(path, tmp / path.name)
    size = sum(p.stat().st_size for p in stage.iterdir())
    description = (f"Fold checkpoints of kit run {run.folder.name}: a {run.template} model for the "
                   f"{cfg.spec.slug} competition ({len(run.folds)} folds), trained by {metadata.kernel_slug(cfg)}.")
    number = models.publish(client, stage, handle, cfg.kernel.title, description, license_name,
                            notes=f"kit run {run.folder.name} ({len(run.folds)} folds)", private=cfg.kernel.private)
    return Published(handle.version(number), run.folder, run.folds, size)


def _link(source: Path, target: Path) -> None:
    """A hard link where the file system allows one (checkpoints are large), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
