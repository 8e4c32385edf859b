"""`make bench`: kit's data path against the loader competitors write, measured side by side in one run.

Images (any machine), on the same photo-like JPEGs of realistic sizes, as images/s delivered to the device
ready for it (the naive loader's batches are finished on the CPU; kit's are uint8 rows the device augments):
  (a) naive   PIL open + convert, torchvision RandomResizedCrop / ToTensor / Normalize, batch 32, num_workers=0
  (b) kit     first epoch: decode once into the uint8 cache (all cores) and deliver the batches
  (c) kit     cached epochs: rows of the cache, gathered per batch (pinned on CUDA)
  (d) kit     cached epochs including the augmentation and normalisation, on this machine's device (on a
              CPU-only machine that work lands on the CPU too, which a GPU run never asks of it)
On CUDA, end-to-end training samples/s of efficientnet_b0 at 224 in the precision the notebook chooses
(bench/gpu_arms.py): the notebook's path as it runs (fit, the loader kept across 32-step epochs, 4 workers,
channels_last) against the model-bound ceiling (a bare step on a batch already on the GPU), make bench's arm
as ab4f043 measured it, DDP at world_size=1, and the naive configuration (batch 32, fp32, num_workers=0).

Sequences (any machine), ventilator-shaped (80 steps, 5 features, 2 categorical): steps/s of batches
gathered in place from resident tensors (on the GPU where there is one) against a per-sequence DataLoader
(one __getitem__ per sequence, default collate), for the data path alone and with an LSTM training step.

Text (any machine; bench/text_bench.py), essay-like texts whose lengths spread with their score, tokenized
once: training samples/s (forward, backward, AdamW step; fp16 autocast with a GradScaler on CUDA, fp32 on
the CPU) of the same locally built BERT-shaped encoder with a mean-pooled regression head, fed kit's
length-bucketed batches padded to their own longest text against the plain way, every batch padded to
max_length (the longest text rounded up to 64), with the share of token slots that hold padding in each.
On CUDA (BERT-base wide, batch 128) the clock starts after a warm-up epoch, whose rate is shown apart.

Audio (any machine; bench/audio_bench.py), 5 s wav clips at 32 kHz, 2 s random windows as 128-mel log spectrograms:
clips/s delivered to the device by a Dataset that reads each wav and makes its mel with numpy/scipy on the
DataLoader's workers (librosa's arithmetic; librosa is not installed) against kit's decode-once wave cache whose
int16 windows become log-mels on the device (its first epoch, decoding included, and its cached epochs).

Prints a table and writes the figures as JSON to BENCH_OUT (default output/bench.json).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gpu_arms  # noqa: E402  (bench/ is on the path: the script's own folder)
from audio_bench import bench_audio, print_audio  # noqa: E402
from text_bench import bench_text, print_text  # noqa: E402

from kit.data import images  # noqa: E402
from kit.data.augment import ImageTransform  # noqa: E402
from kit.data.loaders import DeviceLoader, ImageRows, host_loader  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SIZES = [(500, 375), (500, 333), (375, 500), (640, 480), (500, 400), (400, 300), (800, 600), (333, 500)]


def photo(rng: np.random.Generator, w: int, h: int) -> Image.Image:
    """Smooth shapes and colour gradients with sensor-like noise: compresses (and decodes) like a photo."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for _ in range(6):
        cx, cy, r = rng.uniform(0, w), rng.uniform(0, h), rng.uniform(0.1, 0.5) * max(w, h)
        blob = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
        img += blob[..., None] * rng.uniform(40, 160, 3)
    img += (xx / w)[..., None] * rng.uniform(-40, 40, 3) + rng.normal(0, 6, (h, w, 3))
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def make_photos(folder: Path, n: int, seed: int = 0) -> list[Path]:
    marker = folder / f".complete-{n}-{seed}"
    paths = [folder / f"{i:05d}.jpg" for i in range(n)]
    if marker.exists():
        return paths
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for i, path in enumerate(paths):
        photo(rng, *SIZES[i % len(SIZES)]).save(path, quality=90)
    marker.touch()
    return paths


