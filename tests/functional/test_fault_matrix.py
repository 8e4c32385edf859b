"""The faults a GPU raises, injected into the real run on the CPU (kit.runtime.faults), under fp16 with a live
GradScaler and, where its path differs, under bf16: each run ends with a valid submission, every fold trained, and
no process left.

The run is the notebook's own sequence of calls (set-up, data, training, submission) in this process, with the
dog-breed smoke data (the audio template's, out of memory in a step and in prediction and NaN losses, with whale
redux's; the detection template's, the same three, with vinbigdata's); the same faults through a built notebook and
its workers are in test_parallel_e2e.py and test_interrupt_e2e.py."""
import dataclasses
import multiprocessing

import pandas as pd
import pytest
from toys import run_folder

from kit.pipelines import create_pipeline
from kit.run import start, train_folds, write_submission
from kit.runtime import faults

pytestmark = pytest.mark.e2e

FAULTS = {
    # fault: a line the recovery prints
    "oom.forward:2": "out of memory at 16 samples per step; now micro-batches of 8",
    "oom.backward:2": "out of memory at 16 samples per step; now micro-batches of 8",
    "oom.unscale:2": "out of memory at 16 samples per step; now micro-batches of 8",
    "oom.step:2": "out of memory at 16 samples per step; now micro-batches of 8",
    "oom.validation:1": "out of memory in validation at 16 samples; validating 8 at a time",
    "oom.predict:1": "fold 1: out of memory predicting; now batches of 16",
    "oom.autotune:1": "batch    8: out of memory",
    "nan.amp:1-": "non-finite losses keep coming under {precision}; falling back to fp32 and redoing epoch 1",
    # activations that overflow inside the forward: BatchNorm's statistics are put back, so no validation is NaN
    "overflow.forward:2": "epoch 1: skipped 1 steps with a non-finite loss",
    "error.compile:1-": "preflight: torch.compile failed (BackendCompilerFailed",
}


def run_cnn(tmp_path, dog_breed_data, precision, plan=None, **params):
    """The notebook's calls, in this process; returns (log text, cv result, submission, data folder, session)."""
    cfg, folder = dog_breed_data
    values = {**cfg.parameters(smoke=True), "image_size": 32, "epochs": 1, "folds": 2, "precision": precision,
              "data_dir": str(folder), "output_dir": str(tmp_path / "out"), **params}
    session = start("cnn", values)
    if plan:  # accelerants the CPU does not plan for, so that their faults can strike here
        session.setup = dataclasses.replace(session.setup, **plan)
    pipe = create_pipeline(session)
    data = pipe.load()
    cv = train_folds(session, pipe, data)
    sub = write_submission(session, pipe, data)
    return (session.output_dir / "kit.log").read_text(), cv, sub, folder, session


# bf16 too where the precision changes the recovery's path: the step's backward, unscale and optimizer step (fp16's
# live GradScaler, bf16's none), its non-finite losses and overflows; forward, validation, prediction, the batch
# search and compilation recover the same way under both, so fp16's run (the GradScaler's) stands for them
BF16_TOO = ("oom.backward:2", "oom.unscale:2", "oom.step:2", "nan.amp:1-", "overflow.forward:2")


@pytest.mark.parametrize("fault, precision", [(f, "fp16") for f in FAULTS] + [(f, "bf16") for f in BF16_TOO])
def test_a_fault_is_survived(tmp_path, dog_breed_data, fault, precision):
    plan, params = {}, {}
    if fault.startswith("oom.autotune"):
        plan, params = {"autotune": True}, {"batch_size": "auto"}
    if fault.startswith("error.compile"):
        plan, params = {"compile_ok": True}, {"compile": True}
    faults.arm(fault)
    try:
        log, cv, sub, folder, _ = run_cnn(tmp_path, dog_breed_data, precision, plan, **params)
    finally:
        faults.arm("")
    assert FAULTS[fault].format(precision=precision) in log
    assert cv.finished == [0, 1] and not cv.error  # no fold lost
    sample = pd.read_csv(folder / "sample_submission.csv", dtype={"id": str})
    written = pd.read_csv(tmp_path / "out" / "submission.csv", dtype={"id": str})
    assert written["id"].tolist() == sample["id"].tolist() and list(written.columns) == list(sample.columns)
    assert written.drop(columns="id").notna().all().all()
    assert multiprocessing.active_children() == []


