"""A run of a kernel: its checked parameters, the machine, the precision policy, where things go, a log."""
from __future__ import annotations

import dataclasses
import os
import random
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import kit
from kit import checks, fields
from kit import params as kit_params
from kit.runtime import faults, hardware, hub, paths, runs, trained, versions
from kit.runtime.precision import Precision
from kit.spec import Spec


@dataclass
class Session:
    template: str
    params: kit_params.TrainParams
    spec: Spec
    hardware: hardware.Hardware
    plan: hardware.Plan
    precision: Precision
    data_dir: Path
    output_dir: Path
    started: float = field(default_factory=time.time)  # wall clock the time budget counts from
    worker: int | None = None  # the rank of a worker process (kit.runtime.distributed); None in the notebook
    run: str = ""  # the fingerprint of what trains (kit.runtime.runs), set once the data is loaded
    trained: trained.Trained | None = None  # predict mode: the training run whose folds predict

    @property
    def device(self) -> torch.device:
        """With its index on CUDA (a worker's own GPU): tensors report cuda:N, and cuda != cuda:0."""
        return hardware.indexed(torch.device(self.hardware.device))

    @property
    def checkpoint_dir(self) -> Path:
        """This run's folder (kit.runtime.runs): what later runs with the same settings reuse."""
        return runs.folder(self)

    def elapsed(self) -> float:
        return time.time() - self.started

    def log(self, message: str) -> None:
        print(message, flush=True)
        prefix = "" if self.worker is None else f"[worker {self.worker}] "
        with open(self.output_dir / "kit.log", "a", encoding="utf-8") as f:
            f.write("".join(f"{prefix}{line}\n" for line in message.splitlines()))

    def warn(self, message: str) -> None:
        self.log(f"WARNING: {message}")


def start(template: str, namespace: Mapping[str, Any], worker: int | None = None) -> Session:
    """Check the notebook's parameters (read by name from `namespace`), look at the machine, settle the
    precision policy, find the data and the output folder, seed everything, and print what was decided."""
    # huggingface_hub (imported by timm) asks for ipywidgets where a notebook has none; text bars are fine.
    warnings.filterwarnings("ignore", message="IProgress not found")
    p = kit_params.from_namespace(template, namespace)
    predict = p.mode == "predict"  # the weights come from the checkpoints: no hub, no weights file
    libraries = versions.check()  # before anything that a too-old library would break
    hub_note = hub.settle(wants_hub=getattr(p, "pretrained", False) and not predict,
                          weights_file=bool(getattr(p, "weights_path", "")) and not predict or template == "text")
    spec = Spec.from_dict(namespace.get("competition", {}), "competition parameter")
    if spec.template != template:
        raise kit.KitError(f"competition parameter: template '{spec.template}' does not match this {template} notebook")
    if not predict:
        checks.setup(p)  # a model name or weights file that is wrong fails now, not after the images are decoded
    data = paths.data_dir(p.data_dir, spec.slug)
    found = trained.find(p.model_dir, template, skip=(data,)) if predict else None
    notes: list[str] = []
    if found is not None:
        p = trained.apply(found, p, notes.append)
    hw = hardware.detect(p.device)
    hardware.check_arch(hw)
    plan = hardware.plan(hw, p.num_workers, p.precision)
    out = paths.output_dir(p.output_dir)
    session = Session(
        template=template,
        params=p,
        spec=spec,
        hardware=hw,
        plan=plan,
        precision=Precision(plan.precision, hw.device),
        data_dir=data,
        output_dir=out,
        started=_process_start_time(),
        worker=worker,
        trained=found,
    )
    configure_torch(plan)
    seed_everything(p.seed)
    session.log(f"kit {kit.__version__} ({Path(kit.__file__).parent}), python {sys.version.split()[0]}, pid {os.getpid()}")
    session.log(libraries)
    session.log(f"parameters     {changed_parameters(p)}")
    if hub_note:
        session.log(f"pretrained     {hub_note}")
    session.log(hardware.describe(hw, plan, p.compile, p.precision))
    note = hardware.precision_note(hw, plan, p.precision)
    if note:
        session.warn(note)
    session.log(f"data           {data}")
    session.log(f"output         {out}")
    if found is not None:
        rerun = " on the hidden test set (a competition rerun)" if os.environ.get("KAGGLE_IS_COMPETITION_RERUN") else ""
        session.log(f"predict mode   {found.folder}: folds {[f + 1 for f in found.folds]}, trained by kit {found.version}; "
                    f"predicting{rerun}, no training")
        for note in notes:
            session.log(f"               {note}")
    return session


def changed_parameters(p: kit_params.TrainParams) -> str:
    """The parameters that differ from the template's defaults (the config's and the person's choices)."""
    defaults = fields.defaults(type(p))
    changed = [f"{k}={v!r}" for k, v in dataclasses.asdict(p).items() if v != defaults[k] and k not in ("data_dir", "output_dir")]
    return f"{', '.join(changed)}; the rest are the template's defaults" if changed else "the template's defaults"


def maybe_compile(session: Session, model: torch.nn.Module) -> torch.nn.Module:
    """torch.compile where asked for and where it works (CUDA, sm_70+, the preflight's try); a compile error
    in training falls back to eager mode (kit.train.loop); checkpoints unwrap it."""
    if not (session.params.compile and session.plan.compile_ok):
        return model
    return torch.compile(model, backend=_faulty_inductor if faults.armed("error.compile") else "inductor")


def _faulty_inductor(graph, example_inputs):
    """Inductor behind the `error.compile` failpoint: the error comes from where a real one would, inside
    Dynamo's call of its backend (it reaches the loop as Dynamo's BackendCompilerFailed)."""
    faults.fail("error.compile")
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(graph, example_inputs)


def configure_torch(plan: hardware.Plan) -> None:
    # cuDNN picks the fastest convolution algorithm for each input shape once; shapes are fixed per run.
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = plan.tf32
    torch.backends.cudnn.allow_tf32 = plan.tf32


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


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
