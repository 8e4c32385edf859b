"""Competition configs: a TOML file -> a frozen `Config`; every error names the file and the key."""
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit import fields, params, templates
from kit.errors import KitError
from kit.fields import setting
from kit.metric_records import metric_record
from kit.runtime.resources import Sizes
from kit.spec import Competition, Data, Spec, refuse_unread

SHIPPED = Path(__file__).parent / "competitions"

MACHINE_SHAPES = ("NvidiaTeslaT4", "NvidiaL4", "NvidiaTeslaA100", "NvidiaH100", "NvidiaTeslaP100", "Tpu1VmV38")


@dataclass(frozen=True)
class Kernel:
    title: str = ""  # 5..50 characters; Kaggle derives the kernel's URL (slug) from it
    slug: str = ""  # "" means the slugified title
    machine_shape: str = setting("NvidiaTeslaT4", choices=MACHINE_SHAPES)  # NvidiaTeslaT4 is GPU T4 x2
    gpu: bool = True
    internet: bool = False
    private: bool = True
    dataset_sources: tuple[str, ...] = ()  # owner/dataset-slug
    model_sources: tuple[str, ...] = ()  # owner/model/framework/variation/version
    kernel_sources: tuple[str, ...] = ()  # owner/kernel-slug
    # pip requirements Kaggle's image lacks ("segmentation-models-pytorch==0.6.0"): make kernel puts their wheels
    # in kernels/<name>-packages/, make push uploads that as a dataset and attaches it, the kernel installs from it
    packages: tuple[str, ...] = ()
    docker_image_pinning_type: str = setting("", choices=("", "original", "latest"))


@dataclass(frozen=True)
class Inference:
    """[inference]: a code competition's second kernel, which predicts with the training kernel's output
    (attached through kernel_sources, or a published model version: trained_model) and is the one submitted.
    Internet off, as Kaggle requires there; it installs the [kernel] packages too."""

    title: str = ""  # "" means the training kernel's title + " Inference"
    machine_shape: str = setting("NvidiaTeslaT4", choices=MACHINE_SHAPES)
    enable_gpu: bool = True
    dataset_sources: tuple[str, ...] = ()  # extra inputs, beside the competition and the training kernel
    model_sources: tuple[str, ...] = ()
    # a training run published with make publish (owner/model/framework/variation/version): attached instead
    # of the training kernel's output, so the submission keeps its model while the training kernel moves on
    trained_model: str = ""


@dataclass(frozen=True)
class Blend:
    """[blend]: the runs the inference kernel blends, each by where it comes from: a training kernel's output
    (owner/kernel-slug, attached through kernel_sources), a run published with make publish
    (owner/model/framework/variation/version, through model_sources) or a folder the kernel sees (an absolute
    path, such as a dataset's under /kaggle/input). Weights come from their out-of-fold predictions."""

    runs: tuple[str, ...] = ()


def blend_source(run: str, where: str) -> str:
    """What a [blend] run names: "folder", "kernel" or "model"; anything else is one line."""
    if run.startswith(("/", "~")):
        return "folder"
    parts = run.split("/")
    if len(parts) in (2, 5) and all(parts):
        return "kernel" if len(parts) == 2 else "model"
    raise KitError(f"{where} runs: '{run}' is neither a kernel (owner/kernel-slug), a model version "
                   "(owner/model/framework/variation/version) nor an absolute folder")


@dataclass(frozen=True)
class Config:
    path: Path
    name: str  # the file's stem: the bundle goes to kernels/<name>/
    spec: Spec
    kernel: Kernel
    params: Mapping[str, Any]  # [params] as written (checked): what the build injects
    checked: params.TrainParams  # [params] over the template's defaults: what the training kernel runs with
    smoke: Mapping[str, Any]  # [smoke] as written (checked): applied over params by `make smoke`
    inference: Inference | None = None  # [inference]: build a predict-only kernel beside the training one
    blend: Blend | None = None  # [blend]: the runs the inference kernel blends
    sizes: Sizes | None = None  # [sizes]: the competition at its real size, what make plan reads without the data

    def parameters(self, smoke: bool = False) -> dict[str, Any]:
        """Notebook parameters: the competition spec plus the overrides of [params] (and [smoke])."""
        values = {"competition": self.spec.shown(), **self.params}
        if smoke:
            values.update(self.smoke)
        return values

    def inference_parameters(self, smoke: bool = False) -> dict[str, Any]:
        """The inference kernel's: the same values in predict mode (the model's own come from its checkpoints)."""
        blend = {"blend": list(self.blend.runs)} if self.blend is not None else {}
        return {**self.parameters(smoke), "mode": "predict", **blend}


