"""Checks that run before any data is touched: a typo in a config costs seconds, not a decode of every image.

The build runs `config_params` when it reads a config; the kernel runs `setup` when it starts and
`image_files` before it decodes, so a notebook edited on Kaggle is checked too.
"""
from __future__ import annotations

import difflib
import itertools
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kit import fields, params
from kit.errors import KitError
from kit.runtime import paths

SAMPLE_IDS = 20  # ids looked up in an image folder before decoding; all missing means a wrong name, not bad files


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


def image_files(folder: Path, name: str, ids: Sequence[str], ext: str, table: str, key: str) -> None:
    """A KitError when none of the first ids has its image `<folder>/<id><ext>`: then the extension, the
    folder or the id column is wrong, which says more than every image failing to decode. `name` is the
    folder as [data] spells it, `table` the file the ids come from, `key` the [data] key naming the folder."""
    sample = list(ids[:SAMPLE_IDS])
    missing = [i for i in sample if not (folder / f"{i}{ext}").is_file()]
    if not sample or len(missing) < len(sample):
        return
    head = f"no {name}/<id>{ext} for {len(missing)} of the first {len(sample)} ids in {table}"
    if ext and any((folder / i).is_file() for i in sample):
        raise KitError(f'{head}; the ids already end in their extension: set image_ext = "" in [data]')
    with os.scandir(folder) as it:  # a few thousand entries say which extensions the folder holds
        entries = [(e.name, e.is_dir()) for e in itertools.islice(it, 2000)]
    files = sorted(n for n, is_dir in entries if not is_dir)
    suffixes = [s for s, _ in Counter(os.path.splitext(n)[1] for n in files).most_common(3)]
    for suffix in suffixes:
        if suffix != ext and any((folder / f"{i}{suffix}").is_file() for i in sample):
            raise KitError(f'{head}; the folder holds {suffix} files: set image_ext = "{suffix}" in [data]')
    if not files:
        folders = sorted(n for n, is_dir in entries if is_dir)
        held = f"only folders (such as {folders[0]})" if folders else "nothing"
        raise KitError(f"{head}; the folder holds {held}: check {key} in [data]")
    kinds = " and ".join(s or "extensionless" for s in suffixes)
    raise KitError(f"{head}; the folder holds {kinds} files such as {files[0]}: check id_column, {key} and image_ext in [data]")
