"""The notebook's first step: check its parameters, look at the machine, settle the precision policy, find the
data and the output folder, and say what was decided (kit.runtime.session.Session is what it returns)."""
from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import kit
from kit import fields, params, templates
from kit.errors import KitError
from kit.runtime import hardware, hub, paths, trained, versions
from kit.runtime.session import Session, configure_torch, seed_everything
from kit.spec import Spec


def start(template: str, namespace: Mapping[str, Any], worker: int | None = None) -> Session:
    """Check the notebook's parameters (read by name from `namespace`), look at the machine, settle the
    precision policy, find the data and the output folder, seed everything, and print what was decided."""
    # huggingface_hub (imported by timm) asks for ipywidgets where a notebook has none; text bars are fine.
    warnings.filterwarnings("ignore", message="IProgress not found")
    record = templates.get(template)
    p = params.from_namespace(record.params, namespace)
    predict = p.mode == "predict"  # the weights come from the checkpoints: no hub, no weights file
    libraries = versions.check()  # before anything that a too-old library would break
    hub_note = hub.settle(wants_hub=getattr(p, "pretrained", False) and not predict,
                          weights_file=bool(getattr(p, "weights_path", "")) and not predict or record.model_folder)
    spec = Spec.from_dict(namespace.get("competition", {}), "competition parameter")
    if spec.template != template:
        raise KitError(f"competition parameter: template '{spec.template}' does not match this {template} notebook")
    if not predict:
        check_choices(p, record)  # a model name or weights file that is wrong fails now, not after the images are decoded
    data = paths.data_dir(p.data_dir, spec.slug)
    blend, missing = trained.find_blend(p.blend, skip=(data,)) if predict and p.blend else ([], [])
    found = None  # predict mode: the run whose folds this notebook's steps read (a blend's first of this template)
    if blend:
        found = blend_run(blend, template, p.model_dir)
    elif predict:
        found = trained.find(p.model_dir, template, skip=(data,))
    notes: list[str] = []
    if found is not None:
        p = trained.apply(found, p, notes.append)
    hw = hardware.detect(p.device)
    hardware.check_arch(hw)
    setup = accelerants(hardware.setup(hw, p.num_workers, p.precision), record)
    setup, model_note = model_precision(setup, p, record)
    out = paths.output_dir(p.output_dir)
    session = Session(
        template=template,
        params=p,
        spec=spec,
        hardware=hw,
        setup=setup,
        data_dir=data,
        output_dir=out,
        started=_process_start_time(),
        worker=worker,
        trained=found,
        blend=blend,
    )
    configure_torch(setup)
    seed_everything(p.seed)
    session.log(f"kit {kit.__version__} ({Path(kit.__file__).parent}), python {sys.version.split()[0]}, pid {os.getpid()}")
    session.log(libraries)
    session.log(f"parameters     {changed_parameters(p)}")
    if hub_note:
        session.log(f"pretrained     {hub_note}")
    session.log(hardware.describe(hw, setup, p.compile, p.precision))
    note = hardware.precision_note(hw, setup, p.precision)
    if note:
        session.warn(note)
    if model_note:
        session.log(f"precision      {model_note}")
    session.log(f"data           {data}")
    session.log(f"output         {out}")
    if found is not None:
        rerun = " on the hidden test set (a competition rerun)" if os.environ.get("KAGGLE_IS_COMPETITION_RERUN") else ""
        session.log(f"predict mode   {found.folder}: folds {[f + 1 for f in found.folds]}, trained by kit {found.version}; "
                    f"predicting{rerun}, no training")
        for note in notes:
            session.log(f"               {note}")
    if blend:
        listed = ", ".join(f"{source} ({t.template}, run {t.folder.name})" for source, t in blend)
        session.log(f"blend          {len(blend)} of {len(p.blend)} runs attached: {listed}")
    for line in missing:
        session.warn(line)
    if p.blend and not predict:
        session.warn("blend is read in predict mode only (an inference kernel); this training run leaves it aside")
    return session


def blend_run(blend: list[tuple[str, trained.Trained]], template: str, model_dir: str) -> trained.Trained:
    """The run of a blend that this notebook's own steps (data, folds) stand for: its first of this template."""
    if model_dir:
        raise KitError("model_dir and blend are both set; blend names every run to predict with: leave model_dir empty")
    mine = [t for _, t in blend if t.template == template]
    if not mine:
        names = ", ".join(f"{source} ({t.template})" for source, t in blend)
        raise KitError(f"blend: none of its runs is a {template} run ({names}); predict with the notebook of one of "
                       "their templates")
    return mine[0]


def changed_parameters(p: params.TrainParams) -> str:
    """The parameters that differ from the template's defaults (the config's and the person's choices)."""
    defaults = fields.defaults(type(p))
    changed = [f"{k}={v!r}" for k, v in dataclasses.asdict(p).items() if v != defaults[k] and k not in ("data_dir", "output_dir")]
    return f"{', '.join(changed)}; the rest are the template's defaults" if changed else "the template's defaults"




def _process_start_time() -> float:
    """When this kernel process started, if that was moments ago (a batch run: the budget then counts from
    the notebook's first cell); otherwise now (an interactive kernel that has been open a while)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
        started = boot + start_ticks / ticks
        return started if 0 <= time.time() - started < 120 else time.time()
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def accelerants(setup: hardware.Setup, record: templates.Template) -> hardware.Setup:
    """What the machine offers, less what the template's data path has no use for: the preflight probes, and
    the set-up shows, only what will run (text batches are neither images nor prefetched on a side stream)."""
    return dataclasses.replace(setup, channels_last=setup.channels_last and record.channels_last,
                               prefetch=setup.prefetch and record.prefetch)


def model_precision(setup: hardware.Setup, p: params.TrainParams,
                    record: templates.Template) -> tuple[hardware.Setup, str]:
    """The set-up with the precision the template's model trains in (T5 in fp32 where fp16 was chosen: its
    feed-forward overflows fp16), and the line that says so ("" where it is the machine's)."""
    if not record.precision:
        return setup, ""
    name, note = templates.load(record.precision)(setup.precision, p)
    return dataclasses.replace(setup, precision=name), note


def check_choices(p: params.TrainParams, record: templates.Template) -> None:
    """At set-up, before the data is read: the model names (the template's check: timm's, smp's), and the weights
    file where one is named."""
    if record.names:
        templates.load(record.names)(dataclasses.asdict(p), "parameters cell")
    if getattr(p, "weights_path", ""):
        paths.find_weights(p.weights_path)
