"""train_folds with a toy pipeline: resume, the budget's cuts, and a failing fold after a checkpoint exists."""
import time

import numpy as np
import pytest
from toys import ToyPipeline, session

from kit.run import train_folds


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
        "fold0.json", "fold0.pt", "fold1.json", "fold1.pt", "fold2.json", "fold2.pt", "run.json"]
    stamps = {p.name: p.stat().st_mtime_ns for p in cv.folder.iterdir()}
    again = train_folds(s, ToyPipeline(fail_in_fold=0), pipe.load())  # would explode if it trained anything
    assert again.finished == [0, 1, 2] and again.score == cv.score
    assert {p.name: p.stat().st_mtime_ns for p in cv.folder.iterdir()} == stamps


def test_a_fold_failing_after_a_checkpoint_exists_stops_training_but_not_the_run(out, capsys):
    s = session(out)
    cv = train_folds(s, ToyPipeline(fail_in_fold=1), ToyPipeline().load())
    assert cv.finished == [0] and cv.error == "RuntimeError: a bug in fold 2"
    assert "fold 2/3 failed (RuntimeError: a bug in fold 2); training stops" in capsys.readouterr().out


def test_a_failure_before_any_checkpoint_is_raised(out):
    with pytest.raises(RuntimeError, match="a bug in fold 2"):
        train_folds(session(out), ToyPipeline(fail_in_fold=0), ToyPipeline().load())


def test_an_exhausted_budget_trains_one_cut_fold_and_stops(out, capsys):
    s = session(out, epochs=50, time_budget_s=20)
    s.started = time.time() - 15  # 5 s left: less than the prediction reserve
    cv = train_folds(s, ToyPipeline(), ToyPipeline().load())
    assert cv.finished == [0] and cv.folds[0]["stopped"] == "time budget"
    assert cv.folds[0]["epochs_run"] == 1
    assert "training stops after fold 1/3" in capsys.readouterr().out
