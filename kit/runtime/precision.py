"""The precision policy: settled once, so the training loop never mentions dtypes or scalers.

`Precision` is a value: fp16, bf16 or fp32 on a device type. `InForce` is the one place that says which
precision a fold trains with now: the loop switches it (a fall-back to fp32, a resumed fold's checkpoint),
and the data path, the task and validation read it at every batch, so a switch reaches all of them at once.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@dataclass(frozen=True)
class Precision:
    name: str  # "fp16", "bf16" or "fp32"
    device_type: str  # "cuda" or "cpu"

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.name]

    def autocast(self):
        if self.name == "fp32":
            return nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler:
        """fp16: dynamic loss scaling (its exponent range underflows small gradients). bf16 and fp32 need no
        scaling and get a scale of 1, kept for the scaler's on-device check: a step whose gradients are not
        finite is skipped without the host ever waiting for the GPU to say so."""
        if self.name == "fp16":
            return torch.amp.GradScaler(self.device_type)
        return UnitScaler(self.device_type)

    def fallback(self) -> Precision:
        """fp32 on the same device: what a run falls back to when mixed precision keeps producing NaNs."""
        return Precision("fp32", self.device_type)

    def describe(self) -> str:
        return {"fp16": "fp16 autocast with loss scaling (GradScaler)", "bf16": "bf16 autocast", "fp32": "fp32"}[self.name]


class UnitScaler(torch.amp.GradScaler):
    """A GradScaler whose scale stays 1: no scaling, only the skip of non-finite steps."""

    def __init__(self, device: str):
        super().__init__(device, init_scale=1.0)

    def update(self, new_scale=None) -> None:
        super().update(1.0)  # a skipped step would halve the scale; there is nothing to back off from


def fresh_scaler(scaler: torch.amp.GradScaler, precision: Precision) -> torch.amp.GradScaler:
    """A scaler with `scaler`'s scale and growth state but no record of the step in progress, so a step
    retried after an out-of-memory error (which may have struck after `unscale_`) can unscale again."""
    new = precision.grad_scaler()
    new.load_state_dict(scaler.state_dict())
    return new


class InForce:
    """The precision a fold trains with now, shared by reference (see the module's docstring)."""

    def __init__(self, precision: Precision):
        self.current = precision

    def switch(self, precision: Precision) -> None:
        self.current = precision

    @property
    def name(self) -> str:
        return self.current.name

    @property
    def device_type(self) -> str:
        return self.current.device_type

    @property
    def dtype(self) -> torch.dtype:
        return self.current.dtype

    def autocast(self):
        return self.current.autocast()

    def grad_scaler(self) -> torch.amp.GradScaler:
        return self.current.grad_scaler()

    def fallback(self) -> Precision:
        return self.current.fallback()


def in_force(precision: Precision | InForce) -> InForce:
    return precision if isinstance(precision, InForce) else InForce(precision)
