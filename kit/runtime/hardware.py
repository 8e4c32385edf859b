"""What machine the kernel runs on, and what follows from it: precision, TF32, channels_last, workers.

`detect` reads the machine; everything else is a pure function of the `Hardware` record, so the choices
are tested with faked devices.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kit.errors import KitError
from kit.runtime.precision import Precision


@dataclass(frozen=True)
class Hardware:
    device: str  # "cuda" or "cpu"
    gpu_name: str = ""
    gpu_count: int = 0
    capability: tuple[int, int] | None = None
    gpu_memory_gb: float = 0.0
    cpu_count: int = 1
    ram_gb: float = 0.0
    arch_list: tuple[str, ...] = ()  # what this torch build has kernels for: sm_75, compute_90, ...


@dataclass(frozen=True)
class Setup:
    precision: str  # "fp16" (with a GradScaler), "bf16" or "fp32"
    tf32: bool
    channels_last: bool
    compile_ok: bool  # torch.compile's Triton backend needs sm_70 or newer
    workers: int
    prefetch: bool = False  # copy and augment the next batch on a side stream while the current one trains
    monitor: bool = False  # sample GPU utilisation, memory and power in the background
    autotune: bool = False  # batch_size="auto" runs trials (else a fixed batch: the CPU has no memory wall)


def choose_precision(device: str, capability: tuple[int, int] | None) -> str:
    """fp16 on Volta/Turing (T4: no native bf16, whatever is_bf16_supported says), bf16 on Ampere+, else fp32."""
    if device != "cuda" or capability is None:
        return "fp32"
    if capability >= (8, 0):
        return "bf16"
    if capability >= (7, 0):
        return "fp16"
    return "fp32"  # Pascal (P100): fp16 has no tensor cores there


def setup(hw: Hardware, num_workers: int = -1, precision: str = "auto") -> Setup:
    """What follows from the machine; `precision` other than "auto" is honoured as asked, on any device
    (fp16 on the CPU runs CPU autocast with a live GradScaler: how the tests exercise a T4's precision)."""
    cuda = hw.device == "cuda"
    if num_workers < 0:
        # The loaders only gather rows of a decoded uint8 cache, so a few workers keep a GPU fed; on the
        # CPU they would compete with the model for the same cores.
        num_workers = min(hw.cpu_count, 8) if cuda else 0
    return Setup(
        precision=choose_precision(hw.device, hw.capability) if precision == "auto" else precision,
        tf32=cuda and hw.capability is not None and hw.capability >= (8, 0),
        channels_last=cuda,
        compile_ok=cuda and hw.capability is not None and hw.capability >= (7, 0),
        workers=num_workers,
        prefetch=cuda,
        monitor=cuda,
        autotune=cuda,
    )


def arch_supported(capability: tuple[int, int], arch_list: tuple[str, ...]) -> bool:
    """Whether this torch build can run on a GPU of `capability`: a cubin for the same major and an equal or
    lower minor, or PTX (`compute_XY`) at or below it that the driver can JIT-compile."""
    major, minor = capability
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        if not digits.isdigit():
            continue
        a_major, a_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def check_arch(hw: Hardware) -> None:
    if hw.device != "cuda" or hw.capability is None or not hw.arch_list:
        return
    if not arch_supported(hw.capability, hw.arch_list):
        cc = f"sm_{hw.capability[0]}{hw.capability[1]}"
        raise KitError(
            f"{hw.gpu_name} ({cc}) is not supported by this torch build (it has kernels for "
            f"{', '.join(hw.arch_list)}); every CUDA op would fail: choose the GPU T4 x2 accelerator instead"
        )


def detect(device: str = "auto") -> Hardware:
    import torch

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ram = _ram_gb()
    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise KitError("device='cuda' but no CUDA GPU is visible: turn on a GPU accelerator, or use device='auto'")
    if device == "cpu" or not cuda:
        return Hardware(device="cpu", cpu_count=cpus, ram_gb=ram)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())  # a worker's own GPU
    return Hardware(
        device="cuda",
        gpu_name=props.name,
        gpu_count=torch.cuda.device_count(),
        capability=(props.major, props.minor),
        gpu_memory_gb=props.total_memory / 2**30,
        cpu_count=cpus,
        ram_gb=ram,
        arch_list=tuple(torch.cuda.get_arch_list()),
    )


def precision_note(hw: Hardware, p: Setup, asked: str) -> str:
    """A warning for a precision asked for that the GPU runs slowly, else ""."""
    if asked == "bf16" and hw.device == "cuda" and hw.capability is not None and hw.capability < (8, 0):
        return (f"precision='bf16' on a {hw.gpu_name} (compute {hw.capability[0]}.{hw.capability[1]}) is emulated, with "
                "no bf16 tensor cores: fp16 is several times faster there")
    if asked in ("fp16", "bf16") and hw.device == "cpu":
        return (f"precision='{asked}' on the CPU runs much slower than fp32 (CPU autocast); it is there to test the "
                "GPU's precision path")
    return ""


def describe(hw: Hardware, p: Setup, compile_wanted: bool = False, precision_asked: str = "auto") -> str:
    if hw.device == "cuda":
        cc = f"{hw.capability[0]}.{hw.capability[1]}" if hw.capability else "?"
        gpu = f"{hw.gpu_count} x {hw.gpu_name} (compute {cc}, {hw.gpu_memory_gb:.1f} GB)"
    else:
        gpu = "none: training on the CPU"
    precision = Precision(p.precision, hw.device).describe() + (" (auto)" if precision_asked == "auto" else " (as asked)")
    return "\n".join(
        [
            f"GPU            {gpu}",
            f"CPU            {hw.cpu_count} cores, {hw.ram_gb:.1f} GB RAM",
            f"precision      {precision}",
            f"TF32           {'on' if p.tf32 else 'off'}",
            f"channels_last  {'on' if p.channels_last else 'off'}",
            f"torch.compile  {_compile_line(p, compile_wanted)}",
            f"loader workers {p.workers}",
        ]
    )


def _compile_line(p: Setup, wanted: bool) -> str:
    if not p.compile_ok:
        return "off (needs a CUDA GPU of sm_70 or newer)"
    return "on" if wanted else "off (compile=True to turn it on)"


def _ram_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 0.0


def indexed(device):
    """`device` with an index: a bare torch.device("cuda") is the current GPU, and compares unequal to the
    cuda:N its tensors report."""
    import torch

    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def available_ram_bytes() -> int:
    """Memory the kernel could still give this process without swapping (MemAvailable); 0 where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, ValueError, StopIteration):
        return 0
