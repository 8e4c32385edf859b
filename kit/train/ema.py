"""An exponential moving average of the weights (timm's ModelEmaV3), validated beside them every epoch.

The average smooths the last steps' noise: on small data, where validation jumps from epoch to epoch, it
can score better than the weights themselves; where it does not (at the end of a cosine schedule the
weights settle), nothing is lost: each epoch validates both, and the better is what a new best epoch keeps.
The decay warms up (1 - (1 + step) ** -0.75: 0.90 after 20 steps, 0.99 after 500), so a short run averages
over its recent steps rather than holding on to its random start; it never exceeds DECAY.
"""
from __future__ import annotations

from torch import nn

DECAY = 0.9998
WARMUP_POWER = 0.75


def create(model: nn.Module) -> nn.Module:
    """timm's ModelEmaV3 of `model` (the bare module, out of compile's and DDP's wrappers), on its device."""
    from timm.utils import ModelEmaV3

    return ModelEmaV3(model, decay=DECAY, use_warmup=True, warmup_power=WARMUP_POWER)
