"""This session's training run: what decides it (kit.runtime.runs) and so its folder, whichever cells ran before."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.pipelines.base import Pipeline
from kit.runtime import runs
from kit.runtime.session import Session


def run_record(session: Session, pipe: Pipeline, data: Any, splits: list | None = None) -> dict[str, Any]:
    """What decides this session's training run (kit.runtime.runs): its key names the run's folder."""
    splits = pipe.split(data) if splits is None else splits
    return runs.record(session.template, session.spec, session.params, pipe.identity(data), splits)


def run_folder(session: Session, pipe: Pipeline, data: Any) -> Path:
    """The folder of this session's run, whatever cells ran before: the one its settings and data make (a
    training cell interrupted before it returned still left its folds there), or predict mode's training run."""
    if session.trained is not None:
        return session.trained.folder
    return runs.folder(session.output_dir, run_record(session, pipe, data))
