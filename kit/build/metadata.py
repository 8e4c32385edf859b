"""kernel-metadata.json: built from the config, checked more strictly than the kaggle client checks it
(the client accepts unknown keys silently and the server rejects titles over 50 characters)."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slugify import slugify

from kit import templates
from kit.config import MACHINE_SHAPES, Config, blend_source
from kit.errors import KitError

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
KEYS = (
    "id", "title", "code_file", "language", "kernel_type", "is_private", "enable_gpu", "enable_tpu",
    "enable_internet", "dataset_sources", "competition_sources", "kernel_sources", "model_sources",
    "machine_shape", "docker_image_pinning_type", "keywords", "id_no", "docker_image",
)  # fmt: skip
PART = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
SOURCES = {  # Kaggle's forms, checked here instead of after a wasted session
    "dataset_sources": (re.compile(rf"^{PART}/{PART}(/\d+)?$"), "owner/dataset-slug (or owner/dataset-slug/version)"),
    "kernel_sources": (re.compile(rf"^{PART}/{PART}(/\d+)?$"), "owner/kernel-slug"),
    "model_sources": (re.compile(rf"^{PART}/{PART}/{PART}/{PART}/\d+$"), "owner/model/framework/variation/version"),
    "competition_sources": (re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$"), "a competition slug such as dog-breed-identification"),
}
RETIRED = {"NvidiaTeslaP100": "Kaggle retired the P100 and its current image's torch has no sm_60 kernels"}


def kaggle_config_dirs() -> list[Path]:
    """Where the kaggle client looks for kaggle.json, in its order."""
    if os.environ.get("KAGGLE_CONFIG_DIR"):
        return [Path(os.environ["KAGGLE_CONFIG_DIR"])]
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [Path.home() / ".kaggle", xdg / "kaggle"]


def kaggle_json_files() -> Iterator[tuple[Path, dict]]:
    """Each kaggle.json where the client looks, parsed; a broken one is an error that never echoes it."""
    for folder in kaggle_config_dirs():
        path = folder / "kaggle.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, OSError):
                data = None
            if not isinstance(data, dict):
                raise KitError(f"{path} is not valid JSON; download a new token from kaggle.com > Settings > API")
            yield path, data


def username() -> str:
    """The Kaggle user the kernel belongs to: KAGGLE_USERNAME, else kaggle.json's username."""
    name = os.environ.get("KAGGLE_USERNAME", "").strip()
    if name:
        return name
    for _, data in kaggle_json_files():
        name = str(data.get("username", "")).strip()
        if name:
            return name
    raise KitError(
        "no Kaggle username: set KAGGLE_USERNAME, or save kaggle.json (kaggle.com > Settings > API > "
        "Create New Token) to ~/.kaggle/"
    )


def kernel_slug(config: Config) -> str:
    title, where = config.kernel.title, f"{config.path}: [kernel]"
    if not 5 <= len(title) <= 50:
        raise KitError(f"{where} title '{title}' has {len(title)} characters; Kaggle needs 5 to 50")
    derived = slugify(title)
    slug = config.kernel.slug or derived
    if not SLUG.match(slug) or not 5 <= len(slug) <= 50:
        raise KitError(f"{where} slug '{slug}' must be 5 to 50 lowercase letters, digits and single hyphens")
    if slug != derived:
        raise KitError(
            f"{where} slug '{slug}' does not match the title, which Kaggle turns into '{derived}'; "
            "change the title or drop the slug"
        )
    return slug


def build(config: Config, user: str, packages: str = "") -> dict[str, Any]:
    """The training kernel's metadata; `packages`: the id of the dataset of wheels it installs from."""
    slug, k = kernel_slug(config), config.kernel
    tpu = k.gpu and k.machine_shape.startswith("Tpu")
    meta: dict[str, Any] = {
        "id": f"{user}/{slug}",
        "title": k.title,
        "code_file": f"{slug}.ipynb",
        "language": "python",
        "kernel_type": "notebook",
        "is_private": k.private,
        "enable_gpu": k.gpu and not tpu,
        "enable_tpu": tpu,
        "enable_internet": k.internet,
        "dataset_sources": list(dict.fromkeys([*k.dataset_sources, *([packages] if packages else [])])),
        "competition_sources": [config.spec.slug],
        "kernel_sources": list(k.kernel_sources),
        "model_sources": list(k.model_sources),
    }
    if k.gpu:
        meta["machine_shape"] = k.machine_shape
    if k.docker_image_pinning_type:
        meta["docker_image_pinning_type"] = k.docker_image_pinning_type
    validate(meta, where=f"{config.path}: [kernel]")
    return meta


INFERENCE_SUFFIX = " Inference"


def inference_title(config: Config) -> str:
    """[inference] title, or the training kernel's with " Inference" added; 5 to 50 characters, and not the
    training kernel's (the two kernels need their own slugs)."""
    where = f"{config.path}: [inference]"
    given = config.inference.title if config.inference else ""
    title = given or config.kernel.title + INFERENCE_SUFFIX
    if not 5 <= len(title) <= 50:
        how = "" if given else f" (the [kernel] title + '{INFERENCE_SUFFIX.strip()}')"
        raise KitError(f"{where} title '{title}'{how} has {len(title)} characters; Kaggle needs 5 to 50: set [inference] title")
    if slugify(title) == kernel_slug(config):
        raise KitError(f"{where} title '{title}' gives the training kernel's slug; give the inference kernel a title of its own")
    return title


