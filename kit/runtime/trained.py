"""A training run's output, found and read back for predict mode (the inference kernel of a code competition).

A training kernel leaves <output_dir>/checkpoints/<run>/: run.json (what made the run) and a fold<k>.pt per
fold. Each fold checkpoint carries its stamp (kit.run.folds.stamp): the kit version and checkpoint format,
the template, the parameters that decide the model, and the pipeline's recipe (target encoding and class
order, the training prior, feature codes and standardisation, image size and flips), so prediction needs the
test files and the sample submission only. Kaggle mounts the training kernel's output under /kaggle/input in
several layouts (<slug>/, notebooks/<user>/<slug>/, datasets/<owner>/<slug>/,
models/<owner>/<model>/<framework>/<variation>/<version>/, nested or not); `find` searches them all.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit import fields
from kit.errors import KitError
from kit.runtime import checkpoint, paths, runs
from kit.runtime.run_folder import RunFolder, is_run, latest_of

MAX_DEPTH = 12  # folders below the search root: the deepest layout (models/...) with a nested output in it
# what a person may choose at prediction: everything else that made the model comes from its checkpoints
PREDICT_TIME = ("mode", "model_dir", "tta", "batch_size", "precision", "seed", *runs.WHERE_AND_HOW_FAST)
# where an attached model folder is mounted, which an inference kernel may differ in; not what the model is (the
# tokenizer's key in the recipe guards that): the cell's value, the training run's where the cell leaves it empty
LOCATIONS = ("model_path",)


@dataclass
class Trained:
    folder: Path  # the run's folder: run.json, fold<k>.pt, fold<k>.json
    template: str
    params: dict[str, Any]  # the training run's parameters
    recipe: dict[str, Any]  # the pipeline's: what its data looked like (kit.pipelines.*.recipe)
    version: str  # the kit that wrote the checkpoints
    folds: list[int] = field(default_factory=list)


def run_folders(root: Path, skip: tuple[Path, ...] = ()) -> list[Path]:
    """Folders under `root` holding run.json and at least one fold<k>.pt; where a checkpoints/ folder names
    its latest run (latest.json), only that one. `skip`: folders not worth walking (the competition data)."""
    found: list[Path] = []
    skipped = {s.resolve() for s in skip}
    for here, dirs, names in os.walk(root):
        folder = Path(here)
        depth = len(folder.relative_to(root).parts)
        if is_run(names):
            found.append(folder)
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if depth < MAX_DEPTH and (folder / d).resolve() not in skipped)
    found_names = {(f.parent, f.name) for f in found}
    latest = {}  # checkpoints/ folder -> its latest run, where that run is among those found
    for parent in {f.parent for f in found}:
        name = latest_of(parent)
        if name and (parent, name) in found_names:
            latest[parent] = name
    return [f for f in found if latest.get(f.parent, f.name) == f.name]


def find(given: str, template: str, skip: tuple[Path, ...] = ()) -> Trained:
    """The one trained run for a `template` notebook: under `given` (a folder, absolute or relative to
    /kaggle/input), or anywhere under /kaggle/input when it is empty. None, several, or one of another
    template or checkpoint format is one line that says what was seen."""
    root = paths.input_root()
    where = Path(given).expanduser() if given else root
    if given and not where.is_absolute() and (root / given).is_dir():  # relative: to /kaggle/input first
        where = root / given
    if not where.is_dir():
        raise KitError(f"model_dir '{given}' is not a folder; point it at the training kernel's output, or leave it "
                       f"empty to search {root}")
    folders = run_folders(where, skip)
    if not folders:
        seen = ", ".join(attached(where)[:8])
        raise KitError(f"no trained kit model under {where} (looked for checkpoints/<run>/run.json with fold<k>.pt"
                       f"{'; it holds: ' + seen if seen else ', and it is empty'}); attach the training kernel's output "
                       "([inference] in the config adds it as kernel_sources) once its run is complete, or set model_dir")
    runs_found = [read(f) for f in folders]
    mine = [t for t in runs_found if t.template == template]
    if not mine:
        other = runs_found[0]
        raise KitError(f"{other.folder} holds a {other.template} model and this is a {template} notebook; attach the "
                       f"output of the {template} training kernel, or set model_dir")
    if len(mine) > 1:
        listed = "; ".join(f"{t.folder} ({len(t.folds)} folds)" for t in mine)
        raise KitError(f"{len(mine)} trained kit models under {where}: {listed}; set model_dir to the one to predict with")
    return mine[0]


def locate(source: str, root: Path) -> Path | None:
    """Where a blend's run is mounted: a folder (absolute, or relative to /kaggle/input), a kernel's output or a
    dataset (owner/slug), or a model version (owner/model/framework/variation/version), in any of Kaggle's
    layouts; None where it is not attached."""
    given = Path(source).expanduser()
    if given.is_absolute():
        return given if given.is_dir() else None
    parts = source.strip("/").split("/")
    candidates = [root / source]
    if len(parts) == 2:
        candidates += [root / "notebooks" / parts[0] / parts[1], root / "datasets" / parts[0] / parts[1], root / parts[1]]
    elif len(parts) == 5:
        candidates += [root / "models" / source, root.joinpath(*parts[1:])]
    return next((c for c in candidates if c.is_dir()), None)


def find_blend(sources: tuple[str, ...], skip: tuple[Path, ...] = ()) -> tuple[list[tuple[str, Trained]], list[str]]:
    """The runs a blend names (`sources`), each the one trained run where it is mounted, and a line for each that
    is not attached or holds none (the blend goes on with the others); none at all is one line."""
    root = paths.input_root()
    found, missing = [], []
    for source in sources:
        where = locate(source, root)
        folders = run_folders(where, skip) if where is not None else []
        if not folders:
            state = "not attached" if where is None else f"attached at {where} but holds no trained kit model"
            missing.append(f"blend: {source} is {state}; blending the other runs")
            continue
        if len(folders) > 1:
            raise KitError(f"blend: {len(folders)} trained kit models under {where} ({source}): "
                           f"{', '.join(str(f) for f in folders)}; name each run's folder in blend")
        found.append((source, read(folders[0])))
    if not found:
        seen = ", ".join(attached(root)[:8]) if root.is_dir() else "nothing"
        raise KitError(f"blend: none of its {len(sources)} runs is attached ({', '.join(sources)}; {root} holds {seen}); "
                       "attach the training kernels' outputs or the published model versions ([blend] runs in the config)")
    return found, missing


def attached(root: Path) -> list[str]:
    """What is mounted under `root`, named as far down as Kaggle's layouts name it (notebooks/<user>/<slug>)."""
    out = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and entry.name in ("notebooks", "datasets", "models", "competitions"):
            out += [p.relative_to(root).as_posix() for p in sorted(entry.glob("*/*" if entry.name != "competitions" else "*"))]
        else:
            out.append(entry.name)
    return out


