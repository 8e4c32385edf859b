"""Two workers from the notebook, on the CPU with gloo: fold-parallel, DDP, and a worker that fails."""
import re

import pandas as pd
import pytest
from processes import alive

from kit import config, files, smoke
from kit.build import execute, notebook

pytestmark = pytest.mark.e2e


@pytest.fixture
def built(tmp_path):
    cfg = config.load("dog-breed")
    root = tmp_path / "input"
    smoke.make_dataset(cfg.spec, root / cfg.spec.slug, seed=8)
    path = tmp_path / "kernel.ipynb"
    files.write_text(path, notebook.dumps(notebook.build("cnn", {**cfg.parameters(smoke=True), "epochs": 2})))
    return path, root / cfg.spec.slug


def run(tmp_path, built, env=None, **params):
    path, data = built
    out = tmp_path / "out"
    execute.run(path, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out), **params},
                cwd=tmp_path, env=env)
    sub = pd.read_csv(out / "submission.csv", dtype={"id": str})
    sample = pd.read_csv(data / "sample_submission.csv", dtype={"id": str})
    assert sub["id"].tolist() == sample["id"].tolist() and list(sub.columns) == list(sample.columns)
    return (tmp_path / "executed.ipynb").read_text(), out


@pytest.mark.parametrize("mode", ["folds", "ddp"])
def test_two_workers_write_a_submission(tmp_path, built, mode):
    text, out = run(tmp_path, built, parallel=mode, world_size=2)
    assert f"parallel: {mode} on 2 workers" in text
    assert f"[worker 0] worker 0/2 ({mode}) on the CPU" in text and f"[worker 1] worker 1/2 ({mode}) on the CPU" in text
    assert "from folds [1, 2]" in text
    if mode == "folds":  # each worker trained its own fold
        assert "[worker 0] fold 1/2 epoch" in text and "[worker 1] fold 2/2 epoch" in text
    else:  # rank 0 speaks for both
        assert "[worker 0] fold 2/2 epoch" in text and "[worker 1] fold 1/2 epoch" not in text


def worker_pids(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"\[worker \d\] worker \d/\d \(\w+\) on [^,]+, pid (\d+)", text)]


@pytest.mark.parametrize(
    "fault, says, precision",
    [
        ("crash.worker1:2", "worker 1: RuntimeError: injected crash in worker 1", "fp32"),
        ("die.worker1:2", "process 1 terminated with signal SIGKILL", "bf16"),
        ("abort.worker1:2", "process 1 terminated with signal SIGABRT", "fp16"),  # a C++ abort, as NCCL's errors end
    ],
)
def test_a_failing_worker_stops_the_others_and_the_submission_is_still_written(tmp_path, built, fault, says, precision):
    text, out = run(tmp_path, built, env={"KIT_FAULTS": fault}, parallel="ddp", world_size=2, precision=precision,
                    image_size=32)
    assert "a worker failed (" in text and says in text
    assert "from folds [1]" in text  # fold 1 finished before the failure
    if fault.startswith("abort"):  # what the worker wrote to fd 2 before dying reached the notebook
        assert "[worker 1] injected C-level failure in worker 1: NCCL error: unhandled system error" in text
    pids = worker_pids(text)
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)


def test_a_ddp_holdout_that_fails_after_its_first_epoch_still_submits(tmp_path, built):
    """folds=1 trains under DDP on T4 x2, where an out-of-memory error stops every rank: the fold's best checkpoint
    from epoch 1 is on disk, so the submission comes from it (it used to raise 'training failed before any fold
    finished'). Each rank runs 2 steps an epoch here: the third forward is epoch 2's first."""
    text, out = run(tmp_path, built, env={"KIT_FAULTS": "oom.forward:3-"}, parallel="ddp", world_size=2, folds=1)
    assert "a worker failed (" in text and "out of memory at" in text
    assert "predicting with the folds that exist" in text and "from folds [1]" in text
    assert "training failed before any fold finished" not in text
