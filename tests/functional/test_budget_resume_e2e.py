"""The time budget and kill-and-resume, end to end through papermill."""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from toys import resume_folder, run_folder

from kit import config, smoke

pytestmark = pytest.mark.e2e
SMOKE = ["device=cpu", "model_name=test_efficientnet", "pretrained=false", "image_size=64", "batch_size=16", "folds=2"]


def cli(data: Path, out: Path, *params: str) -> list[str]:
    args = [sys.executable, "-m", "kit", "run", "dog-breed", "--data", str(data), "--output", str(out)]
    return args + [a for p in SMOKE + list(params) for a in ("-p", p)]


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    smoke.make_dataset(config.load("dog-breed").spec, folder, seed=3)
    return folder


def valid_submission(out: Path, data: Path) -> None:
    sub = pd.read_csv(out / "submission.csv", dtype={"id": str})
    sample = pd.read_csv(data / "sample_submission.csv", dtype={"id": str})
    assert list(sub.columns) == list(sample.columns) and sub["id"].tolist() == sample["id"].tolist()
    assert abs(sub.drop(columns="id").sum(axis=1) - 1).max() < 1e-4


def notebook_seconds(executed: Path) -> float:
    cells = json.loads(executed.read_text())["cells"]
    times = [c["metadata"]["papermill"] for c in cells if c["metadata"].get("papermill", {}).get("start_time")]
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(times[-1]["end_time"]) - parse(times[0]["start_time"])).total_seconds()


def test_a_thousand_epochs_in_thirty_seconds(tmp_path, data):
    out = tmp_path / "out"
    run = subprocess.run(cli(data, out, "epochs=1000", "time_budget_s=30", "patience=0"), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert notebook_seconds(out / "executed.ipynb") <= 30.0
    valid_submission(out, data)
    log = (out / "kit.log").read_text()
    assert re.search(r"plan: 2 folds x 1000 epochs would need .*: .*cut from", log), log[-2000:]
    assert "time budget" in log


def test_sigkill_mid_fold_then_rerun_reuses_finished_folds(tmp_path, data):
    out = tmp_path / "out"
    args = cli(data, out, "epochs=12", "patience=0")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    log = out / "kit.log"
    deadline = time.time() + 300
    while time.time() < deadline:
        text = log.read_text() if log.exists() else ""
        if "fold 2/2 epoch  3/" in text:
            break
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    kernel = int(re.search(r", pid (\d+)", text).group(1))
    os.kill(kernel, signal.SIGKILL)  # the kernel, mid-fold, as Kaggle's session ending would
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    ckpt, resume = run_folder(out), resume_folder(out)
    assert (ckpt / "fold0.json").exists() and (resume / "fold1.last.pt").exists()
    assert not (ckpt / "fold1.json").exists() and not (out / "submission.csv").exists()
    fold0 = hashlib.sha256((ckpt / "fold0.pt").read_bytes()).hexdigest()
    fold0_time = (ckpt / "fold0.pt").stat().st_mtime_ns

    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "fold 1/2: finished earlier" in again.stdout
    # the kill came after the epoch 3 line: its checkpoint, or the one before it, is where the fold resumes
    assert re.search(r"fold 2/2: resuming after epoch ([2-9]|1[01]) from fold1.last.pt", again.stdout)
    assert hashlib.sha256((ckpt / "fold0.pt").read_bytes()).hexdigest() == fold0
    assert (ckpt / "fold0.pt").stat().st_mtime_ns == fold0_time
    assert (ckpt / "fold1.json").exists() and not (resume / "fold1.last.pt").exists()
    assert "from folds [1, 2]" in again.stdout
    valid_submission(out, data)
