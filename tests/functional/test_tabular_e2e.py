"""The tabular template end to end through papermill: every shipped table's smoke beats predicting the prior or
the mean, the training and inference pair agree, the network trains in the loop, folds train in parallel
workers, a budget far below what the rounds need is kept, and a killed run keeps its finished folds."""
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_budget_resume_e2e import notebook_seconds
from toys import run_folder

from kit import config, smoke
from kit.metric_records import greater_is_better

pytestmark = pytest.mark.e2e
TABLES = ["tabular-playground-series-dec-2021", "tabular-playground-series-may-2022",
          "nomad2018-predict-transparent-conductors", "new-york-city-taxi-fare-prediction"]


def clearly_better(result) -> bool:
    """An out-of-fold score well past the prior's or the mean's: 0.15 more, or under 70% of its error."""
    if greater_is_better(result.metric):
        return result.score >= result.baseline + 0.15
    return result.score <= 0.7 * result.baseline


def log_of(result) -> str:
    return (result.submission.parent / "kit.log").read_text()


@pytest.mark.parametrize("comp", TABLES)
def test_each_shipped_table_beats_the_prior_or_the_mean(tmp_path, comp):
    result = smoke.run(comp, root=tmp_path)
    assert clearly_better(result), (result.score, result.baseline)
    log = log_of(result)
    assert "WARNING" not in log and "out-of-fold" in log and (result.submission.parent / "importance.png").exists()
    if comp.startswith("new-york"):
        assert "labels.csv: 500 rows; read a sample of 400 drawn at random (train_rows)" in log
        assert "1 datetime" in log
    if comp.startswith("nomad"):
        sub = pd.read_csv(result.submission)
        assert list(sub["id"]) == list(range(1, 81)) and (sub.drop(columns="id") >= 0).all().all()


def test_the_training_and_inference_kernels_of_a_table_agree(tmp_path):
    """spaceship-titanic with an [inference] kernel: strings, booleans and gaps read the same way from the recipe."""
    comp = tmp_path / "spaceship-titanic.toml"
    comp.write_text(config.resolve("spaceship-titanic").read_text() + '\n[inference]\nmachine_shape = "NvidiaTeslaT4"\n')
    result = smoke.run(str(comp), root=tmp_path)
    assert clearly_better(result) and result.inference is not None  # the same predictions to 1e-4 (smoke.run)
    sub = pd.read_csv(result.submission, dtype=str)
    assert set(sub["Transported"]) == {"True", "False"}
    log = log_of(result)
    assert "left out     strings of too many values to be categories: Cabin" in log
    inferred = (result.inference.parent / "kit.log").read_text()
    assert "predict mode" in inferred and "rounds kept" not in inferred


def test_the_network_trains_two_values_in_the_loop(tmp_path):
    result = smoke.run("nomad2018-predict-transparent-conductors", root=tmp_path,
                       overrides={"model_name": "mlp", "epochs": 30, "patience": 0})
    assert clearly_better(result), (result.score, result.baseline)
    log = log_of(result)
    assert "fold 2/2 epoch 30/30" in log and "no feature importance" in log


def test_boosters_train_folds_in_parallel_workers(tmp_path):
    result = smoke.run("tabular-playground-series-dec-2021", root=tmp_path, overrides={"parallel": "folds", "world_size": 2})
    log = log_of(result)
    assert "parallel: folds on 2 workers" in log and "[worker 1] fold 2/2:" in log
    assert clearly_better(result)


def kit_run(data: Path, out: Path, *params: str) -> list[str]:
    values = {**config.load("spaceship-titanic").smoke, **dict(p.split("=", 1) for p in params)}
    args = [sys.executable, "-m", "kit", "run", "spaceship-titanic", "--data", str(data), "--output", str(out)]
    return args + [a for k, v in values.items() for a in ("-p", f"{k}={v}")]


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    smoke.make_dataset(config.load("spaceship-titanic").spec, folder, seed=3)
    return folder


def valid(out: Path, data: Path) -> None:
    sub = pd.read_csv(out / "submission.csv", dtype=str)
    sample = pd.read_csv(data / "sample_submission.csv", dtype=str)
    assert list(sub.columns) == list(sample.columns) and sub["PassengerId"].tolist() == sample["PassengerId"].tolist()
    assert set(sub["Transported"]) <= {"True", "False"}


def test_a_million_rounds_in_forty_seconds(tmp_path, data):
    """40 s, not 30: on CI's loaded cores the kernel's start took 16 s of 30, and kit rightly left the second fold
    out for want of room, where this test asks both folds to train within their shares."""
    out = tmp_path / "out"
    run = subprocess.run(kit_run(data, out, "rounds=1000000", "early_stopping_rounds=0", "learning_rate=0.01",
                                 "time_budget_s=40"), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert notebook_seconds(out / "executed.ipynb") <= 40.0
    valid(out, data)
    log = (out / "kit.log").read_text()
    assert re.search(r"fold 1/2: [\d,]+ rounds/s on the CPU; its share of the time budget, \d+ s, fits [\d,]+ rounds: rounds "
                     r"cut from 1,000,000 to", log), log[-2000:]
    assert "rounds kept (its share of the time budget)" in log and "from folds [1, 2]" in log


def test_a_killed_run_keeps_its_finished_folds(tmp_path, data):
    out = tmp_path / "out"
    args = kit_run(data, out, "rounds=1000000", "early_stopping_rounds=0", "learning_rate=0.01", "time_budget_s=25")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    log = out / "kit.log"
    deadline = time.time() + 300
    while time.time() < deadline:
        text = log.read_text() if log.exists() else ""
        if "fold 2/2: 275 train" in text:
            break
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    os.kill(int(re.search(r", pid (\d+)", text).group(1)), signal.SIGKILL)  # the kernel, mid-fold
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    folder = run_folder(out)
    assert (folder / "fold0.json").exists() and not (folder / "fold1.json").exists()
    assert not (out / "submission.csv").exists()
    fold0 = hashlib.sha256((folder / "fold0.pt").read_bytes()).hexdigest()

    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "fold 1/2: finished earlier" in again.stdout and "fold 1/2: 275 train" not in again.stdout
    assert "fold 2/2: 275 train" in again.stdout and "from folds [1, 2]" in again.stdout
    assert hashlib.sha256((folder / "fold0.pt").read_bytes()).hexdigest() == fold0
    valid(out, data)
