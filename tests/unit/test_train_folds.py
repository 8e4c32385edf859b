"""train_folds with a toy pipeline: resume, the budget's cuts, and a failing fold after a checkpoint exists."""
import time

import numpy as np
import pytest
import torch
from toys import ToyPipeline, session

from kit.run import train_folds
from kit.runtime import checkpoint


@pytest.fixture
def out(tmp_path):
    (tmp_path / "out").mkdir()
    return tmp_path


def test_three_folds_then_a_rerun_reuses_them(out):
    s = session(out, lr=0.05)
    pipe = ToyPipeline()
    cv = train_folds(s, pipe, pipe.load())
    assert cv.finished == [0, 1, 2] and np.isfinite(cv.score)
    assert cv.score < cv.baseline and cv.baseline_name == "the class prior"
    assert sorted(p.name for p in cv.folder.iterdir()) == [
        "fold0.json", "fold0.meta.pt", "fold0.pt", "fold1.json", "fold1.meta.pt", "fold1.pt", "fold2.json", "fold2.meta.pt",
        "fold2.pt", "run.json"]
    stamps = {p.name: p.stat().st_mtime_ns for p in cv.folder.iterdir()}
    again = train_folds(s, ToyPipeline(fail_in_fold=0), pipe.load())  # would explode if it trained anything
    assert again.finished == [0, 1, 2] and again.score == cv.score
    assert {p.name: p.stat().st_mtime_ns for p in cv.folder.iterdir()} == stamps


def test_a_fold_failing_after_a_checkpoint_exists_stops_training_but_not_the_run(out, capsys):
    s = session(out)
    cv = train_folds(s, ToyPipeline(fail_in_fold=1), ToyPipeline().load())
    assert cv.finished == [0] and cv.error == "RuntimeError: a bug in fold 2"
    assert "fold 2/3 failed (RuntimeError: a bug in fold 2); training stops" in capsys.readouterr().out


def test_a_failure_before_any_checkpoint_leaves_the_prior_to_the_submission(out, capsys):
    """The notebook goes on to its submission step, which writes the training labels' prior (kit.run.fallback)."""
    cv = train_folds(session(out), ToyPipeline(fail_in_fold=0), ToyPipeline().load())
    assert cv.finished == [] and cv.error == "RuntimeError: a bug in fold 2"
    assert "training failed before any fold had a checkpoint (RuntimeError: a bug in fold 2)" in capsys.readouterr().out


def test_a_failure_before_any_checkpoint_is_raised_under_fallback_none(out):
    with pytest.raises(RuntimeError, match="a bug in fold 2"):
        train_folds(session(out, fallback="none"), ToyPipeline(fail_in_fold=0), ToyPipeline().load())


def test_an_exhausted_budget_trains_one_cut_fold_and_stops(out, capsys):
    s = session(out, epochs=50, time_budget_s=20)
    s.started = time.time() - 15  # 5 s left: less than the prediction reserve
    cv = train_folds(s, ToyPipeline(), ToyPipeline().load())
    assert cv.finished == [0] and cv.folds[0]["stopped"] == "time budget"
    assert cv.folds[0]["epochs_run"] == 1
    assert "training stops after fold 1/3" in capsys.readouterr().out


def test_the_output_folder_holds_no_resume_state(out, monkeypatch):
    """On Kaggle /kaggle/working holds 20 GB: each fold's resume state (weights, EMA, both Adam moments) goes to
    the scratch folder, and what the output folder holds at its peak stays within its final best checkpoints
    (the atomic write of a new best epoch beside the last)."""
    s = session(out, epochs=3)
    peak, seen = [0], []
    save = checkpoint.save

    def measured(obj, path):
        save(obj, path)
        files = [p for p in s.output_dir.rglob("*") if p.is_file()]
        seen.extend(p.name for p in files if p.name.endswith(".last.pt"))
        peak[0] = max(peak[0], sum(p.stat().st_size for p in files))

    monkeypatch.setattr(checkpoint, "save", measured)
    cv = train_folds(s, ToyPipeline(), ToyPipeline().load())
    best = sum(p.stat().st_size for p in cv.folder.glob("fold*.pt"))
    assert seen == [] and peak[0] <= best + 64 * 1024


def test_summaries_and_predict_mode_read_no_weights_and_prediction_reads_each_fold_once(out, monkeypatch):
    """Fold weights (1.7 GB each for large encoders) are read once, to predict; the fold table, the stamp and
    the thresholds come from each fold's small .meta.pt."""
    from kit.run.ensemble import ensemble
    from kit.runtime import trained

    s, pipe = session(out), ToyPipeline()
    data = pipe.load()
    loaded = []
    load = checkpoint.load
    monkeypatch.setattr(checkpoint, "load", lambda path, *a, **k: loaded.append(path.name) or load(path, *a, **k))
    cv = train_folds(s, pipe, data)
    trained.read(cv.folder)
    assert [n for n in loaded if n.endswith(".pt") and not n.endswith(".meta.pt")] == []
    loaded.clear()
    ensemble(s, pipe, data, cv.folder)
    assert sorted(n for n in loaded if not n.endswith(".meta.pt")) == ["fold0.pt", "fold1.pt", "fold2.pt"]


def test_prediction_after_an_interrupted_training_cell_uses_the_folds_it_left(out):
    """Interrupting the training cell (as the notebook suggests when time runs short) leaves no CV result, but
    the submission cell finds the session's run from its settings and data, and predicts with its folds."""
    from kit.run.ensemble import ensemble
    from kit.run.this_run import run_folder

    s, pipe = session(out), ToyPipeline()
    data = pipe.load()
    model = pipe.model
    pipe.model = lambda d, pretrained=True, fit_rows=None: Interrupting() if pipe.models == 1 else model(d, pretrained, fit_rows)
    with pytest.raises(KeyboardInterrupt):
        train_folds(s, pipe, data)  # fold 2's model is interrupted at its first step
    pred, used = ensemble(s, ToyPipeline(), data, run_folder(s, ToyPipeline(), data))
    assert used == [0] and pred.shape == (50, 3)


class Interrupting(torch.nn.Linear):
    def __init__(self):
        super().__init__(6, 3)

    def forward(self, x):
        raise KeyboardInterrupt