SECTIONS = ("competition", "data", "sizes", "kernel", "inference", "blend", "params", "smoke")


def resolve(comp: str) -> Path:
    """A shipped config's name (`dog-breed`) or a path to any TOML file."""
    if not comp:
        raise KitError(f"no competition given: pass COMP=<name> (shipped: {', '.join(shipped())}) or COMP=path.toml")
    if comp.endswith(".toml") or "/" in comp:
        path = Path(comp)
        if not path.is_file():
            raise KitError(f"{comp}: no such config file")
        return path
    path = SHIPPED / f"{comp}.toml"
    if not path.is_file():
        raise KitError(f"unknown competition '{comp}' (shipped: {', '.join(shipped())}); or pass a path to a .toml")
    return path


def shipped() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load(comp: str) -> Config:
    path = resolve(comp)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise KitError(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError:
        raise KitError(f"{path}: not UTF-8 text") from None
    return parse(raw, path)


def parse(raw: Mapping[str, Any], path: Path) -> Config:
    for section, value in raw.items():
        if section not in SECTIONS:
            raise KitError(f"{path}: unknown section [{section}] (known: {', '.join(SECTIONS)})")
        if not isinstance(value, dict):
            raise KitError(f"{path}: '{section}' must be a table, written [{section}]")
    if "competition" not in raw:
        raise KitError(f"{path}: missing [competition] table with slug, template and metric")
    competition = fields.build(Competition, raw["competition"], f"{path}: [competition]")
    data = fields.build(Data, raw.get("data", {}), f"{path}: [data]")
    refuse_unread(competition.template, raw.get("data", {}), f"{path}: [data]")  # even a key set to its default
    spec = Spec.from_dict({**_asdict(competition), **_asdict(data)}, f"{path}: [competition]")
    kernel = fields.build(Kernel, raw.get("kernel", {}), f"{path}: [kernel]")
    if not kernel.title:
        raise KitError(f"{path}: [kernel] title is missing; give the kernel a title of 5 to 50 characters")
    given = dict(raw.get("params", {}))
    smoke = dict(raw.get("smoke", {}))
    cls = templates.get(spec.template).params
    checked = params.check(cls, given, f"{path}: [params]")
    params.check(cls, {**given, **smoke}, f"{path}: [smoke]")
    names = templates.get(spec.template).names  # the template's model names: timm's, smp's
    for table, values in (("params", given), ("smoke", smoke)):
        if names:
            templates.load(names)(values, f"{path}: [{table}]")
    inference = fields.build(Inference, raw["inference"], f"{path}: [inference]") if "inference" in raw else None
    blend = fields.build(Blend, raw["blend"], f"{path}: [blend]") if "blend" in raw else None
    if blend is not None:
        if not blend.runs:
            raise KitError(f"{path}: [blend] runs is empty; name the runs to blend (owner/kernel-slug, or a model version)")
        for run in blend.runs:
            blend_source(run, f"{path}: [blend]")
        if inference is not None and inference.trained_model:
            raise KitError(f"{path}: [inference] trained_model and [blend] are both set; name the published run in "
                           "[blend] runs instead")
        record = metric_record(spec.metric)
        if record.grouped or record.confidence:  # the kept out-of-fold rows (oof.csv) hold neither groups nor confidences
            raise KitError(f"{path}: [blend] under metric {spec.metric}: kit's blends fit their weights on the runs' kept "
                           "out-of-fold rows, which hold no " + ("groups" if record.grouped else "confidence") +
                           "; remove [blend] and submit one run")
        inference = inference or Inference()  # the blend is what the inference kernel submits
    sizes = fields.build(Sizes, raw["sizes"], f"{path}: [sizes]") if "sizes" in raw else None
    return Config(path=path, name=path.stem, spec=spec, kernel=kernel, params=given, checked=checked, smoke=smoke,
                  inference=inference, blend=blend, sizes=sizes)


def _asdict(obj) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in fields.names(type(obj))}
