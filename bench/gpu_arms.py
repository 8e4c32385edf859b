"""make gpu-report's training arms: efficientnet_b0 at 224 px, batch 128, each way of feeding and stepping it
side by side in one run, on the precision the notebook chooses for this GPU (bf16 on Ampere and newer, fp16
with a GradScaler before).

- the ceiling: a bare step (autocast forward, loss, backward, the fused AdamW step) on one batch already
  augmented, normalised and resident on the GPU; eager, then torch.compile'd (default mode, and
  "reduce-overhead": CUDA graphs), so the table says which wins where launches bound the step;
- kit's step (`train_step` with its guards, the augmentation on the GPU every step) on a resident uint8 batch,
  and the same with ab4f043's BatchNorm guard or ab4f043's transform put back: each fix's share;
- the notebook's path as it runs: `fit` (EMA, loss bookkeeping, checkpoints; a one-batch validation) fed by
  the training loader built as kit.pipelines.cnn builds it (uint8 cache, the workers the notebook chooses on this
  machine, pinned, the loader held
  from epoch to epoch), its epochs 32 steps long; and with the loader built anew each epoch, as ab4f043 did;
- make bench's arm as ab4f043 measured it: the loader rebuilt every 4 steps, fp32 images, 5 warm-up steps;
- DDP at world_size=1 around the ceiling's step: torch's defaults, and kit's wrap.

Per arm: samples/s, the step's time, and over a few profiled steps (torch.profiler) the kernel launches per
step, the host's time per step under the profiler, and the GPU's busy time per step (kernels and copies,
overlaps counted once); for the notebook's path also the epoch boundary: the wait for an epoch's first batch.
`scale=DRY` runs every arm on the CPU at toy sizes (make gpu-report --device cpu --dry-run): the plumbing, not
the figures.
"""
from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from kit.data import augment
from kit.data.augment import ImageTransform, crop_area
from kit.data.images import ImageCache
from kit.data.loaders import DeviceLoader, ImageRows, host_loader
from kit.runtime import hardware
from kit.runtime.precision import Precision
from kit.runtime.run_folder import FoldFiles
from kit.train import step as kit_step
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFit
from kit.train.step import make_optimizer, train_step

MEAN, STD, CLASSES = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), 120
# the CUDA runtime's and driver's launch calls as the profiler names them (some CUPTI versions add "_v7000")
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cuLaunchKernel", "cudaGraphLaunch")


@dataclass(frozen=True)
class Scale:
    model: str
    size: int  # pixels the model sees; the cache holds images.cache_side(size)
    batch: int
    rows: int  # distinct cached images; an epoch reads them `epoch_rows // rows` times
    epoch_rows: int
    steps: int  # timed steps of a resident arm, after `warmup`
    warmup: int
    epochs: int  # of the notebook's path: the first warms up, the last is profiled, the others are timed
    workers: int  # the loaders' on the CPU (dry runs); on a GPU the notebook's own choice (Workload.workers)
    profiled: int  # steps under the profiler


GPU = Scale("efficientnet_b0", 224, 128, 1024, 4096, 30, 8, 5, 4, 5)
DRY = Scale("test_efficientnet", 32, 8, 16, 32, 2, 1, 3, 1, 2)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def busy_ms(intervals: list[tuple[float, float]]) -> float:
    """The union of (start, end) intervals in microseconds, in ms: kernels on two streams overlap."""
    total, end = 0.0, -np.inf
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total / 1e3


def per_step(events, n: int, host_s: float) -> dict:
    """Launches, host ms and GPU-busy ms per step from a profiler's events over `n` steps."""
    from torch.autograd import DeviceType

    launches = sum(1 for e in events if e.name.startswith(LAUNCHES))
    gpu = busy_ms([(e.time_range.start, e.time_range.end) for e in events if e.device_type == DeviceType.CUDA])
    return {"launches_per_step": launches / n, "host_ms": host_s * 1e3 / n, "gpu_ms": gpu / n}