class NaiveDataset(torch.utils.data.Dataset):
    """What most Kaggle notebooks do."""

    def __init__(self, paths, size):
        from torchvision import transforms

        self.paths = paths
        self.tf = transforms.Compose(
            [transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
             transforms.Normalize(MEAN, STD)]
        )

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return self.tf(Image.open(self.paths[i]).convert("RGB")), 0


def timed_epoch(batches) -> tuple[float, int]:
    started, n = time.perf_counter(), 0
    for batch in batches:
        x = batch["image"] if isinstance(batch, dict) else batch[0]
        n += x.shape[0]
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - started, n


def bench_images(paths: list[Path], size: int, device: torch.device, workers: int) -> dict:
    naive = torch.utils.data.DataLoader(NaiveDataset(paths, size), batch_size=32, shuffle=True, num_workers=0)
    seconds, n = timed_epoch(naive)
    naive_ips = n / seconds

    cache_dir = Path(tempfile.mkdtemp(prefix="kit-bench-cache-"))
    try:
        side = images.cache_side(size)
        started = time.perf_counter()
        cache = images.build_cache(paths, side, cache_dir, workers=os.cpu_count() or 1, desc="decode", log=lambda m: None)
        rows = np.arange(len(paths))

        def kit_epoch(seed, augment):
            loader = host_loader(ImageRows(cache, rows, np.zeros(len(paths), np.int64)), 64, shuffle=True,
                                 workers=workers, pin=device.type == "cuda", seed=seed, drop_last=False)
            transform = ImageTransform(size, MEAN, STD, train=True, seed=seed)
            return DeviceLoader(loader, device, (lambda b: {**b, "image": transform(b["image"])}) if augment else None)

        seconds, n = timed_epoch(kit_epoch(0, augment=False))
        first_ips = n / (time.perf_counter() - started)
        cached = max(len(paths) / timed_epoch(kit_epoch(seed, augment=False))[0] for seed in (1, 2, 3))
        augmented = max(len(paths) / timed_epoch(kit_epoch(seed, augment=True))[0] for seed in (4, 5))
        return {"naive_ips": naive_ips, "kit_first_epoch_ips": first_ips, "kit_cached_ips": cached,
                "kit_cached_augmented_ips": augmented, "augment_device": device.type, "count": len(paths),
                "image_size": size, "cache_mb": cache.nbytes / 2**20}
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def bench_training(paths: list[Path], device: torch.device, scale: gpu_arms.Scale | None = None, steps: int = 30) -> dict:
    """CUDA only: end-to-end training samples/s of efficientnet_b0 at 224 (bench/gpu_arms.py, where make gpu-report
    measures more arms): the model-bound ceiling, the notebook's path as it runs (fit, its loader kept across
    32-step epochs, images in the precision it chooses), make bench's arm as ab4f043 measured it (a loader of 4
    steps rebuilt every epoch, fp32 images), DDP at world_size=1 through kit's wrap, and the naive set-up.
    `scale`: gpu_arms.GPU unless given (gpu_arms.DRY tries it on the CPU)."""
    import timm

    from kit.runtime.precision import Precision
    from kit.train.objectives import Classification
    from kit.train.step import make_optimizer, train_step

    scale = scale or gpu_arms.GPU
    torch.backends.cudnn.benchmark = True
    with tempfile.TemporaryDirectory(prefix="kit-bench-") as tmp:
        w = gpu_arms.Workload(device, scale, Path(tmp))
        gpu = torch.cuda.get_device_name() if device.type == "cuda" else "none"
        out = {"gpu": gpu, "precision": w.precision.name, "batch": w.scale.batch,
               "ceiling_sps": gpu_arms.ceiling(w)["samples_per_s"],
               "kit_sps": gpu_arms.notebook_path(w)["samples_per_s"],
               "kit_ab4f043_sps": gpu_arms.bench_ab4f043(w)["samples_per_s"],
               "ddp_world1_sps": gpu_arms.ddp(w, kit_wrap=True)["samples_per_s"]}
    model = timm.create_model(scale.model, num_classes=gpu_arms.CLASSES).to(device)  # contiguous, as written
    fp32, task = Precision("fp32", device.type), Classification()
    optimizer, scaler = make_optimizer(model, 1e-3, 0.05), fp32.grad_scaler()
    loader = torch.utils.data.DataLoader(NaiveDataset(paths, scale.size), batch_size=32, shuffle=True, num_workers=0)

    def forever():
        while True:
            for x, y in loader:
                yield {"image": x.to(device), "target": y.to(device)}

    batches = forever()
    for _ in range(3):  # warm-up: cuDNN's search for the new batch size
        train_step(model, task, next(batches), optimizer, scaler, fp32, 1.0)
    gpu_arms.sync(device)
    started = time.perf_counter()
    for _ in range(steps):
        train_step(model, task, next(batches), optimizer, scaler, fp32, 1.0)
    gpu_arms.sync(device)
    out["naive_sps"] = 32 * steps / (time.perf_counter() - started)
    return out