PREFLIGHT = {
    # fault: (what the CPU is told it has, parameters, the line, what is off afterwards)
    "fail.channels_last": ({"channels_last": True}, {}, "channels_last failed", "channels_last"),
    "fail.precision": ({}, {}, "fp16 training step failed", "precision"),
    "fail.prefetch": ({"prefetch": True}, {}, "side-stream prefetch failed", "prefetch"),
    "fail.compile": ({"compile_ok": True}, {"compile": True}, "torch.compile failed", "compile_ok"),
    "fail.monitor": ({"monitor": True}, {}, "GPU monitor (NVML) failed", "monitor"),
}


@pytest.mark.parametrize("fault", list(PREFLIGHT))
def test_an_accelerant_that_fails_its_preflight_is_turned_off_and_the_run_goes_on(tmp_path, dog_breed_data, fault):
    plan, params, says, off = PREFLIGHT[fault]
    faults.arm(fault)
    try:
        log, cv, sub, folder, session = run_cnn(tmp_path, dog_breed_data, "fp16", plan, **params)
    finally:
        faults.arm("")
    line = next(line for line in log.splitlines() if "preflight:" in line)
    assert says in line and f"injected failure at {fault}" in line and line.endswith(" instead"), line
    assert log.count("preflight:") == 1  # only what failed is named
    if off == "precision":
        assert session.precision.name == "fp32" and "predicted the test set with fold 1 (" in log and ", fp32)" in log
    else:
        assert getattr(session.setup, off) is False
    assert cv.finished == [0, 1]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_channels_last_passes_its_preflight_under_mixed_precision(tmp_path, dog_breed_data, precision):
    # channels_last is probed in fp32 so that its failure is not taken for the precision's; its batch must then
    # come in fp32 too, not in the session's half dtype (which made the probe fail on every GPU)
    log, cv, sub, folder, session = run_cnn(tmp_path, dog_breed_data, precision, {"channels_last": True})
    assert "preflight:" not in log and session.setup.channels_last is True
    assert cv.finished == [0, 1]


def test_batch_trials_that_fail_leave_a_fixed_batch(tmp_path, dog_breed_data):
    faults.arm("fail.autotune")
    try:
        log, cv, *_ = run_cnn(tmp_path, dog_breed_data, "fp16", {"autotune": True}, batch_size="auto")
    finally:
        faults.arm("")
    assert ("batch_size auto: the trials failed (RuntimeError: injected failure at fail.autotune); a fixed batch of 32 "
            "instead") in log
    assert "batch_size auto: 32 (fixed, after failed trials)" in log
    assert cv.finished == [0, 1] and not (run_folder(tmp_path / "out") / "batch.json").exists()


def test_an_out_of_memory_probe_keeps_the_precision(tmp_path, dog_breed_data):
    """Out of memory in the fp16 probe says nothing about fp16 (eight of the longest texts at max_length take 15 GB
    for deberta-v3-base): the whole run used to train in fp32, 3-8x slower on a T4. The probe retries on fewer rows."""
    faults.arm("oom.forward:1")  # the preflight's first forward
    try:
        log, cv, sub, folder, session = run_cnn(tmp_path, dog_breed_data, "fp16")
    finally:
        faults.arm("")
    assert "preflight:" not in log and session.precision.name == "fp16"
    assert cv.finished == [0, 1] and "fp16)" in log