def profiled(step: Callable[[], None], n: int, device: torch.device) -> dict:
    """Launches, host ms and GPU-busy ms per step over `n` steps under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    sync(device)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        started = time.perf_counter()
        for _ in range(n):
            step()
        host = time.perf_counter() - started
        sync(device)
    return per_step(prof.events(), n, host)


def spread(rates: list[float]) -> float | None:
    """How far apart the windows' rates of one arm lie, in % of their mean: two arms whose rates differ by less
    than their spread are not told apart by one run (two lent H200s read the same arm 0.56 and 0.74 of the
    ceiling)."""
    return 100 * (max(rates) - min(rates)) / float(np.mean(rates)) if len(rates) > 1 else None


def timed(step: Callable[[], None], scale: Scale, device: torch.device, rows: int, windows: int = 3) -> dict:
    """samples/s and ms per step over `scale.steps` steps after `scale.warmup`, in `windows` timed windows (their
    spread), then the profiled steps."""
    for _ in range(scale.warmup):
        step()
    sync(device)
    edges, seconds = np.linspace(0, scale.steps, windows + 1).round().astype(int), []
    for a, b in zip(edges[:-1], edges[1:]):
        started = time.perf_counter()
        for _ in range(b - a):
            step()
        sync(device)
        seconds.append(time.perf_counter() - started)
    rates = [rows * (b - a) / s for a, b, s in zip(edges[:-1], edges[1:], seconds) if b > a]
    return {"samples_per_s": rows * scale.steps / sum(seconds), "step_ms": sum(seconds) * 1e3 / scale.steps,
            "spread": spread(rates), **profiled(step, scale.profiled, device)}


class Workload:
    """The model, data and precision every arm shares."""

    def __init__(self, device: torch.device, scale: Scale, folder: Path):
        from kit.data.images import cache_side

        self.device, self.scale = device, scale
        capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
        self.precision = Precision(hardware.choose_precision(device.type, capability), device.type)
        self.channels_last = device.type == "cuda"
        # as the notebook chooses them here (min(cores, 8) on a GPU: 4 on Kaggle's 4 vCPUs); the scale's at toy sizes
        self.workers = hardware.setup(hardware.detect(device.type)).workers if device.type == "cuda" else scale.workers
        side = cache_side(scale.size)
        self.cache = ImageCache(folder / "cache.u8", scale.rows, side)
        rng = np.random.default_rng(0)
        pixels = np.memmap(self.cache.path, dtype=np.uint8, mode="w+", shape=self.cache.shape)
        pixels[:] = rng.integers(0, 256, (1, side, side, 3), dtype=np.uint8)  # the content does not matter
        pixels[:, 0, 0, 0] = np.arange(scale.rows) % 256  # ... but the rows are not all alike
        pixels.flush()
        self.labels = rng.integers(0, CLASSES, scale.rows)
        resident = torch.from_numpy(np.asarray(pixels[: scale.batch])).to(device)
        self.resident = {"image": resident, "target": torch.from_numpy(self.labels[: scale.batch]).to(device)}
        self.augmented = {"image": self.transform(train=True)(resident), "target": self.resident["target"]}

    def model(self) -> nn.Module:
        import timm

        torch.manual_seed(0)
        model = timm.create_model(self.scale.model, num_classes=CLASSES).to(self.device)
        return model.to(memory_format=torch.channels_last) if self.channels_last else model

    def transform(self, train: bool, precision: Precision | None = None) -> ImageTransform:
        """As kit.pipelines.cnn builds it: the notebook's precision, channels_last on the GPU."""
        return ImageTransform(self.scale.size, MEAN, STD, train=train, scale=(crop_area(self.scale.size), 1.0),
                              hflip=0.5, precision=precision or self.precision, channels_last=self.channels_last)

    def loader(self, train: bool, repeat: bool, epoch_rows: int, precision: Precision | None = None,
               workers: int | None = None, seed: int = 0) -> DeviceLoader:
        """As kit.pipelines.cnn.batches builds it."""
        rows = np.resize(np.arange(self.scale.rows), epoch_rows)
        loader = host_loader(ImageRows(self.cache, rows, self.labels[rows]), self.scale.batch, shuffle=train,
                             workers=self.workers if workers is None else workers, pin=self.device.type == "cuda",
                             seed=seed, drop_last=train, repeat=repeat)
        transform = self.transform(train, precision)
        return DeviceLoader(loader, self.device, lambda b: {**b, "image": transform(b["image"])})


# -- ab4f043, put back for its arms ----------------------------------------------------------------------------
class OldRunningStats:
    """ab4f043's BatchNorm guard: a where and a copy_ per buffer, every step."""

    def __init__(self, model: nn.Module):
        self.buffers = [b for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
                        for b in (m.running_mean, m.running_var) if b is not None]
        self.saved = torch._foreach_mul(self.buffers, 1.0) if self.buffers else []

    def restore_unless_finite(self, loss: torch.Tensor) -> None:
        if not self.buffers:
            return
        with torch.no_grad():
            finite = torch.isfinite(loss) & torch.isfinite(torch.stack(torch._foreach_norm(self.buffers))).all()
            for b, saved in zip(self.buffers, self.saved):
                b.copy_(torch.where(finite, b, saved))


