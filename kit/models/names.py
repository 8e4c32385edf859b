"""timm model names: a name that timm does not know is one line with the names near it, at build and at set-up,
before any image is decoded."""
from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Callable, Iterable

from kit import files
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


def listed(package: str, what: str, produce: Callable[[], Iterable[str]]) -> list[str]:
    """The names `produce()` lists from `package` (importing it), kept in the scratch folder per package version, so
    that a process that only reads a config (kit push, status, submit; make kernel) reads them there instead of
    importing timm or smp and torch for them (~4 s, ~9 s with smp)."""
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        version = ""
    cached = paths.scratch_dir() / f"{package}-{version}-{what}.txt"
    if version and cached.is_file():
        return cached.read_text().split()
    names = list(produce())
    if version:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            files.write_text(cached, "\n".join(names) + "\n")
        except OSError:
            pass  # a read-only scratch folder: the package is asked each time
    return names


def _timm_models() -> list[str]:
    import timm

    return timm.list_models()


def known(name: str) -> bool:
    """timm.is_model(name): its architecture (the name less a pretrained tag) is one timm registers (listed)."""
    return name.split(".", 1)[0] in set(listed("timm", "models", _timm_models))


def check_model_name(name: str, where: str) -> None:
    """A KitError unless timm knows `name` (with or without a pretrained tag)."""
    if known(name):
        return
    close = close_models(name)
    hint = f"did you mean {', '.join(close)}?" if close else "no timm model has a similar name"
    raise KitError(f"{where}: model_name = {name!r} is not a timm model ({hint}); set it to a name in timm.list_models()")


def check_params(values, where: str) -> None:
    """The timm model name a [params] table or parameters cell sets (kit.templates: cnn's names check)."""
    if "model_name" in values:
        check_model_name(values["model_name"], where)
