"""`make gpu-report`: what only a CUDA GPU shows, in one command under 8 minutes, and one table of it.

On any CUDA GPU, in this order, each section skipped once its share of the time box is spent:
1. the GPU tests (`pytest -m gpu`, four at a time, in their own time box; each test's time is kept), first,
   so that whatever an arm does later they are in;
2. the training arms (bench/gpu_arms.py): efficientnet_b0 at 224 px from the model-bound ceiling to the
   notebook's own path, each fix's arm, DDP at world_size=1, with samples/s, share of the ceiling, launches,
   host and GPU-busy ms per step, and the epoch boundary's wait;
3. the compiled ceilings (torch.compile, and CUDA graphs by "reduce-overhead"), which take a minute each;
4. the boosters on CUDA where their libraries import, and make bench's image path and text section.
After each section the whole report is written again to OUT_DIR (gpu-report.json and gpu-report.md, the GPU,
library versions and date beside the figures), so a run cut short still leaves what finished. Keep the latest
table in docs/benchmarks.md. Without a GPU it says so in one line; `--device cpu --dry-run` runs every section
on the CPU at toy sizes, so that no Python error waits for a GPU to show itself.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(ROOT))

BUDGET_S = 7.5 * 60  # the whole report, tests included: a lent GPU's 8 minutes, less the start
TESTS_S = 190.0  # pytest -m gpu's own time box (its target: under 4 minutes), four tests at a time
COMPILE_S = 60.0  # a compiled arm starts only with this much left: compiling efficientnet_b0's step takes about that
ARM_S = 20.0  # an eager arm starts only with this much left
LIBRARIES = ("torch", "torchvision", "timm", "transformers", "numpy", "xgboost", "lightgbm", "catboost",
             "segmentation-models-pytorch")


def figure(section: str, name: str, value: float, unit: str, note: str = "") -> dict:
    return {"section": section, "name": name, "value": float(value), "unit": unit, "note": note}


ARM_FIGURES = ("samples_per_s", "spread", "share", "step_ms", "launches_per_step", "host_ms", "gpu_ms", "gap_ms")


def arm(name: str, note: str, measured: dict, ceiling: float | None) -> dict:
    """One arm's row: its figures (None where it has none), its samples/s as a share of the eager ceiling's."""
    row = {"name": name, "note": note, **{k: (float(measured[k]) if measured.get(k) is not None else None)
                                          for k in ARM_FIGURES if k != "share"}}
    row["share"] = row["samples_per_s"] / ceiling if ceiling and row["samples_per_s"] else None
    return {k: row[k] for k in ("name", *ARM_FIGURES, "note")}


def report(gpu: str, versions: dict[str, str], tests: dict, figures: list[dict], errors: list[str], seconds: float,
           date: str | None = None, arms: list[dict] | None = None, dry_run: bool = False) -> dict:
    """The report's JSON: what ran where, each arm (`arm`) and each other figure (`figure`)."""
    return {"gpu": gpu, "date": date or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "versions": versions, "dry_run": dry_run, "tests": tests,
            "arms": arms or [], "figures": figures, "errors": errors, "seconds": round(seconds, 1)}


def _cell(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def markdown(r: dict) -> str:
    """One table of the report, as docs/benchmarks.md keeps it."""
    versions = ", ".join(f"{k} {v}" for k, v in r["versions"].items())
    dry = " (dry run: toy sizes on the CPU, no figure means anything)" if r.get("dry_run") else ""
    t = r["tests"]
    lines = [f"GPU report: {r['gpu']}, {r['date']} (python {r['python']}; {versions}){dry}", ""]
    if r.get("arms"):
        lines += ["| arm | samples/s | spread % | of ceiling | ms/step | launches/step | host ms/step | GPU-busy ms/step | "
                  "epoch gap ms | note |", "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {a['name']} | {_cell(a['samples_per_s'])} | {_cell(a.get('spread'))} | {_cell(a['share'], 2)} | "
                  f"{_cell(a['step_ms'], 1)} | "
                  f"{_cell(a['launches_per_step'])} | {_cell(a['host_ms'], 1)} | {_cell(a['gpu_ms'], 1)} | "
                  f"{_cell(a['gap_ms'], 1)} | {a['note']} |" for a in r["arms"]]
        lines.append("")
    if t:
        errors = f", {t['errors']} errors (not collected: see gpu-tests.txt)" if t.get("errors") else ""
        lines.append(f"`pytest -m gpu`: {t.get('passed', 0)} passed, {t.get('failed', 0)} failed, {t.get('skipped', 0)} "
                     f"skipped{errors} in {t.get('seconds', 0):.0f} s; slowest: " +
                     ", ".join(f"{s['test']} {s['seconds']:.0f} s" for s in t.get("slowest", [])[:5]))
        lines.append("")
    if r["figures"]:
        lines += ["| section | figure | value | unit | note |", "|---|---|---|---|---|"]
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


def slowest(output: str) -> list[dict]:
    """pytest's --durations lines of test calls, slowest first."""
    found = re.findall(r"^([\d.]+)s call\s+(\S+)$", output, flags=re.M)
    return [{"test": name.split("/")[-1], "seconds": float(s)} for s, name in sorted(found, key=lambda f: -float(f[0]))]


def counts(summary: str) -> dict[str, int]:
    """pytest's summary line as counts; a module that cannot be collected is an error ("3 errors in 8.01s")."""
    found = re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)
    return {("errors" if k.startswith("error") else k): int(n) for n, k in found}