@contextlib.contextmanager
def ab4f043(guard: bool = False, transform: bool = False) -> Iterator[None]:
    """ab4f043's guard or transform (its pageable copies of the crops and constants, every batch) in force."""
    with contextlib.ExitStack() as stack:
        if guard:
            stack.enter_context(mock.patch.object(kit_step, "RunningStats", OldRunningStats))
        if transform:
            stack.enter_context(mock.patch.object(augment, "to_device", lambda params, device: params.to(device)))
            stack.enter_context(mock.patch.object(augment.OnDevice, "__call__",
                                                  lambda self, device: {k: v.to(device) for k, v in self.host.items()}))
        yield


# -- the arms -----------------------------------------------------------------------------------------------
def bare_step(model: nn.Module, batch: dict, precision: Precision) -> Callable[[], None]:
    """A competitor's step at its leanest: nothing but what training needs."""
    optimizer = make_optimizer(model, 1e-3, 0.05)
    scaler = torch.amp.GradScaler(precision.device_type, enabled=precision.name == "fp16")

    def step() -> None:
        with precision.autocast():
            loss = F.cross_entropy(model(batch["image"]), batch["target"])
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

    return step


def ceiling(w: Workload, compile_mode: str | None = None, dry: bool = False) -> dict:
    model = w.model()
    if compile_mode is not None:  # the dry run checks the plumbing through AOT autograd, without a compiler
        model = torch.compile(model, backend="aot_eager") if dry else torch.compile(model, mode=compile_mode)
    return timed(bare_step(model, w.augmented, w.precision), w.scale, w.device, w.scale.batch)


def kit_resident(w: Workload) -> dict:
    """kit's train_step, augmenting the resident uint8 batch on the device every step."""
    model, transform, task = w.model(), w.transform(train=True), Classification()
    optimizer, scaler = make_optimizer(model, 1e-3, 0.05), w.precision.grad_scaler()

    def step() -> None:
        batch = {"image": transform(w.resident["image"]), "target": w.resident["target"]}
        train_step(model, task, batch, optimizer, scaler, w.precision, 1.0)

    return timed(step, w.scale, w.device, w.scale.batch)


def ddp(w: Workload, kit_wrap: bool) -> dict:
    """The ceiling's step through DDP at world_size=1 (NCCL; gloo on the CPU): torch's defaults, or kit's wrap."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from kit.runtime.collective import TorchCollective
    from kit.runtime.workers import free_port

    cuda = w.device.type == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        model = w.model()
        if kit_wrap:
            model = TorchCollective(0, 1, w.device).wrap(model)
        else:
            model = DistributedDataParallel(model, device_ids=[torch.cuda.current_device()] if cuda else None)
        return timed(bare_step(model, w.augmented, w.precision), w.scale, w.device, w.scale.batch)
    finally:
        dist.destroy_process_group()


class Watched:
    """A training loader as the loop reads it, watched: each epoch's time from `iter()` to its last step done on
    the device, the wait for its first batch, and a profiled window of steps in the last epoch."""

    def __init__(self, loader: DeviceLoader, device: torch.device, scale: Scale):
        self.loader, self.device, self.scale = loader, device, scale
        self.epochs: list[dict] = []
        self.profile: dict = {}

    def __len__(self) -> int:
        return len(self.loader)

    @property
    def batch_size(self) -> int:
        return self.loader.batch_size

    def __iter__(self):
        profiling = len(self.epochs) + 1 == self.scale.epochs  # the last epoch: steps 2 to 2 + profiled
        started, rows, prof, first = time.perf_counter(), 0, None, 0.0
        for i, batch in enumerate(self.loader):
            if i == 0:
                first = time.perf_counter() - started
            if profiling and i == 2:
                prof = self._start()
            if prof is not None and i == 2 + self.scale.profiled:  # the steps before this batch are all issued
                self.profile, prof = self._stop(*prof, self.scale.profiled), None
            rows += len(batch["target"])
            yield batch
        if prof is not None:
            self.profile = self._stop(*prof, len(self.loader) - 2)
        sync(self.device)  # the loop waits for the device just after (its losses): the epoch's steps are all in
        self.epochs.append({"seconds": time.perf_counter() - started, "rows": rows, "first_wait": first})

    def _start(self):
        from torch.profiler import ProfilerActivity, profile

        sync(self.device)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
        prof = profile(activities=activities)
        prof.__enter__()
        return prof, time.perf_counter()

    def _stop(self, prof, t0: float, n: int) -> dict:
        host = time.perf_counter() - t0
        sync(self.device)
        prof.__exit__(None, None, None)
        return per_step(prof.events(), n, host)


def notebook_path(w: Workload, repeat: bool = True) -> dict:
    """`fit` as kit.run.folds calls it for the cnn template (EMA on, as its default), on batches built as the
    notebook builds them; `repeat=False`: the loader of ab4f043, whose workers drained at each epoch's end."""
    s = w.scale
    train = Watched(w.loader(train=True, repeat=repeat, epoch_rows=s.epoch_rows), w.device, s)
    val = w.loader(train=False, repeat=False, epoch_rows=s.batch, workers=0)
    cfg = FitConfig(epochs=s.epochs, lr=1e-3, weight_decay=0.05, warmup_epochs=1.0, patience=0, metric="accuracy",
                    ema=True)
    with tempfile.TemporaryDirectory(prefix="kit-arms-") as tmp:
        fit(FoldFit(w.model(), Classification(), train, val, cfg, w.precision, FoldFiles(Path(tmp) / "b.pt", Path(tmp) / "l.pt"),
            log=lambda message: None))
    timed_epochs = train.epochs[1:-1] or train.epochs[-1:]  # the first warms up, the last is profiled
    seconds = sum(e["seconds"] for e in timed_epochs)
    steps = sum(e["rows"] for e in timed_epochs) / s.batch
    return {"samples_per_s": sum(e["rows"] for e in timed_epochs) / seconds, "step_ms": seconds * 1e3 / steps,
            "spread": spread([e["rows"] / e["seconds"] for e in timed_epochs]),
            "gap_ms": 1e3 * float(np.median([e["first_wait"] for e in train.epochs[1:]])), **train.profile}