def read(folder: Path) -> Trained:
    """A run folder's stamp, from run.json and its first fold checkpoint; another format is one line."""
    run = RunFolder(folder)
    record = checkpoint.load_json(run.record)
    folds = run.folds()
    if record.get("format") != runs.FORMAT:
        raise KitError(f"{folder} was written in kit's checkpoint format {record.get('format')}, and this kit reads "
                       f"format {runs.FORMAT}; run the training kernel again with this kit")
    first = run.fold(folds[0])
    stamp = checkpoint.load(first.meta).get("kit") or {}  # the stamp, without the weights
    compatible(stamp, first.best, record["template"])
    return Trained(folder, record["template"], stamp["params"], stamp["recipe"], stamp["version"], folds)


def compatible(stamp: dict[str, Any], path: Path, template: str) -> None:
    """One line unless the checkpoint at `path` was written in this kit's format, by a `template` run."""
    if stamp.get("format") != runs.FORMAT or "recipe" not in stamp:
        raise KitError(f"{path} has no kit stamp of format {runs.FORMAT} (written by another kit, or by hand); "
                       "run the training kernel again with this kit")
    if stamp.get("template") != template:
        raise KitError(f"{path} holds a {stamp.get('template')} model; this is a {template} notebook")


def apply(trained: Trained, p: Any, log) -> Any:
    """`p` with the training run's values for everything but what a person chooses at prediction; the values
    of this notebook's cell that the checkpoints override are logged."""
    names = set(fields.names(type(p))) - set(PREDICT_TIME)
    names -= {k for k in LOCATIONS if getattr(p, k, "")}
    taken = {k: v for k, v in trained.params.items() if k in names}
    taken = {k: tuple(v) if isinstance(v, list) else v for k, v in taken.items()}
    differ = [f"{k} {getattr(p, k)!r} -> {v!r}" for k, v in taken.items() if getattr(p, k) != v]
    if differ:
        log(f"from the checkpoints: {', '.join(differ)} (the model's settings are the training run's)")
    return fields.build(type(p), {**{k: getattr(p, k) for k in fields.names(type(p))}, **taken}, "checkpoint")
