"""A fold's resume state: the latest epoch's weights, EMA, optimizer, scaler and step, which a rerun resumes
from and a fall-back to fp32 restarts from.

It is 12-16 bytes a parameter (both Adam moments), so it lives in the scratch folder (kit.runtime.paths), not
beside the fold checkpoints in the output folder: on Kaggle /kaggle/working holds 20 GB and is saved as the
kernel's output, and two fold-parallel workers' states of a 435M-parameter encoder would overflow it. Where
the scratch disk has no room, the state is held in host memory instead, with one warning: the fall-back still
works, and a rerun trains the fold afresh.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kit.runtime import checkpoint, paths
from kit.runtime.collective import Collective
from kit.train.evaluate import unwrap


def nbytes(state: Any) -> int:
    """Bytes of the tensors and arrays in a nested state."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(nbytes(v) for v in state.values())
    if isinstance(state, (list, tuple)):
        return sum(nbytes(v) for v in state)
    return int(getattr(state, "nbytes", 0))


class ResumeState:
    """Where one fold's resume state is kept: `path` on disk, or host memory when the disk has no room. Under
    DDP rank 0 decides (every rank follows) and writes; every rank keeps its own copy in memory when needed."""

    def __init__(self, path: Path, collective: Collective | None = None, log: Callable[[str], None] = print):
        self.path, self.collective, self.log = path, collective or Collective(), log
        self.memory: dict | None = None
        self.warned = False

    def exists(self) -> bool:
        """Rank 0's view (so every rank resumes, or none)."""
        return self.collective.broadcast(self.memory is not None or self.path.exists())

    def save(self, build: Callable[[], dict]) -> None:
        """Keep the state `build()` makes (CPU copies): on disk where it fits, else in memory."""
        main = self.collective.main
        state = build() if main else None
        refusal = self.collective.broadcast(paths.disk_refusal(nbytes(state), self.path.parent) if main else None)
        if not refusal:
            if main:
                checkpoint.save(state, self.path)
            self.memory = None
            return
        if not self.warned:
            self.log(f"WARNING: no room for the resume state on disk ({refusal}); it is kept in memory: a fall-back "
                     "to fp32 still restarts from it, but a rerun trains this fold afresh")
            self.warned = True
        self.memory = state if main else build()
        if main:
            self.path.unlink(missing_ok=True)  # an older epoch's state would resume the wrong epoch

    def load(self) -> dict:
        return self.memory if self.memory is not None else checkpoint.load(self.path)

    def clear(self) -> None:
        """The fold finished: its resume state is no longer needed."""
        self.memory = None
        if self.collective.main:
            self.path.unlink(missing_ok=True)


def host_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights (unwrapped from DDP and torch.compile), copied to host memory."""
    return on_host(unwrap(model).state_dict())


def on_host(state):
    """A nested state with its tensors copied to host memory: copies, even of tensors already there, so that a
    state held in memory (ResumeState) does not change with the model."""
    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=True)
    if isinstance(state, dict):
        return {k: on_host(v) for k, v in state.items()}
    if isinstance(state, list):
        return [on_host(v) for v in state]
    return state