def broken(tests: dict, on_gpu: bool = True) -> bool:
    """Whether pytest -m gpu failed: a failed test, one that was never run (a collection error), a suite cut off by
    its time box, or on a GPU none that passed (nothing collected, or everything skipped; a dry run on the CPU skips
    them all)."""
    if not tests:  # left out (--no-tests)
        return False
    return bool(tests.get("failed") or tests.get("errors") or (on_gpu and not tests.get("passed"))
                or str(tests.get("summary", "")).startswith("stopped after"))


def gpu_tests(timeout_s: float, log: Path, workers: int = 4) -> dict:
    """`pytest -m gpu`, `workers` at a time: the counts from its summary line, each test's time, and the time it
    took; its whole output goes to `log`. At the time-out its whole process group goes (the xdist workers and
    their notebooks' kernels, which would hold the GPU through the arms), and the tests that finished are kept."""
    started = time.time()
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-v", "-p", "no:cacheprovider", "--durations=0",
               "--durations-min=1", "-n", str(workers), "tests/gpu"]
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        output, _ = run.communicate(timeout=timeout_s)
        lines = output.strip().splitlines()
        summary = lines[-1] if lines else ""
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        output, _ = run.communicate()
        finished = re.findall(r" (PASSED|FAILED|SKIPPED|ERROR) ", output)  # -v's line per finished test
        summary = ", ".join([f"stopped after {timeout_s:.0f} s"] +
                            [f"{finished.count(k)} {k.lower()}" for k in ("PASSED", "FAILED", "SKIPPED") if k in finished])
    log.write_text(output)
    return {**counts(summary), "seconds": round(time.time() - started, 1), "summary": summary, "slowest": slowest(output)}


class Report:
    """The report so far, written whole to `out` after every section."""

    def __init__(self, out: Path, gpu: str, dry_run: bool):
        self.out, self.gpu, self.dry_run, self.started = out, gpu, dry_run, time.time()
        self.tests: dict = {}
        self.arms: list[dict] = []
        self.figures: list[dict] = []
        self.errors: list[str] = []
        out.mkdir(parents=True, exist_ok=True)

    def left(self, budget_s: float) -> float:
        return budget_s - (time.time() - self.started)

    def ceiling(self) -> float | None:
        return next((a["samples_per_s"] for a in self.arms if a["name"] == "ceiling, eager"), None)

    def run(self, name: str, measure: Callable[[], None]) -> None:
        """`measure()` (which adds its rows), or its error as one line; then the whole report written again."""
        started = time.time()
        try:
            measure()
            print(f"gpu-report: {name} done in {time.time() - started:.0f} s", flush=True)
        except Exception as e:  # noqa: BLE001 - a section that fails is reported, and the others still run
            self.errors.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            print(f"gpu-report: {self.errors[-1]}", flush=True)
        finally:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        self.save()

    def skip(self, name: str, why: str) -> None:
        self.errors.append(f"{name}: {why}")
        print(f"gpu-report: skipped {name}: {why}", flush=True)
        self.save()

    def data(self) -> dict:
        return report(self.gpu, versions(), self.tests, self.figures, self.errors, time.time() - self.started,
                      arms=self.arms, dry_run=self.dry_run)

    def save(self) -> None:
        r = self.data()
        for name, text in (("gpu-report.json", json.dumps(r, indent=2) + "\n"), ("gpu-report.md", markdown(r))):
            tmp = self.out / f".{name}.tmp"
            tmp.write_text(text)
            tmp.replace(self.out / name)


def measure_arms(rep: Report, arms: list, budget_s: float, least_s: float) -> None:
    for name, note, measure in arms:
        if rep.left(budget_s) < least_s:
            rep.skip(name, f"the {budget_s:.0f} s time box was spent")
            continue
        rep.run(name, lambda name=name, note=note, measure=measure: rep.arms.append(arm(name, note, measure(), rep.ceiling())))