AUDIO = "the-icml-2013-whale-challenge-right-whale-redux"
AUDIO_FAULTS = {  # the audio template's own batches (int16 windows, log-mels made on the device) through the same faults
    "oom.step:2": "out of memory at 16 samples per step; now micro-batches of 8",
    "oom.predict:1": "fold 1: out of memory predicting; now batches of 16",
    "nan.amp:1-": "non-finite losses keep coming under fp16; falling back to fp32 and redoing epoch 1",
}


@pytest.fixture(scope="module")
def whale_data(tmp_path_factory):
    from kit import config, smoke

    cfg = config.load(AUDIO)
    folder = tmp_path_factory.mktemp("whale") / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=0)
    return cfg, folder


@pytest.mark.parametrize("fault", list(AUDIO_FAULTS))
def test_the_audio_template_survives_a_fault(tmp_path, whale_data, fault):
    cfg, folder = whale_data
    values = {**cfg.parameters(smoke=True), "epochs": 2, "folds": 2, "precision": "fp16", "data_dir": str(folder),
              "output_dir": str(tmp_path / "out")}
    faults.arm(fault)
    try:
        session = start("audio", values)
        pipe = create_pipeline(session)
        data = pipe.load()
        cv = train_folds(session, pipe, data)
        write_submission(session, pipe, data)
    finally:
        faults.arm("")
    assert AUDIO_FAULTS[fault] in (session.output_dir / "kit.log").read_text()
    assert cv.finished == [0, 1] and not cv.error
    sample = pd.read_csv(folder / "sampleSubmission.csv")
    written = pd.read_csv(tmp_path / "out" / "submission.csv")
    assert written["clip"].tolist() == sample["clip"].tolist() and written["probability"].between(0, 1).all()
    assert multiprocessing.active_children() == []


KILLED = """
import json, sys
from kit.pipelines import create_pipeline
from kit.run import start, train_folds, write_submission
session = start(sys.argv[1], json.loads(sys.argv[2]))
pipe = create_pipeline(session)
data = pipe.load()
train_folds(session, pipe, data)
write_submission(session, pipe, data)
"""


