"""make gpu-report: on a machine without a GPU, one line; its report's JSON and table, from given figures."""
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest
import torch
from torch.autograd import DeviceType

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import gpu_arms  # noqa: E402
import gpu_report  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="the skip is what a CPU-only machine does")
def test_without_a_gpu_it_says_so_in_one_line_and_succeeds(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_report.py"), "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.strip().splitlines() == [
        "gpu-report: no CUDA GPU on this machine (torch.cuda.is_available() is False): nothing measured; run it where a "
        "GPU is lent"]
    assert list(tmp_path.iterdir()) == []


def test_the_report_holds_the_gpu_versions_date_tests_each_arm_and_each_figure():
    measured = {"samples_per_s": 2000.0, "step_ms": 64.0, "launches_per_step": 812.0, "host_ms": 30.5, "gpu_ms": 61.2}
    arms = [gpu_report.arm("ceiling, eager", "bare step", {**measured, "samples_per_s": 2500.0}, None),
            gpu_report.arm("kit notebook path, loader kept", "fit()", {**measured, "gap_ms": 3.25, "spread": 7.4}, 2500.0)]
    figures = [gpu_report.figure("images", "kit cached epochs", 4101.2, "images/s", "15.7x naive"),
               gpu_report.figure("text", "bucketed, fp16", 4000, "samples/s", "padding 5%")]
    tests = {"passed": 8, "skipped": 2, "seconds": 347.0, "slowest": [{"test": "test_gpu.py::test_text", "seconds": 41.0}]}
    r = gpu_report.report("Tesla T4", {"torch": "2.10.0", "cuda": "12.8"}, tests, figures,
                          ["training: the 510 s time box was spent"], 512.3, date="2026-11-23 18:00 UTC", arms=arms)
    assert json.loads(json.dumps(r)) == r  # plain JSON
    assert set(r) == {"gpu", "date", "python", "versions", "dry_run", "tests", "arms", "figures", "errors", "seconds"}
    assert all(set(f) == {"section", "name", "value", "unit", "note"} and isinstance(f["value"], float) for f in r["figures"])
    assert [list(a) for a in r["arms"]] == [["name", *gpu_report.ARM_FIGURES, "note"]] * 2
    assert r["arms"][0]["share"] is None and r["arms"][0]["gap_ms"] is None  # the ceiling is 1 by definition: left blank
    assert r["arms"][1]["share"] == 0.8
    table = gpu_report.markdown(r)
    assert table.startswith("GPU report: Tesla T4, 2026-11-23 18:00 UTC (python ")
    assert "| kit notebook path, loader kept | 2,000 | 7 | 0.80 | 64.0 | 812 | 30.5 | 61.2 | 3.2 | fit() |" in table
    assert "| ceiling, eager | 2,500 |  |  | 64.0 | 812 | 30.5 | 61.2 |  | bare step |" in table
    assert "`pytest -m gpu`: 8 passed, 0 failed, 2 skipped in 347 s; slowest: test_gpu.py::test_text 41 s" in table
    assert "| images | kit cached epochs | 4101 | images/s | 15.7x naive |" in table
    assert "not measured: training: the 510 s time box was spent" in table


def test_each_section_rewrites_the_report_and_a_failing_one_is_a_line(tmp_path):
    """A GPU lent for minutes may be taken back mid-run: what finished is on disk after each section."""
    rep = gpu_report.Report(tmp_path, "Tesla T4", dry_run=False)
    measured = {"samples_per_s": 100.0, "step_ms": 1.0}
    gpu_report.measure_arms(rep, [("ceiling, eager", "bare", lambda: measured)], budget_s=600, least_s=10)
    written = json.loads((tmp_path / "gpu-report.json").read_text())
    assert [a["name"] for a in written["arms"]] == ["ceiling, eager"] and written["errors"] == []

    def broken():
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")

    gpu_report.measure_arms(rep, [("kit step", "", broken), ("late", "", lambda: measured)], budget_s=600, least_s=10)
    gpu_report.measure_arms(rep, [("too late", "", lambda: measured)], budget_s=0, least_s=10)
    written = json.loads((tmp_path / "gpu-report.json").read_text())
    assert written["errors"] == ["kit step: RuntimeError: CUDA error: an illegal memory access was encountered",
                                 "too late: the 0 s time box was spent"]
    assert [a["name"] for a in written["arms"]] == ["ceiling, eager", "late"] and written["arms"][1]["share"] == 1.0
    assert "| late | 100 |  | 1.00 | 1.0 |" in (tmp_path / "gpu-report.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu-report.json", "gpu-report.md"]


def test_tests_that_could_not_be_collected_are_a_failure_in_the_table_and_the_exit_status():
    """A lent GPU's first run read "0 passed, 0 failed" and exited 0: every GPU test module failed to import."""
    assert gpu_report.counts("========= 3 errors in 8.01s =========") == {"errors": 3}
    assert gpu_report.counts("== 1 failed, 9 passed, 1 error in 100.00s ==") == {"failed": 1, "passed": 9, "errors": 1}
    assert gpu_report.broken({"errors": 3}) and gpu_report.broken({"failed": 1}) and not gpu_report.broken({"passed": 9})
    # nothing that passed, or a suite its box cut off, is no pass either; a report without the tests is not broken
    assert gpu_report.broken(gpu_report.counts("== 17 skipped in 16.00s ==") | {"summary": "17 skipped"})
    assert gpu_report.broken(gpu_report.counts("== no tests ran in 0.50s ==") | {"summary": "no tests ran"})
    assert gpu_report.broken({"passed": 3, "summary": "stopped after 190 s, 3 passed"})
    assert not gpu_report.broken({}) and not gpu_report.broken({"skipped": 17, "summary": "17 skipped"}, on_gpu=False)
    r = {"gpu": "H200", "date": "d", "python": "3.12", "versions": {}, "arms": [], "figures": [], "errors": [],
         "tests": {"errors": 3, "seconds": 8.0}}
    assert "`pytest -m gpu`: 0 passed, 0 failed, 0 skipped, 3 errors (not collected: see gpu-tests.txt) in 8 s" \
        in gpu_report.markdown(r)


def test_an_arm_is_timed_in_windows_and_says_how_far_apart_they_lie():
    """One run cannot tell apart arms closer than their spread: two lent H200s read one arm 0.56 and 0.74."""
    clock, times = iter([0.0, 1.0, 1.0, 3.0, 3.0, 4.0]), []
    scale = gpu_arms.Scale("m", 8, 10, 1, 1, steps=30, warmup=2, epochs=1, workers=0, profiled=1)
    with mock.patch.object(gpu_arms.time, "perf_counter", lambda: next(clock)), \
            mock.patch.object(gpu_arms, "profiled", lambda step, n, device: {}):
        measured = gpu_arms.timed(lambda: times.append(1), scale, torch.device("cpu"), rows=10)
    assert len(times) == 32  # the warm-up, then three windows of ten steps: 1 s, 2 s, 1 s
    assert measured["samples_per_s"] == 300 / 4 and measured["step_ms"] == 4000 / 30
    assert measured["spread"] == pytest.approx(100 * (100 - 50) / (250 / 3))
    assert gpu_arms.spread([5.0]) is None


def test_the_slowest_tests_are_read_from_pytests_durations():
    output = ("41.20s call     tests/gpu/test_gpu.py::test_text_in_fp16\n"
              "3.10s setup    tests/gpu/test_segmentation_gpu.py::test_segmentation[oom.step:3]\n"
              "57.00s call     tests/gpu/test_segmentation_gpu.py::test_segmentation[oom.step:3]\n")
    assert gpu_report.slowest(output) == [{"test": "test_segmentation_gpu.py::test_segmentation[oom.step:3]", "seconds": 57.0},
                                          {"test": "test_gpu.py::test_text_in_fp16", "seconds": 41.2}]


def test_launches_and_gpu_busy_time_per_step_from_profiler_events():
    """Kernels on two streams overlap (the prefetch's copies beside the step): busy time counts them once."""
    def event(name, start, end, device=DeviceType.CPU):
        return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(start=start, end=end))

    events = [event("cudaLaunchKernel", 0, 1), event("cudaLaunchKernel_v7000", 2, 3), event("cuLaunchKernelEx", 4, 5),
              event("cudaGraphLaunch", 6, 7), event("cudaMemcpyAsync", 8, 9), event("aten::mm", 0, 9),
              event("gemm", 1000, 3000, DeviceType.CUDA), event("copy", 2000, 5000, DeviceType.CUDA),
              event("relu", 9000, 10000, DeviceType.CUDA)]
    assert gpu_arms.per_step(events, n=2, host_s=0.01) == {"launches_per_step": 2.0, "host_ms": 5.0, "gpu_ms": 2.5}
