"""GPU utilisation, memory and power sampled in the background, the share of each step spent waiting for
data, and a plain diagnosis when the GPU is not kept busy.

Samples come from NVML (`nvidia-ml-py`), else `torch.cuda.utilization()`, else nothing: on a CPU or where
neither works the monitor still reports the data wait and stays quiet about the GPU.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kit.runtime import faults

LOW_UTIL = 70.0  # % below which an epoch gets a diagnosis
DATA_BOUND = 0.2  # share of step time spent waiting for batches that makes the data path the suspect


@dataclass
class EpochStats:
    util: float | None  # mean GPU utilisation, %
    util_min: float | None
    mem_gb: float | None  # peak memory in use (NVML: whole device; else torch's allocator)
    mem_total_gb: float | None
    power_w: float | None
    data_wait: float  # share of training-step time spent waiting for the next batch
    diagnosis: str = ""

    def line(self) -> str:
        parts = []
        if self.util is not None:
            parts.append(f"gpu {self.util:.0f}% (min {self.util_min:.0f}%)")
        if self.mem_gb is not None:
            parts.append(f"mem {self.mem_gb:.1f}/{self.mem_total_gb:.1f} GB")
        if self.power_w is not None:
            parts.append(f"{self.power_w:.0f} W")
        parts.append(f"data wait {self.data_wait:.0%}")
        return " | ".join(parts)


def diagnose(util: float | None, data_wait: float, batch_size: int) -> str:
    """A plain reading of one epoch's numbers, with the fix."""
    if util is None or util >= LOW_UTIL:
        return ""
    if data_wait >= DATA_BOUND:
        return (
            f"data-bound: the GPU is {util:.0f}% busy and each step waits {data_wait:.0%} of its time for "
            "batches; raise num_workers, keep the decoded cache on local disk, or lower image_size"
        )
    return (
        f"compute-light: the GPU is {util:.0f}% busy though batches arrive in time; steps of {batch_size} "
        "samples are too small to fill it: raise batch_size (or use a bigger model or image_size)"
    )


def nvml_index(ordinal: int, visible: str | None) -> int:
    """NVML's index of CUDA device `ordinal`: NVML numbers every GPU of the machine, CUDA only those in
    CUDA_VISIBLE_DEVICES, in its order (integer entries; anything else leaves the ordinal)."""
    items = [v.strip() for v in (visible or "").split(",") if v.strip()]
    if ordinal < len(items) and items[ordinal].isdigit():
        return int(items[ordinal])
    return ordinal


def nvml_handle(nvml, ordinal: int):
    """The NVML handle of CUDA device `ordinal`: by its UUID where torch knows it, else by index."""
    import os

    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(ordinal), "uuid", "") or "")
    for name in filter(None, (uuid, f"GPU-{uuid}" if uuid and not uuid.startswith("GPU-") else "")):
        try:
            return nvml.nvmlDeviceGetHandleByUUID(name)
        except Exception:  # another spelling of the UUID, or an NVML without the call: try the next
            continue
    return nvml.nvmlDeviceGetHandleByIndex(nvml_index(ordinal, os.environ.get("CUDA_VISIBLE_DEVICES")))


class Source:
    """Reads (util %, memory used bytes, memory total bytes, power W) for one GPU; None where unknown."""

    def __init__(self, device_index: int):
        self.index, self.nvml, self.handle, self.error = device_index, None, None, ""
        try:
            faults.fail("fail.monitor")
            import pynvml

            pynvml.nvmlInit()
            self.handle = nvml_handle(pynvml, device_index)
            self.nvml = pynvml
        except Exception as e:  # no driver, no library, a container without NVML: degrade quietly
            self.nvml, self.error = None, f"{type(e).__name__}: {e}"

    def read(self) -> tuple[float | None, float | None, float | None, float | None]:
        if self.nvml is not None:
            try:
                util = self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu
                mem = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
                try:
                    power = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
                except Exception:
                    power = None
                return float(util), float(mem.used), float(mem.total), power
            except Exception:
                self.nvml = None
        import torch

        try:
            util = float(torch.cuda.utilization(self.index))
        except Exception:
            util = None
        try:
            free, total = torch.cuda.mem_get_info(self.index)
            return util, float(total - free), float(total), None
        except Exception:
            return util, None, None, None


@dataclass
class Monitor:
    """Call `start()` once, `epoch_begin()` / `epoch_end(...)` around each epoch, `stop()` at the end."""

    device: str = "cpu"  # "cuda" or "cpu"
    device_index: int = 0
    interval_s: float = 1.0
    samples: list[tuple[float, float | None, float | None, float | None]] = field(default_factory=list)
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _epoch_from: int = 0
    _total: float | None = None
    _source: Source | None = None

    def start(self) -> Monitor:
        if self.device == "cuda" and self._thread is None:
            source = self._source = Source(self.device_index)
            self._thread = threading.Thread(target=self._run, args=(source,), daemon=True, name="kit-gpu-monitor")
            self._thread.start()
        return self

    def _run(self, source: Source) -> None:
        while not self._stop.is_set():
            util, used, total, power = source.read()
            if total:
                self._total = total
            self.samples.append((time.time(), util, used, power))
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def epoch_begin(self) -> None:
        self._epoch_from = len(self.samples)
        if self.device == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats()

    def epoch_end(self, wait_s: float, step_s: float, batch_size: int) -> EpochStats:
        if self._source is not None and len(self.samples) == self._epoch_from:
            # an epoch shorter than the interval (a small dataset on a fast GPU) had no sample: one now, NVML's
            # utilisation over its last sample period, which the epoch's steps just filled
            util, used, total, power = self._source.read()
            self.samples.append((time.time(), util, used, power))
        window = self.samples[self._epoch_from :]
        utils = [u for _, u, _, _ in window if u is not None]
        mems = [m for _, _, m, _ in window if m is not None]
        powers = [p for _, _, _, p in window if p is not None]
        util = sum(utils) / len(utils) if utils else None
        mem_gb = max(mems) / 2**30 if mems else None
        total = self._total / 2**30 if self._total else None
        if self.device == "cuda" and mem_gb is None:
            import torch

            mem_gb = torch.cuda.max_memory_allocated() / 2**30
            total = torch.cuda.get_device_properties(self.device_index).total_memory / 2**30
        wait = wait_s / max(wait_s + step_s, 1e-9)
        stats = EpochStats(
            util=util,
            util_min=min(utils) if utils else None,
            mem_gb=mem_gb,
            mem_total_gb=total,
            power_w=sum(powers) / len(powers) if powers else None,
            data_wait=wait,
        )
        stats.diagnosis = diagnose(util, wait, batch_size)
        return stats

    def timeline(self) -> tuple[list[float], list[float]]:
        """(seconds since the first sample, utilisation %) for plotting."""
        points = [(t, u) for t, u, _, _ in self.samples if u is not None]
        if not points:
            return [], []
        t0 = points[0][0]
        return [t - t0 for t, _ in points], [u for _, u in points]