def bench_ab4f043(w: Workload, steps_per_epoch: int = 4) -> dict:
    """make bench's kit arm as it was: kit's step on a loader of 4 steps built anew each epoch, images in fp32."""
    model, task = w.model(), Classification()
    optimizer, scaler = make_optimizer(model, 1e-3, 0.05), w.precision.grad_scaler()
    fp32 = Precision("fp32", w.device.type)

    def forever():
        while True:
            yield from w.loader(train=True, repeat=False, epoch_rows=steps_per_epoch * w.scale.batch, precision=fp32)

    batches = forever()

    def step() -> None:
        train_step(model, task, next(batches), optimizer, scaler, w.precision, 1.0)

    return timed(step, w.scale, w.device, w.scale.batch)


def arms(w: Workload, dry: bool = False) -> list[tuple[str, str, Callable[[], dict]]]:
    """(name, note, measure) of each arm, in the order they run: the eager ones first, the compiled last."""
    return [
        ("ceiling, eager", "bare step on a resident augmented batch", lambda: ceiling(w)),
        ("kit step, resident batch", "train_step + augmentation on the GPU each step (ab4f043's 'ceiling')",
         lambda: kit_resident(w)),
        ("kit step, ab4f043's BatchNorm guard", "a where + copy_ per buffer", lambda: _with(kit_resident, w, guard=True)),
        ("kit step, ab4f043's transform", "pageable copies each batch", lambda: _with(kit_resident, w, transform=True)),
        ("kit notebook path, loader kept", f"fit(), {w.workers} workers, EMA, 32-step epochs", lambda: notebook_path(w)),
        ("kit notebook path, loader rebuilt each epoch", "ab4f043's epoch boundary", lambda: notebook_path(w, repeat=False)),
        ("make bench's arm at ab4f043", "loader rebuilt every 4 steps, fp32 images", lambda: bench_ab4f043(w)),
        ("DDP world_size=1, torch defaults", "ceiling's step", lambda: ddp(w, kit_wrap=False)),
        ("DDP world_size=1, kit's wrap", "ceiling's step", lambda: ddp(w, kit_wrap=True)),
        ("ceiling, torch.compile", "default mode", lambda: ceiling(w, "default", dry)),
        ("ceiling, torch.compile reduce-overhead", "CUDA graphs", lambda: ceiling(w, "reduce-overhead", dry)),
    ]


def _with(measure: Callable[[Workload], dict], w: Workload, **old) -> dict:
    with ab4f043(**old):
        return measure(w)
