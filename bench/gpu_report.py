"""`make gpu-report`: what only a CUDA GPU shows, in one command under 9 minutes, and one table of it.

On any CUDA GPU: the GPU tests (`pytest -m gpu`), then the CUDA sections of `make bench` (the image path, the
text section, and efficientnet_b0 at 224 px end to end against its model-bound ceiling: the same model's step
on batches already on the GPU), each section skipped once the time box is spent. Writes one JSON and one
markdown table (the GPU, the library versions, the date, each figure) to OUT_DIR. Run it whenever a GPU is
lent, and keep the latest table in docs/benchmarks.md. On a machine without a GPU it says so in one line.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

BUDGET_S = 8.5 * 60  # the whole report, tests included
LIBRARIES = ("torch", "torchvision", "timm", "transformers", "numpy", "xgboost", "lightgbm", "catboost",
             "segmentation-models-pytorch")


def figure(section: str, name: str, value: float, unit: str, note: str = "") -> dict:
    return {"section": section, "name": name, "value": float(value), "unit": unit, "note": note}


def report(gpu: str, versions: dict[str, str], tests: dict, figures: list[dict], errors: list[str], seconds: float,
           date: str | None = None) -> dict:
    """The report's JSON: what ran where, and each figure (`figure`)."""
    return {"gpu": gpu, "date": date or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "versions": versions, "tests": tests, "figures": figures,
            "errors": errors, "seconds": round(seconds, 1)}


def markdown(r: dict) -> str:
    """One table of the report, as docs/benchmarks.md keeps it."""
    versions = ", ".join(f"{k} {v}" for k, v in r["versions"].items())
    t = r["tests"]
    lines = [f"GPU report: {r['gpu']}, {r['date']} (python {r['python']}; {versions})", "",
             f"`pytest -m gpu`: {t.get('passed', 0)} passed, {t.get('failed', 0)} failed, {t.get('skipped', 0)} skipped "
             f"in {t.get('seconds', 0):.0f} s", "", "| section | figure | value | unit | note |", "|---|---|---|---|---|"]
    lines += [f"| {f['section']} | {f['name']} | {f['value']:.4g} | {f['unit']} | {f['note']} |" for f in r["figures"]]
    lines += [f"\nnot measured: {e}" for e in r["errors"]]
    return "\n".join(lines) + "\n"


def versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    found["cuda"] = torch.version.cuda or ""
    return found


def gpu_tests(timeout_s: float) -> dict:
    """`pytest -m gpu`: the counts from its summary line, and the time it took."""
    started = time.time()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests/gpu"],
                              cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    except subprocess.TimeoutExpired:
        summary = f"stopped after {timeout_s:.0f} s"
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}
    return {**counts, "seconds": round(time.time() - started, 1), "summary": summary}


def sections(count: int) -> list[tuple[str, Callable[[], list[dict]]]]:
    from text_bench import bench_text

    import bench

    device = torch.device("cuda")
    paths = bench.make_photos(ROOT / ".bench" / "photos", count)

    def image_path() -> list[dict]:
        im = bench.bench_images(paths, 224, device, workers=min(4, os.cpu_count() or 1))
        base = im["naive_ips"]
        return [figure("images", label, im[key], "images/s", f"{im[key] / base:.1f}x naive") for label, key in (
            ("naive PIL + torchvision, 0 workers", "naive_ips"), ("kit first epoch (decode + cache)", "kit_first_epoch_ips"),
            ("kit cached epochs", "kit_cached_ips"), ("kit cached + augment on cuda", "kit_cached_augmented_ips"))]

    def text() -> list[dict]:
        tx = bench_text(device)
        return [figure("text", f"{mode}, {tx['precision']}", tx[mode]["samples_per_s"], "samples/s",
                       f"padding {tx[mode]['padding_share']:.0%}") for mode in ("bucketed", "plain")]

    def training() -> list[dict]:
        tr = bench.bench_training(paths)
        ceiling = tr["ceiling_sps"]
        return [figure("efficientnet_b0 @224", label, tr[key], "samples/s", f"{tr[key] / ceiling:.2f} of ceiling")
                for label, key in (("model-bound ceiling (synthetic on GPU)", "ceiling_sps"),
                                   ("kit (cache, 4 workers, AMP)", "kit_sps"), ("naive (batch 32, fp32, 0 workers)", "naive_sps"),
                                   ("ceiling through DDP at world_size=1", "ddp_world1_sps"))]

    return [("images", image_path), ("text", text), ("training", training)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.environ.get("REPORT_OUT", "output"))
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--budget-s", type=float, default=BUDGET_S)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu-report: no CUDA GPU on this machine (torch.cuda.is_available() is False): nothing measured; run it "
              "where a GPU is lent")
        return 0
    started = time.time()
    tests = gpu_tests(timeout_s=args.budget_s * 0.6)
    figures, errors = [], []
    for name, measure in sections(args.images):
        if time.time() - started > args.budget_s:
            errors.append(f"{name}: the {args.budget_s:.0f} s time box was spent")
            continue
        try:
            figures += measure()
        except Exception as e:  # noqa: BLE001 - a section that fails is reported, and the others still run
            errors.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
    result = report(torch.cuda.get_device_name(), versions(), tests, figures, errors, time.time() - started)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-report.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "gpu-report.md").write_text(markdown(result))
    print(markdown(result))
    print(f"wrote {out / 'gpu-report.json'} and {out / 'gpu-report.md'}")
    return 0 if not tests.get("failed") else 1


if __name__ == "__main__":
    raise SystemExit(main())