def build_inference(config: Config, user: str, packages: str = "") -> dict[str, Any]:
    """The inference kernel's metadata: the competition, the training kernel's output through kernel_sources
    (or the published run of [inference] trained_model through model_sources), the packages dataset the
    training kernel installs from, internet off (Kaggle requires it of code-competition submissions)."""
    inf, where = config.inference, f"{config.path}: [inference]"
    if inf is None:
        raise KitError(f"{config.path}: no [inference] table, so no inference kernel")
    title = inference_title(config)
    slug = slugify(title)
    if not SLUG.match(slug) or not 5 <= len(slug) <= 50:
        raise KitError(f"{where} title '{title}' gives the slug '{slug}'; Kaggle needs 5 to 50 letters, digits and hyphens")
    tpu = inf.enable_gpu and inf.machine_shape.startswith("Tpu")
    # the text template rebuilds each fold's model from the model folder (its config and tokenizer): the
    # inference kernel needs the dataset or model that holds it as much as the training kernel did
    inherited = config.kernel if templates.get(config.spec.template).model_folder else None
    datasets = list(dict.fromkeys([*(inherited.dataset_sources if inherited else ()), *inf.dataset_sources,
                                   *([packages] if packages else [])]))
    trained = [inf.trained_model] if inf.trained_model else []
    kernels = [] if trained else [f"{user}/{kernel_slug(config)}"]
    if config.blend is not None:  # the runs it blends, in place of the training kernel (folders are attached as datasets)
        blended = [(blend_source(r, f"{config.path}: [blend]"), r) for r in config.blend.runs]
        trained = [r for kind, r in blended if kind == "model"]
        kernels = [r for kind, r in blended if kind == "kernel"]
    models = list(dict.fromkeys([*(inherited.model_sources if inherited else ()), *inf.model_sources, *trained]))
    meta: dict[str, Any] = {
        "id": f"{user}/{slug}",
        "title": title,
        "code_file": f"{slug}.ipynb",
        "language": "python",
        "kernel_type": "notebook",
        "is_private": config.kernel.private,
        "enable_gpu": inf.enable_gpu and not tpu,
        "enable_tpu": tpu,
        "enable_internet": False,
        "dataset_sources": datasets,
        "competition_sources": [config.spec.slug],
        "kernel_sources": kernels,
        "model_sources": models,
    }
    if inf.trained_model and not SOURCES["model_sources"][0].match(inf.trained_model):
        raise KitError(f"{where} trained_model '{inf.trained_model}' is not of the form owner/model/framework/variation/"
                       "version (make publish prints it)")
    if inf.enable_gpu:
        meta["machine_shape"] = inf.machine_shape
    if config.kernel.docker_image_pinning_type:  # the same image as training: the checkpoints load as they were saved
        meta["docker_image_pinning_type"] = config.kernel.docker_image_pinning_type
    validate(meta, where=where)
    return meta


def validate(meta: dict[str, Any], where: str = "kernel-metadata.json:") -> None:
    """Raise KitError for what Kaggle would reject or silently ignore."""
    for key in meta:
        if key not in KEYS:
            raise KitError(f"kernel-metadata.json: unknown key '{key}' (Kaggle ignores it silently)")
    for key, (pattern, form) in SOURCES.items():
        for source in meta.get(key, []):
            if not isinstance(source, str) or not pattern.match(source):
                raise KitError(f"{where} {key}: '{source}' is not of the form {form}")
    shape = meta.get("machine_shape")
    if shape is not None and shape not in MACHINE_SHAPES:
        raise KitError(f"{where} machine_shape '{shape}' is not one of {', '.join(MACHINE_SHAPES)}")
    if meta.get("docker_image_pinning_type", "original") not in ("original", "latest"):
        raise KitError(f"{where} docker_image_pinning_type must be 'original' or 'latest'")
    owner, _, slug = str(meta.get("id", "")).partition("/")
    if not owner or not SLUG.match(slug):
        raise KitError(f"kernel-metadata.json: id '{meta.get('id')}' must be <username>/<slug>")
    title = meta.get("title", "")
    if not 5 <= len(title) <= 50:
        raise KitError(f"kernel-metadata.json: title must have 5 to 50 characters, has {len(title)}")
    if slugify(title) != slug:
        raise KitError(f"kernel-metadata.json: title '{title}' does not resolve to the id's slug '{slug}'")


def warnings_for(config: Config) -> list[str]:
    """Things that build but will disappoint on Kaggle."""
    out = []
    if config.kernel.machine_shape in RETIRED and config.kernel.gpu:
        out.append(f"machine_shape {config.kernel.machine_shape}: {RETIRED[config.kernel.machine_shape]}; use NvidiaTeslaT4")
    p = config.checked
    if getattr(p, "pretrained", False) and not getattr(p, "weights_path", "") and not config.kernel.internet:
        out.append(
            "pretrained weights cannot be downloaded with internet = false: attach them ([kernel] model_sources or "
            "dataset_sources) and set [params] weights_path, or the kernel trains from random init"
        )
    if templates.get(config.spec.template).model_folder and not (config.kernel.dataset_sources or config.kernel.model_sources):
        out.append(f"model_path '{getattr(p, 'model_path', '')}': no dataset or model is attached to hold it; add the one "
                   "holding the Hugging Face model folder to [kernel] dataset_sources or model_sources")
    return out


def dumps(meta: dict[str, Any]) -> str:
    return json.dumps(meta, indent=2) + "\n"
