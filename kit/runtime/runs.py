"""Runs keyed by what made them, so that a run into the same output_dir reuses only what its own settings made.

Everything later runs reuse (fold checkpoints and summaries, an unfinished fold's resume state, the automatic
batch size) lives in the run's folder, <output_dir>/checkpoints/<run>/ (kit.runtime.run_folder names its files),
where <run> is a fingerprint of everything that decides it: the training parameters, the template and the
competition's files and columns, the data's identity (ids, labels, files), the fold split and the checkpoint format.
The same settings find their folder again and reuse or resume it; changed ones train afresh in a new folder, and the
earlier run's files stay where they were.
Parameters that decide only where or how fast a run goes (folders, device, loader processes, the time
budget, compile, parallel workers), or which runs predict (mode, model_dir, blend), are left out: changing them keeps
the finished folds.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kit import fields
from kit.params import TrainParams
from kit.runtime import checkpoint
from kit.runtime.run_folder import RunFolder
from kit.spec import Spec

# what fold files hold; bump when a checkpoint written before could not be read the same way (5: validation rows kept
# as their likeliest classes, in float16 or as bytes)
FORMAT = 5
# (3: stamped; 4: the weights apart from the epoch, rows and stamp, and the resume state in the scratch folder)
WHERE_AND_HOW_FAST = ("data_dir", "output_dir", "device", "num_workers", "time_budget_s", "compile", "parallel",
                      "world_size", "mode", "model_dir", "blend", "fallback")


def record(template: str, spec: Spec, params: TrainParams, identity: str,
           split: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """What decides a run's artefacts, as plain JSON values."""
    return {"format": FORMAT, "template": template, "competition": spec.to_dict(), "params": deciding(params),
            "data": identity, "split": digest(*(v for _, v in split))}


def deciding(params: TrainParams) -> dict[str, Any]:
    """The parameters that decide a run's artefacts: all but where and how fast it goes."""
    return {k: getattr(params, k) for k in fields.names(type(params)) if k not in WHERE_AND_HOW_FAST}


def key(rec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(rec, sort_keys=True, default=str).encode()).hexdigest()[:10]


def digest(*arrays) -> str:
    """A short hash of arrays' values, shapes and types (the data's identity is made of these)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        if a.dtype.kind in "OUS":  # strings: their text, whatever numpy's storage
            a = np.array("\x1f".join(map(str, a.ravel())).encode())
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def folder(output_dir: Path, rec: dict[str, Any]) -> Path:
    """Where the run `rec` describes keeps its files (its folds, resume states aside), created or not."""
    return RunFolder.of(output_dir, key(rec)).path


def open_run(output_dir: Path, rec: dict[str, Any], log: Callable[[str], None]) -> Path:
    """The folder of the run `rec` (`record`) describes, under `output_dir`, created where new; `log` says in one
    line whether it is new (and what changed since the latest run) or an earlier one."""
    run = RunFolder.of(output_dir, key(rec))
    latest = RunFolder.latest(output_dir)
    if run.record.exists():
        how = "the latest run" if latest == run.name else "an earlier run's settings"
        log(f"run {run.name}: {how}, in {run.path}: its finished folds are reused and an unfinished one resumed")
    else:
        before = RunFolder.of(output_dir, latest).record if latest else None
        changed = changes(checkpoint.load_json(before), rec) if before and before.exists() else ""
        since = f"; since run {latest}: {changed} (its files stay in {before.parent})" if changed else ""
        log(f"run {run.name}: new, in {run.path}{since}")
        run.path.mkdir(parents=True, exist_ok=True)
        checkpoint.save_json(rec, run.record)
    checkpoint.save_json({"run": run.name}, run.latest_file)
    return run.path


def changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two run records, in one line: `folds 2 -> 3, image_size 64 -> 96`."""
    out = [f"{k} {old['params'].get(k)!r} -> {v!r}" for k, v in new["params"].items() if old["params"].get(k) != v]
    out += [f"competition {k} {old['competition'].get(k)!r} -> {v!r}" for k, v in new["competition"].items()
            if old["competition"].get(k) != v]
    for part, what in (("template", "the template"), ("data", "the data"), ("format", "kit's checkpoint format")):
        if old.get(part) != new.get(part):
            out.append(f"{what} changed")
    if not out and old.get("split") != new.get("split"):
        out.append("the fold split changed")
    return ", ".join(out)
