"""A kernel bundle: kernels/<name>/ = <slug>.ipynb + kernel-metadata.json, ready for `kaggle kernels push -p`;
with [inference], kernels/<name>-infer/ beside it; with [kernel] packages, kernels/<name>-packages/ (the
dataset of wheels both kernels attach and install from)."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from kit import config as kit_config
from kit import files
from kit.build import metadata, notebook, packages

ROOT = Path(__file__).resolve().parents[2]


def kernels_dir() -> Path:
    """Where bundles go: kernels/ in the repository (KIT_KERNELS_DIR moves it, for tests)."""
    return Path(os.environ.get("KIT_KERNELS_DIR") or ROOT / "kernels")


@dataclass(frozen=True)
class Bundle:
    folder: Path
    notebook: Path
    metadata: dict
    warnings: tuple[str, ...]
    config_path: Path
    changed: bool  # False when the folder already held exactly this bundle
    inference: Bundle | None = None  # with [inference]: the predict-only kernel, in kernels/<name>-infer/
    packages: packages.Packages | None = None  # with [kernel] packages: the wheels, in kernels/<name>-packages/


INFERENCE_FOLDER = "{name}-infer"
PACKAGES_FOLDER = "{name}-packages"


def inference_folder(config, out: Path | None = None) -> Path:
    return _beside(INFERENCE_FOLDER, config, out)


def packages_folder(config, out: Path | None = None) -> Path:
    return _beside(PACKAGES_FOLDER, config, out)


def _beside(pattern: str, config, out: Path | None) -> Path:
    base = out.parent if out else kernels_dir()
    return base / pattern.format(name=(out.name if out else config.name))


def build(comp: str, out: Path | None = None) -> Bundle:
    """Build the bundle for `comp` (a shipped name or a TOML path) into `out` (default kernels/<name>/), and
    with an [inference] table the inference kernel's beside it (kernels/<name>-infer/).

    Everything is checked and rendered before the first byte of a kernel is written (the wheels folder is
    resolved and written first, whole, when the packages changed); each file then lands whole
    (temp file + rename), only if it changed, and a notebook left from an earlier title is removed last."""
    config = kit_config.load(comp)
    user = metadata.username()
    metadata.build(config, user)  # both kernels' metadata checked before the wheels are resolved
    if config.inference is not None:
        metadata.build_inference(config, user)
    wheels = packages.build(config, user, packages_folder(config, out))
    dataset = wheels.dataset if wheels else ""
    meta = metadata.build(config, user, dataset)
    nb_text = notebook.dumps(notebook.build(config.spec.template, config.parameters(), config.kernel.internet, wheels))
    inference = None
    if config.inference is not None:
        inference_meta = metadata.build_inference(config, user, dataset)
        inference_text = notebook.dumps(notebook.build(config.spec.template, config.inference_parameters(), False, wheels))
        inference = (inference_folder(config, out), inference_meta, inference_text)
    folder = out or kernels_dir() / config.name
    built = replace(_write(folder, meta, nb_text, config, tuple(metadata.warnings_for(config))), packages=wheels)
    if inference is None:
        return built
    return replace(built, inference=replace(_write(*inference, config), packages=wheels))


def _write(folder: Path, meta: dict, nb_text: str, config, warnings: tuple[str, ...] = ()) -> Bundle:
    folder.mkdir(parents=True, exist_ok=True)
    nb_path = folder / meta["code_file"]
    changed = False
    for path, text in ((nb_path, nb_text), (folder / "kernel-metadata.json", metadata.dumps(meta))):
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            files.write_text(path, text)
            changed = True
    for stale in folder.glob("*.ipynb"):
        if stale.name != nb_path.name:
            os.unlink(stale)
            changed = True
    return Bundle(folder, nb_path, meta, warnings, config.path, changed)
