"""One notebook run's record: its checked parameters, the machine and what follows from it, where things go, a log.

kit.run.start makes it; every floor above reads it."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from kit.params import TrainParams
from kit.runtime import faults, hardware
from kit.runtime.precision import Precision
from kit.runtime.trained import Trained
from kit.spec import Spec


@dataclass
class Session:
    template: str
    params: TrainParams
    spec: Spec
    hardware: hardware.Hardware
    setup: hardware.Setup  # what follows from the machine, less what the preflight turned off
    data_dir: Path
    output_dir: Path
    started: float = field(default_factory=time.time)  # wall clock the time budget counts from
    worker: int | None = None  # the rank of a worker process (kit.runtime.workers); None in the notebook
    trained: Trained | None = None  # predict mode: the training run whose folds predict
    blend: list[tuple[str, Trained]] = field(default_factory=list)  # predict mode: the runs blended, by their source

    @property
    def device(self) -> torch.device:
        """With its index on CUDA (a worker's own GPU): tensors report cuda:N, and cuda != cuda:0."""
        return hardware.indexed(torch.device(self.hardware.device))

    @property
    def precision(self) -> Precision:
        """The precision policy the set-up chose (and the preflight kept)."""
        return Precision(self.setup.precision, self.hardware.device)

    def elapsed(self) -> float:
        return time.time() - self.started

    def log(self, message: str) -> None:
        print(message, flush=True)
        prefix = "" if self.worker is None else f"[worker {self.worker}] "
        with open(self.output_dir / "kit.log", "a", encoding="utf-8") as f:
            f.write("".join(f"{prefix}{line}\n" for line in message.splitlines()))

    def warn(self, message: str) -> None:
        self.log(f"WARNING: {message}")


def maybe_compile(session: Session, model: torch.nn.Module) -> torch.nn.Module:
    """torch.compile where asked for and where it works (CUDA, sm_70+, the preflight's try); a compile error
    in training falls back to eager mode (kit.train.loop); checkpoints unwrap it."""
    if not (session.params.compile and session.setup.compile_ok):
        return model
    return torch.compile(model, backend=_faulty_inductor if faults.armed("error.compile") else "inductor")


def _faulty_inductor(graph, example_inputs):
    """Inductor behind the `error.compile` failpoint: the error comes from where a real one would, inside
    Dynamo's call of its backend (it reaches the loop as Dynamo's BackendCompilerFailed)."""
    faults.fail("error.compile")
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(graph, example_inputs)


def configure_torch(plan: hardware.Setup) -> None:
    # cuDNN picks the fastest convolution algorithm for each input shape once; shapes are fixed per run.
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = plan.tf32
    torch.backends.cudnn.allow_tf32 = plan.tf32


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
