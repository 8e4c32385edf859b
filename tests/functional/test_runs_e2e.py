"""Runs keyed by their settings, as an interactive Kaggle session uses /kaggle/working: change parameters and
run again into the same output folder; nothing trained under other settings is reused, nothing is lost."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from toys import run_folder

from kit import config, smoke
from kit.runtime.run_folder import LATEST, PREDICTION_FILES

pytestmark = pytest.mark.e2e
BASE = ["device=cpu", "model_name=test_efficientnet", "pretrained=false", "batch_size=16", "patience=0"]
FIRST = ["folds=2", "image_size=64", "epochs=2"]
SECOND = ["folds=3", "image_size=72", "epochs=3"]


def kit_run(data: Path, out: Path, params: list[str]) -> str:
    args = [sys.executable, "-m", "kit", "run", "dog-breed", "--data", str(data), "--output", str(out)]
    done = subprocess.run(args + [a for p in BASE + params for a in ("-p", p)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def stamps(folder: Path) -> dict[str, int]:
    """The training's files and when they were written: which run is the latest changes, of course, and each
    submission writes the run's predictions again (kit.run.predictions: the test set may have changed)."""
    rewritten = {LATEST, *PREDICTION_FILES}
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in rewritten}


def test_changed_settings_train_afresh_and_the_first_settings_find_their_folds_again(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    smoke.make_dataset(config.load("dog-breed").spec, data, seed=3)

    kit_run(data, out, FIRST)
    first_files = stamps(out / "checkpoints")

    log = kit_run(data, out, SECOND)
    assert "finished earlier" not in log and "resuming" not in log, log[-3000:]
    for fold in range(3):  # three folds, each three epochs (patience 0: none stops early)
        assert f"fold {fold + 1}/3 epoch  3/3" in log
    assert {k: v for k, v in stamps(out / "checkpoints").items() if k in first_files} == first_files  # all kept
    second = run_folder(out)
    first = next(p for p in (out / "checkpoints").iterdir() if p.is_dir() and p != second)
    assert {"fold0.pt", "fold1.pt", "fold0.json", "fold1.json", "run.json"} <= {p.name for p in first.iterdir()}
    changed = re.search(r"run \w+: new, in .*; since run (\w+): (.*) \(its files stay in", log)
    assert changed and changed.group(1) == first.name, log[-3000:]
    assert changed.group(2) == "epochs 2 -> 3, folds 2 -> 3, image_size 64 -> 72"
    record = json.loads((second / "run.json").read_text())["params"]
    assert (record["folds"], record["image_size"], record["epochs"]) == (3, 72, 3)
    for fold in range(3):
        assert json.loads((second / f"fold{fold}.json").read_text())["epochs_run"] == 3

    log = kit_run(data, out, FIRST)
    assert "fold 1/2: finished earlier" in log and "fold 2/2: finished earlier" in log and "epoch  1/" not in log
    assert f"run {first.name}: an earlier run's settings" in log and run_folder(out) == first
    assert {k: v for k, v in stamps(out / "checkpoints").items() if k in first_files} == first_files
