"""Failpoints: the faults a GPU raises, injected where they happen, so the recovery code runs on the CPU.

`KIT_FAULTS` lists faults as `site:hits`, comma-separated: `oom.forward:3` raises CUDA's out-of-memory
error the third time the training forward runs; `nan.loss:2-6` makes the loss NaN on hits 2 to 6;
`nan.amp:1-` on every hit under mixed precision; a bare `fail.prefetch` is `fail.prefetch:1`. Each process
counts its own hits (a worker inherits the list, not the counts). Unset, which is always outside tests, a
check is one dict lookup.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

SITES = {
    # out of memory where a training step, validation, prediction or a batch-size trial allocates
    "oom.forward", "oom.backward", "oom.unscale", "oom.step", "oom.validation", "oom.predict", "oom.autotune",
    "nan.loss",  # a non-finite loss
    "nan.amp",  # a non-finite loss under mixed precision only (fp16's overflow): fp32 then trains
    "overflow.forward",  # activations overflow inside the forward, before a BatchNorm layer updates its statistics
    "error.compile",  # torch.compile's backend fails (as Triton does on a GPU it cannot compile for)
    # the preflight's probe of each optional accelerant fails
    "fail.precision", "fail.channels_last", "fail.prefetch", "fail.compile", "fail.monitor", "fail.autotune",
    # a parallel worker, at the start of its n-th fold: raises, dies (SIGKILL), or writes to fd 2 and aborts
    "crash.worker0", "crash.worker1", "die.worker0", "die.worker1", "abort.worker0", "abort.worker1",
}  # fmt: skip
_SPEC = re.compile(r"^([a-z_.0-9]+)(?::(\d+)(-(\d*))?)?$")


def parse(text: str) -> dict[str, tuple[int, float]]:
    """{site: (first hit, last hit)} from a KIT_FAULTS value."""
    out: dict[str, tuple[int, float]] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = _SPEC.match(item)
        if not m or m.group(1) not in SITES:
            raise ValueError(f"KIT_FAULTS: '{item}' is not site[:n[-m]] with a site among {', '.join(sorted(SITES))}")
        first = int(m.group(2) or 1)
        last = first if not m.group(3) else (int(m.group(4)) if m.group(4) else float("inf"))
        out[m.group(1)] = (first, last)
    return out


_armed = parse(os.environ.get("KIT_FAULTS", ""))
_hits: dict[str, int] = {}


def arm(text: str) -> None:
    """Replace the armed faults (tests; a process reads KIT_FAULTS when kit is imported) and reset counts."""
    global _armed
    _armed = parse(text)
    _hits.clear()


def armed(site: str) -> bool:
    return site in _armed


def hit(site: str) -> bool:
    """Count a pass through `site`; True when this pass is one the armed fault covers."""
    if site not in _armed:
        return False
    n = _hits[site] = _hits.get(site, 0) + 1
    first, last = _armed[site]
    return first <= n <= last


def oom(site: str) -> None:
    """Raise what CUDA raises when an allocation fails, on the armed hits of `site`."""
    if hit(site):
        raise torch.cuda.OutOfMemoryError(f"CUDA out of memory. Tried to allocate 2.00 GiB (injected at {site})")


@contextmanager
def overflow(site: str, model: nn.Module) -> Iterator[None]:
    """On the armed hits of `site`, the input of the model's first BatchNorm layer is infinite during the block:
    what an fp16 forward that overflows does to the layer's running statistics."""
    norm = next((m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)), None)
    if norm is None or not hit(site):
        yield
        return
    handle = norm.register_forward_pre_hook(lambda module, args: (args[0] * float("inf"), *args[1:]))
    try:
        yield
    finally:
        handle.remove()


def fail(site: str) -> None:
    if hit(site):
        raise RuntimeError(f"injected failure at {site}")


def nan(site: str, loss: torch.Tensor) -> torch.Tensor:
    return loss * float("nan") if hit(site) else loss
