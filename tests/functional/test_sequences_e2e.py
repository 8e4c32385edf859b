"""Sequence templates end to end: ventilator smokes beat the mean, a user-written per-sequence config builds
and submits labels, and bad tables stop with one line."""
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from kit import config, smoke
from kit.build import execute
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.run import start

pytestmark = pytest.mark.e2e

ACTIVITY = """
[competition]
slug = "activity-sequences"
template = "lstm"
metric = "accuracy"

[data]
train = "train.csv"
test = "test.csv"
sample_submission = "sample_submission.csv"
id_column = "seq_id"
target_column = "label"
sequence_column = "seq_id"
order_column = "t"
features = ["x"]
task = "per_sequence"

[kernel]
title = "Activity Sequences LSTM"

[params]
device = "cpu"
epochs = 15
folds = 2
batch_size = 16
d_model = 32
hidden_size = 32
num_layers = 1
patience = 0
"""


@pytest.mark.parametrize("comp", ["ventilator-lstm", "ventilator-transformer"])
def test_ventilator_smoke_beats_predicting_the_mean(tmp_path, comp):
    result = smoke.run(comp, root=tmp_path)
    assert result.metric == "mae" and result.rows == 40 * 80
    assert result.score < 0.5 * result.baseline, (result.score, result.baseline)
    sub = pd.read_csv(result.submission)
    assert list(sub.columns) == ["id", "pressure"] and sub["pressure"].between(0, 80).all()
    assert "(predicting the training median:" in result.executed.read_text()  # mae's best constant
    # the pair: the inference kernel, from the mounted output and the test files alone, submitted the same
    assert result.inference is not None and result.inference != result.submission
    inferred = pd.read_csv(result.inference)
    assert (inferred["pressure"] - sub["pressure"]).abs().max() <= 1e-4


def test_user_toml_per_sequence_labels(tmp_path, kaggle_user, write_toml):
    path = write_toml(ACTIVITY, name="activity.toml")
    env = {**os.environ, "KIT_KERNELS_DIR": str(tmp_path / "kernels")}
    built = subprocess.run([sys.executable, "-m", "kit", "kernel", str(path)], env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    notebook = tmp_path / "kernels" / "activity" / "activity-sequences-lstm.ipynb"
    data = tmp_path / "data"
    smoke.make_dataset(config.load(str(path)).spec, data, seed=11)
    out = tmp_path / "out"
    execute.run(notebook, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out)}, cwd=tmp_path)
    sub = pd.read_csv(out / "submission.csv", dtype=str)
    sample = pd.read_csv(data / "sample_submission.csv", dtype=str)
    assert list(sub.columns) == ["seq_id", "label"] and sub["seq_id"].tolist() == sample["seq_id"].tolist()
    assert set(sub["label"]) <= {"walk", "run", "sit"} and sub["label"].nunique() > 1
    log = (out / "kit.log").read_text()
    assert "target         per_sequence, label (run, sit, walk), metric accuracy" in log
    cv = pd.read_json(out / "cv.json", typ="series")
    assert cv["score"] > 0.8 > cv["baseline"]


def load_with(tmp_path, comp: str, change) -> None:
    cfg = config.load(comp)
    data = tmp_path / "data"
    smoke.make_dataset(cfg.spec, data, seed=2)
    change(data)
    session = start(cfg.spec.template, {**cfg.parameters(smoke=True), "data_dir": str(data), "output_dir": str(tmp_path / "o")})
    create_pipeline(session).load()


def edit(name: str, fn):
    def change(data):
        df = pd.read_csv(data / name)
        fn(df).to_csv(data / name, index=False)

    return change


@pytest.mark.parametrize(
    "change, message",
    [
        (edit("train.csv", lambda df: df.drop(columns="u_in")),
         r"^train.csv: no column 'u_in' \(it has: id, breath_id, R, C, time_step, u_out"),
        (edit("test.csv", lambda df: df.assign(u_in=df["u_in"].astype(object).where(df.index != 5, "high"))),
         r"^test.csv: feature 'u_in' is not numeric \('high' in row 7\)"),
        (edit("train.csv", lambda df: df.assign(u_out=df["u_out"].where(df.index != 3, np.nan))),
         r"^train.csv: feature 'u_out' has 1 missing values \(first in row 5\)"),
        (edit("sample_submission.csv", lambda df: df.iloc[1:]), r"^test.csv: row id '1\d+' is not in sample_submission.csv"),
    ],
    ids=["missing-column", "non-numeric", "nan", "id-not-in-sample"],
)
def test_bad_tables_are_one_line(tmp_path, change, message):
    with pytest.raises(KitError, match=message) as e:
        load_with(tmp_path, "ventilator-lstm", change)
    assert "\n" not in str(e.value)


def test_per_sequence_id_absent_from_the_sample(tmp_path, write_toml):
    path = write_toml(ACTIVITY, name="activity.toml")
    change = edit("sample_submission.csv", lambda df: df[df["seq_id"] != "te0003"])
    with pytest.raises(KitError, match=r"^test.csv: sequence id 'te0003' is not in sample_submission.csv \(1 such\)"):
        load_with(tmp_path, str(path), change)


def test_bad_table_through_the_cli(tmp_path):
    data = tmp_path / "data"
    smoke.make_dataset(config.load("ventilator-lstm").spec, data, seed=2)
    edit("train.csv", lambda df: df.assign(R=df["R"].where(df.index != 9, np.nan)))(data)
    args = [sys.executable, "-m", "kit", "run", "ventilator-lstm", "--data", str(data), "--output", str(tmp_path / "out"),
            "-p", "device=cpu", "-p", "fallback=none"]  # the one-line stop, not the labels' prior
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == ("error: train.csv: feature 'R' has 1 missing values (first in row 11); "
                                                   "fill them before training (kit does not guess)")
    assert not (tmp_path / "out" / "submission.csv").exists()