def boosters(rep: Report, device: torch.device, dry: bool) -> None:
    import booster_bench

    rows, rounds = (2000, 5) if dry else (500_000, 200)
    for name in ("xgboost", "catboost"):
        try:
            __import__(name)
        except ImportError:
            rep.skip(f"boosters: {name}", "not installed here")
            continue
        where = "cuda:0" if device.type == "cuda" else "cpu"

        def measure(name=name, where=where) -> None:
            cpu, gpu = booster_bench.rate(name, "cpu", rows, rounds), booster_bench.rate(name, where, rows, rounds)
            rep.figures.append(figure("boosters", f"{name} on {where}", gpu, "rounds/s", f"{gpu / cpu:.1f}x the CPU"))

        rep.run(f"boosters: {name}", measure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.environ.get("REPORT_OUT", "output"))
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--budget-s", type=float, default=BUDGET_S)
    parser.add_argument("--tests-s", type=float, default=TESTS_S)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--dry-run", action="store_true", help="toy sizes: every section's plumbing, on --device")
    parser.add_argument("--no-tests", action="store_true", help="leave out pytest -m gpu")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu-report: no CUDA GPU on this machine (torch.cuda.is_available() is False): nothing measured; run it "
              "where a GPU is lent")
        return 0
    import gpu_arms

    device = torch.device(args.device)
    scale = gpu_arms.DRY if args.dry_run else gpu_arms.GPU
    gpu = torch.cuda.get_device_name() if device.type == "cuda" else f"no GPU ({platform.processor() or 'CPU'})"
    rep = Report(Path(args.out_dir), gpu, args.dry_run)
    print(f"gpu-report: {gpu}, torch {torch.__version__}, {os.cpu_count()} CPUs, time box {args.budget_s:.0f} s",
          flush=True)
    torch.backends.cudnn.benchmark = True  # as the notebook sets it (kit.runtime.session.configure_torch)
    if not args.no_tests:  # first: bounded by their own box, whatever an arm might do later
        box = min(args.tests_s, rep.left(args.budget_s) - 10)
        rep.run("pytest -m gpu", lambda: rep.tests.update(gpu_tests(box, rep.out / "gpu-tests.txt")))
    with tempfile.TemporaryDirectory(prefix="kit-report-") as tmp:
        made: list = []
        rep.run("the arms' data and model", lambda: made.append(gpu_arms.Workload(device, scale, Path(tmp))))
        every = gpu_arms.arms(made[0], dry=args.dry_run) if made else []
        measure_arms(rep, every[:-2], args.budget_s, ARM_S)
        measure_arms(rep, every[-2:], args.budget_s, COMPILE_S if not args.dry_run else ARM_S)  # compiled
    boosters(rep, device, args.dry_run)
    rest = sections(device, args.images if not args.dry_run else 16, scale.size, args.dry_run)
    for name, measure in rest:
        if rep.left(args.budget_s) < ARM_S:
            rep.skip(name, f"the {args.budget_s:.0f} s time box was spent")
            continue
        rep.run(name, lambda measure=measure: rep.figures.extend(measure()))
    print(markdown(rep.data()))
    print(f"wrote {rep.out / 'gpu-report.json'} and {rep.out / 'gpu-report.md'}")
    return 1 if broken(rep.tests, on_gpu=device.type == "cuda") else 0


def sections(device: torch.device, count: int, size: int, dry: bool) -> list[tuple[str, Callable[[], list[dict]]]]:
    """make bench's image path and text section, on `device`."""
    from text_bench import bench_text

    import bench

    def image_path() -> list[dict]:
        paths = bench.make_photos(ROOT / ".bench" / ("photos-dry" if dry else "photos"), count)
        im = bench.bench_images(paths, size, device, workers=min(4, os.cpu_count() or 1) if device.type == "cuda" else 0)
        base = im["naive_ips"]
        return [figure("images", label, im[key], "images/s", f"{im[key] / base:.1f}x naive") for label, key in (
            ("naive PIL + torchvision, 0 workers", "naive_ips"), ("kit first epoch (decode + cache)", "kit_first_epoch_ips"),
            ("kit cached epochs", "kit_cached_ips"), (f"kit cached + augment on {device.type}", "kit_cached_augmented_ips"))]

    def text() -> list[dict]:
        tx = bench_text(device, count=64 if dry else None)
        return [figure("text", f"{mode}, {tx['precision']}", tx[mode]["samples_per_s"], "samples/s",
                       f"padding {tx[mode]['padding_share']:.0%}") for mode in ("bucketed", "plain")]

    return [("images", image_path), ("text", text)]


if __name__ == "__main__":
    raise SystemExit(main())
