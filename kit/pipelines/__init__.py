"""One pipeline per template: how its data is read, split, batched, modelled and turned into a submission."""
from __future__ import annotations

import importlib

from kit.errors import KitError

_PIPELINES = {"cnn": "kit.pipelines.cnn", "lstm": "kit.pipelines.sequence", "transformer": "kit.pipelines.sequence",
              "text": "kit.pipelines.text"}


def list_pipelines() -> list[str]:
    return sorted(_PIPELINES)


def create_pipeline(session):
    if session.template not in _PIPELINES:
        raise KitError(f"no pipeline for template '{session.template}' (known: {', '.join(list_pipelines())})")
    return importlib.import_module(_PIPELINES[session.template]).Pipeline(session)
