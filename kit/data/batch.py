"""A batch: named tensors (inputs, "target", "weight", "index"), as a loader yields it, an objective reads it and a
pipeline's prediction loop forwards it; declared once for every floor that handles one."""
from __future__ import annotations

import torch

Batch = dict[str, torch.Tensor]
