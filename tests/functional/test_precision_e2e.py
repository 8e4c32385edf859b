"""The T4's precision path on the CPU: a built notebook with precision="fp16" (CPU autocast, a live
GradScaler), and a CNN fold that falls back to fp32 and is resumed in fp32 with the data path following."""
import dataclasses

import pandas as pd
import pytest
import torch
from toys import resume_folder

from kit import files
from kit.build import execute, notebook
from kit.pipelines import create_pipeline
from kit.run import start, train_folds, write_submission

pytestmark = pytest.mark.e2e


def check_submission(out, folder):
    sample = pd.read_csv(folder / "sample_submission.csv", dtype={"id": str})
    sub = pd.read_csv(out / "submission.csv", dtype={"id": str})
    assert sub["id"].tolist() == sample["id"].tolist() and list(sub.columns) == list(sample.columns)
    p = sub.drop(columns="id").to_numpy()
    assert (p >= 0).all() and abs(p.sum(1) - 1).max() < 1e-3


def test_a_built_notebook_trains_in_fp16_with_loss_scaling_on_the_cpu(tmp_path, dog_breed_data):
    cfg, folder = dog_breed_data
    built = tmp_path / "kernel.ipynb"
    files.write_text(built, notebook.dumps(notebook.build("cnn", {**cfg.parameters(smoke=True), "epochs": 2})))
    out = tmp_path / "out"
    execute.run(built, tmp_path / "executed.ipynb",
                {"data_dir": str(folder), "output_dir": str(out), "precision": "fp16", "image_size": 32}, cwd=tmp_path)
    log = (out / "kit.log").read_text()
    assert "precision      fp16 autocast with loss scaling (GradScaler) (as asked)" in log
    assert "predicted the test set with fold 1 (" in log and ", fp16)" in log
    check_submission(out, folder)


class NanUnderAutocast:
    """A task whose loss is NaN whenever autocast is on (mixed precision overflowing, as fp16 can); after
    `stop_after` training calls in fp32 it stops the run as an interrupt would."""

    def __init__(self, objective, stop_after=None):
        self.objective, self.stop_after, self.fp32_calls = objective, stop_after, 0

    def __call__(self, model, batch):
        out = self.objective(model, batch)
        if torch.is_grad_enabled() and torch.is_autocast_enabled("cpu"):
            return {**out, "loss": out["loss"] * float("nan")}
        if torch.is_grad_enabled():
            self.fp32_calls += 1
            if self.fp32_calls == self.stop_after:
                raise KeyboardInterrupt
        return out

    def __getattr__(self, name):
        return getattr(self.objective, name)


def session_for(cfg, folder, out):
    values = {**cfg.parameters(smoke=True), "image_size": 32, "epochs": 2, "batch_size": 16, "data_dir": str(folder),
              "output_dir": str(out)}
    session = start("cnn", values)
    session.setup = dataclasses.replace(session.setup, precision="fp16")  # a T4's; the CPU runs it with autocast and a scaler
    pipe = create_pipeline(session)
    return session, pipe, pipe.load()


def test_a_cnn_fold_falls_back_to_fp32_and_resumes_in_fp32(tmp_path, dog_breed_data):
    cfg, folder = dog_breed_data
    out = tmp_path / "out"
    session, pipe, data = session_for(cfg, folder, out)
    objective = pipe.objective
    pipe.objective = lambda d: NanUnderAutocast(objective(d), stop_after=3)  # epoch 1 redone in fp32 (2 steps), then stop
    with pytest.raises(KeyboardInterrupt):
        train_folds(session, pipe, data)
    log = (out / "kit.log").read_text()
    assert "non-finite losses keep coming under fp16; falling back to fp32 and redoing epoch 1" in log
    assert (resume_folder(out) / "fold0.last.pt").exists()

    session, pipe, data = session_for(cfg, folder, out)  # the notebook run again: fp16 asked for, fold 1 is fp32
    cv = train_folds(session, pipe, data)
    write_submission(session, pipe, data)
    log = (out / "kit.log").read_text()
    assert "fold 1/2: resuming after epoch 1 from fold0.last.pt (fp32)" in log
    assert cv.finished == [0, 1] and cv.folds[0]["precision"] == "fp32" and cv.folds[1]["precision"] == "fp16"
    check_submission(out, folder)


class OomAbove(torch.nn.Module):
    """The fold model, running out of memory on inference batches of more than `rows` images."""

    def __init__(self, model, rows):
        super().__init__()
        self.model, self.rows = model, rows

    def forward(self, x):
        if not torch.is_grad_enabled() and len(x) > self.rows:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")
        return self.model(x)

    def load_state_dict(self, state, *args, **kwargs):
        return self.model.load_state_dict(state, *args, **kwargs)


def test_prediction_halves_its_batch_when_out_of_memory(tmp_path, dog_breed_data):
    cfg, folder = dog_breed_data
    out = tmp_path / "out"
    session, pipe, data = session_for(cfg, folder, out)
    session.setup = dataclasses.replace(session.setup, precision="fp32")
    train_folds(session, pipe, data)
    model = pipe.model
    pipe.model = lambda d, pretrained=True, fit_rows=None: OomAbove(model(d, pretrained, fit_rows), rows=8)
    write_submission(session, pipe, data)  # 2 x 16 rows at first: 32, then 16, then 8
    log = (out / "kit.log").read_text()
    assert "fold 1: out of memory predicting; now batches of 16" in log and "now batches of 8" in log
    check_submission(out, folder)
