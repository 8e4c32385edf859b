"""The precision policy: settled once, so the training loop never mentions dtypes or scalers."""
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
        # Only fp16 needs loss scaling: its exponent range underflows small gradients; bf16's does not.
        return torch.amp.GradScaler(self.device_type, enabled=self.name == "fp16")

    def fallback(self) -> Precision:
        """fp32 on the same device: what a run falls back to when mixed precision keeps producing NaNs."""
        return Precision("fp32", self.device_type)