class PerSequence(torch.utils.data.Dataset):
    """The usual way: one sequence per __getitem__, collated by the DataLoader."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays

    def __len__(self):
        return len(self.arrays["x"])

    def __getitem__(self, i):
        return {k: torch.from_numpy(v[i]) for k, v in self.arrays.items()}


def bench_sequences(device: torch.device, count: int = 4096, length: int = 80, batch: int = 256) -> dict:
    from kit.data.sequences import SequenceBatches
    from kit.models.sequence import create_model
    from kit.runtime.precision import Precision
    from kit.train.objectives import SequenceObjective
    from kit.train.step import make_optimizer, train_step

    rng = np.random.default_rng(0)
    arrays = {"x": rng.normal(size=(count, length, 5)).astype(np.float32),
              "cat": rng.integers(1, 4, (count, length, 2)).astype(np.int64),
              "mask": np.ones((count, length), bool), "weight": np.ones((count, length), np.float32),
              "target": rng.normal(size=(count, length)).astype(np.float32)}
    resident = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
    rows = np.arange(count)

    def in_place():
        return SequenceBatches(resident, rows, batch, shuffle=True, device=device)

    def per_sequence():
        loader = torch.utils.data.DataLoader(PerSequence(arrays), batch_size=batch, shuffle=True, num_workers=0,
                                             pin_memory=device.type == "cuda")
        return ({k: v.to(device, non_blocking=True) for k, v in b.items()} for b in loader)

    def data_steps(make, rounds: int = 5, least_s: float = 0.25) -> float:
        """The median of `rounds` timings, each of whole epochs lasting at least `least_s`, after a warm-up
        epoch: an epoch of the in-place path takes milliseconds, so one or two of them timed once measure
        the allocator and the scheduler, not the data path."""
        sum(1 for _batch in make())
        rates = []
        for _ in range(rounds):
            started, steps = time.perf_counter(), 0
            while time.perf_counter() - started < least_s:
                steps += sum(1 for _batch in make())
            if device.type == "cuda":
                torch.cuda.synchronize()
            rates.append(steps / (time.perf_counter() - started))
        return float(np.median(rates))

    precision = Precision("fp32", device.type) if device.type == "cpu" else Precision(
        "fp16" if torch.cuda.get_device_capability() < (8, 0) else "bf16", "cuda")

    def train_steps(make, limit: int = 12) -> float:
        torch.manual_seed(0)
        model = create_model("lstm", features=5, cardinalities=[3, 3], outputs=1, per_step=True, d_model=64,
                             hidden_size=64, num_layers=2).to(device)
        task, opt, scaler = SequenceObjective(False, True, "mae"), make_optimizer(model, 1e-3, 0.0), precision.grad_scaler()

        def cycle():
            while True:
                yield from make()

        batches = cycle()
        train_step(model, task, next(batches), opt, scaler, precision, 1.0)  # warm-up
        started = time.perf_counter()
        for _ in range(limit):
            train_step(model, task, next(batches), opt, scaler, precision, 1.0)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return limit / (time.perf_counter() - started)

    return {"device": device.type, "sequences": count, "batch": batch,
            "resident_data_steps_per_s": data_steps(in_place), "dataloader_data_steps_per_s": data_steps(per_sequence),
            "resident_train_steps_per_s": train_steps(in_place),
            "dataloader_train_steps_per_s": train_steps(per_sequence)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=int(os.environ.get("BENCH_IMAGES", 512)))
    parser.add_argument("--sequences", type=int, default=4096)
    parser.add_argument("--texts", type=int, default=None, help="essays in the text section (default 384 on a CPU, 2048 on CUDA)")
    parser.add_argument("--clips", type=int, default=None, help="wav clips in the audio section (default 256 on a CPU, "
                        "2048 on CUDA)")
    parser.add_argument("--out", default=os.environ.get("BENCH_OUT", "output/bench.json"))
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    paths = make_photos(ROOT / ".bench" / "photos", args.images)
    print(f"{len(paths)} JPEGs ({sum(p.stat().st_size for p in paths) / len(paths) / 1024:.0f} KB each), "
          f"{os.cpu_count()} CPUs, device {device}", flush=True)
    result = {"images": bench_images(paths, 224, device, workers=min(4, os.cpu_count() or 1) if device.type == "cuda" else 0)}
    im = result["images"]
    print(f"\n{'images/s delivered to the device':<38}{'':>10}{'vs naive':>10}")
    rows = (("(a) naive PIL + torchvision, 0 workers", "naive_ips"),
            ("(b) kit first epoch (decode + cache)", "kit_first_epoch_ips"),
            ("(c) kit cached epochs", "kit_cached_ips"),
            (f"(d) kit cached + augment on {device.type}", "kit_cached_augmented_ips"))
    for label, key in rows:
        print(f"{label:<38}{im[key]:>10.0f}{im[key] / im['naive_ips']:>9.1f}x")
    sq = result["sequences"] = bench_sequences(device, count=args.sequences)
    print(f"\nsequences, batches of {sq['batch']} x 80 steps on {sq['device']}   in place  DataLoader  ratio")
    for what in ("data", "train"):
        a, b = sq[f"resident_{what}_steps_per_s"], sq[f"dataloader_{what}_steps_per_s"]
        label = "steps/s, data path only" if what == "data" else "steps/s, with an LSTM training step"
        print(f"{label:<38}{a:>10.1f}{b:>11.1f}{a / b:>7.1f}x")
    result["text"] = bench_text(device, count=args.texts)
    print_text(result["text"])
    cuda = device.type == "cuda"
    result["audio"] = bench_audio(device, count=args.clips or (2048 if cuda else 256),
                                  workers=min(4, os.cpu_count() or 1) if cuda else 0, root=ROOT / ".bench")
    print_audio(result["audio"])
    if device.type == "cuda":
        tr = result["training"] = bench_training(paths, device)
        print(f"\ntraining samples/s, efficientnet_b0 @224, batch {tr['batch']}, {tr['gpu']} ({tr['precision']})")
        print(f"{'model-bound ceiling (resident batch)':<42}{tr['ceiling_sps']:>10.0f}")
        for label, key in (("kit notebook path (fit, loader kept)", "kit_sps"),
                           ("kit as make bench had it at ab4f043", "kit_ab4f043_sps"),
                           ("ceiling through kit's DDP, world_size=1", "ddp_world1_sps")):
            print(f"{label:<42}{tr[key]:>10.0f}{tr[key] / tr['ceiling_sps']:>9.2f} of ceiling")
        print(f"{'naive (batch 32, fp32, 0 workers)':<42}{tr['naive_sps']:>10.0f}  kit is {tr['kit_sps'] / tr['naive_sps']:.1f}x")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
