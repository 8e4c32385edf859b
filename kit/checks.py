"""Checks that run before any data is touched: a typo in a config costs seconds, not a decode of every image.

The build runs `config_params` when it reads a config; the kernel runs `setup` when it starts, so a notebook
edited on Kaggle is checked too.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kit import fields, params
from kit.errors import KitError
from kit.runtime import paths


def close_models(name: str, limit: int = 6) -> list[str]:
    """timm model names near `name`: same letters and digits first (resnet-18 -> resnet18), then difflib's."""
    import timm

    models = timm.list_models()
    arch = name.split(".")[0]  # a pretrained tag (resnet18.a1_in1k) is not part of the registered name
    same = [m for m in models if _letters(m) == _letters(arch)]
    near = difflib.get_close_matches(arch.lower(), models, n=limit, cutoff=0.6)
    return list(dict.fromkeys(same + near))[:limit]


def _letters(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def model_name(name: str, where: str) -> None:
    """A KitError unless timm knows `name` (with or without a pretrained tag)."""
    import timm

    if timm.is_model(name):
        return
    close = close_models(name)
    hint = f"did you mean {', '.join(close)}?" if close else "no timm model has a similar name"
    raise KitError(f"{where}: model_name = {name!r} is not a timm model ({hint}); set it to a name in timm.list_models()")


def config_params(template: str, given: Mapping[str, Any], smoke: Mapping[str, Any], path: Path) -> None:
    """At build: the model names a config's [params] and [smoke] set (the template default is a timm model)."""
    if "model_name" not in fields.names(params.params_class(template)):
        return
    for table, values in (("params", given), ("smoke", smoke)):
        if "model_name" in values:
            model_name(values["model_name"], f"{path}: [{table}]")


def setup(p: params.TrainParams) -> None:
    """At set-up, before the data is read: the model name, and the weights file where one is named."""
    if hasattr(p, "model_name"):
        model_name(p.model_name, "parameters cell")
    if getattr(p, "weights_path", ""):
        paths.find_weights(p.weights_path)