def killed_then_rerun(tmp_path, template: str, values: dict, at: str):
    """The template's run in a process of its own, SIGKILLed (as Kaggle's session ending would) once its log says
    `at`; then the same run in this process. Returns (the rerun's log, its cv result, the checkpoint folder)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from toys import resume_folder

    out = Path(values["output_dir"])
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, template, json.dumps(values)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    log, deadline, text = out / "kit.log", time.time() + 300, ""
    while time.time() < deadline:
        text = log.read_text() if log.exists() else ""
        if at in text:
            break
        assert proc.poll() is None, f"the run ended before it could be killed:\n{text[-2000:]}"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ckpt = run_folder(out)
    assert (ckpt / "fold0.json").exists() and not (ckpt / "fold1.json").exists()
    assert (resume_folder(out) / "fold1.last.pt").exists() and not (out / "submission.csv").exists()
    fold0 = (ckpt / "fold0.pt").read_bytes()

    session = start(template, values)
    pipe = create_pipeline(session)
    data = pipe.load()
    cv = train_folds(session, pipe, data)
    write_submission(session, pipe, data)
    assert (ckpt / "fold0.pt").read_bytes() == fold0  # the finished fold is not trained again
    return log.read_text()[len(text):], cv, ckpt


def test_the_audio_template_killed_mid_fold_resumes_and_submits(tmp_path, whale_data):
    """SIGKILL mid-fold on whale redux's audio run; the rerun reuses the finished fold and its wave caches, resumes the
    killed fold from its last epoch, and submits."""
    import re

    cfg, folder = whale_data
    out = tmp_path / "out"
    values = {**cfg.parameters(smoke=True), "epochs": 4, "folds": 2, "data_dir": str(folder), "output_dir": str(out),
              "patience": 0}
    again, cv, _ = killed_then_rerun(tmp_path, "audio", values, "fold 2/2 epoch  2/4")
    assert "reusing the decoded cache" in again and "fold 1/2: finished earlier" in again
    # the kill came after the epoch 2 line: its resume state, or the one before it, is where the fold resumes
    assert re.search(r"fold 2/2: resuming after epoch [12] from fold1.last.pt", again), again[-3000:]
    assert cv.finished == [0, 1] and not cv.error
    sample = pd.read_csv(folder / "sampleSubmission.csv")
    written = pd.read_csv(out / "submission.csv")
    assert written["clip"].tolist() == sample["clip"].tolist() and written["probability"].between(0, 1).all()


DETECTION = "vinbigdata-chest-xray-abnormalities-detection"
DETECTION_FAULTS = {  # the detection template's batches (padded boxes, a list of targets a step) through the same faults
    # fp32: no preflight step of fp16 comes first, so the second step is a fold's last, its 24 images' 8 after 16
    "oom.step:2": "out of memory at 8 samples per step; now micro-batches of 4",
    "oom.predict:1": "fold 1: out of memory predicting; now batches of 16",
    "nan.amp:1-": "non-finite losses keep coming under fp16; falling back to fp32 and redoing epoch 1",
}
DETECTION_FP16 = ("oom.predict:1", "nan.amp:1-")  # the detector trained and predicting in fp16, graded; nan.amp's fp16


@pytest.fixture(scope="module")
def chest_data(tmp_path_factory):
    from kit import config, smoke

    cfg = config.load(DETECTION)
    folder = tmp_path_factory.mktemp("chest") / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=0)
    return cfg, folder


@pytest.mark.parametrize("fault", list(DETECTION_FAULTS))
def test_the_detection_template_survives_a_fault(tmp_path, chest_data, fault):
    from kit.smoke.gallery import graders

    cfg, folder = chest_data
    values = {**cfg.parameters(smoke=True), "epochs": 1, "folds": 2, "data_dir": str(folder), "output_dir": str(tmp_path / "out"),
              "precision": "fp16" if fault in DETECTION_FP16 else "fp32"}  # one epoch: each fault strikes in it
    # (CI's time: on the CPU fp16 runs the detector at 7 images/s, so the step's fault trains in fp32)
    faults.arm(fault)
    try:
        session = start("detection", values)
        pipe = create_pipeline(session)
        data = pipe.load()
        cv = train_folds(session, pipe, data)
        write_submission(session, pipe, data)
    finally:
        faults.arm("")
    assert DETECTION_FAULTS[fault] in (session.output_dir / "kit.log").read_text()
    assert cv.finished == [0, 1] and not cv.error
    graders.check(DETECTION, tmp_path / "out" / "submission.csv", folder / "sample_submission.csv")
    assert multiprocessing.active_children() == []


def test_the_detection_template_killed_mid_fold_resumes_and_submits(tmp_path, chest_data):
    """SIGKILL mid-fold on vinbigdata's detection run; the rerun reuses the finished fold, resumes the killed fold from
    its last epoch (the detector's weights and optimizer), and writes a submission the grader reads."""
    import re

    from kit.smoke.gallery import graders

    cfg, folder = chest_data
    out = tmp_path / "out"
    values = {**cfg.parameters(smoke=True), "epochs": 2, "folds": 2, "data_dir": str(folder), "output_dir": str(out),
              "patience": 0}
    again, cv, _ = killed_then_rerun(tmp_path, "detection", values, "fold 2/2 epoch  1/2")
    assert "fold 1/2: finished earlier" in again
    # the kill came after the epoch 1 line: its resume state, or the fold's epoch 0 state written before it
    assert re.search(r"fold 2/2: resuming after epoch [01] from fold1.last.pt", again), again[-3000:]
    assert cv.finished == [0, 1] and not cv.error
    graders.check(DETECTION, out / "submission.csv", folder / "sample_submission.csv")
    assert multiprocessing.active_children() == []
