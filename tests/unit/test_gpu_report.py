"""make gpu-report: on a machine without a GPU, one line; its report's JSON and table, from given figures."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

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


def test_the_report_holds_the_gpu_versions_date_tests_and_each_figure():
    figures = [gpu_report.figure("images", "kit cached epochs", 4101.2, "images/s", "15.7x naive"),
               gpu_report.figure("text", "bucketed, fp16", 4000, "samples/s", "padding 5%")]
    r = gpu_report.report("Tesla T4", {"torch": "2.10.0", "cuda": "12.8"}, {"passed": 8, "skipped": 2, "seconds": 347.0},
                          figures, ["training: the 510 s time box was spent"], 512.3, date="2026-11-23 18:00 UTC")
    assert json.loads(json.dumps(r)) == r  # plain JSON
    assert set(r) == {"gpu", "date", "python", "versions", "tests", "figures", "errors", "seconds"}
    assert all(set(f) == {"section", "name", "value", "unit", "note"} and isinstance(f["value"], float) for f in r["figures"])
    table = gpu_report.markdown(r)
    assert table.startswith("GPU report: Tesla T4, 2026-11-23 18:00 UTC (python ")
    assert "`pytest -m gpu`: 8 passed, 0 failed, 2 skipped in 347 s" in table
    assert "| images | kit cached epochs | 4101 | images/s | 15.7x naive |" in table
    assert "not measured: training: the 510 s time box was spent" in table
