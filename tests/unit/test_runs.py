"""Run fingerprints: what decides the trained folds makes a new run; where and how fast a run goes does not."""
import dataclasses
from pathlib import Path

import pytest
from toys import ToyPipeline, session

from kit.run import train_folds
from kit.run.ensemble import ensemble
from kit.runtime import runs


def run_key(tmp_path, **params) -> str:
    s, pipe = session(tmp_path, **params), ToyPipeline()
    return runs.open_run(s.output_dir, runs.record(s.template, s.spec, s.params, pipe.identity(None), pipe.split(None)),
                         s.log).name


def test_settings_that_decide_training_make_a_new_run_and_the_rest_do_not(tmp_path):
    (tmp_path / "out").mkdir()
    base = run_key(tmp_path)
    for same in ({"time_budget_s": 600.0}, {"num_workers": 3}, {"parallel": "none"}, {"compile": True}, {"device": "cpu"}):
        assert run_key(tmp_path, **same) == base, same
    for other in ({"epochs": 4}, {"lr": 0.01}, {"seed": 1}, {"folds": 3, "patience": 2}, {"precision": "bf16"}):
        assert run_key(tmp_path, **other) != base, other


def test_other_data_or_another_split_is_another_run(tmp_path):
    (tmp_path / "out").mkdir()
    s = session(tmp_path)
    pipe = ToyPipeline()
    first = runs.open_run(s.output_dir, runs.record(s.template, s.spec, s.params, pipe.identity(None), pipe.split(None)), s.log)
    other = runs.record(s.template, s.spec, s.params, "other points", pipe.split(None))
    assert runs.open_run(s.output_dir, other, s.log) != first
    rec = runs.record(s.template, s.spec, s.params, "toy points", pipe.split(None))
    assert runs.changes(rec, {**rec, "data": "x"}) == "the data changed"
    params = {**rec["params"], "epochs": 9}
    assert runs.changes(rec, {**rec, "params": params}) == "epochs 3 -> 9"


def test_a_checkpoint_that_does_not_fit_the_model_is_one_line(tmp_path):
    from kit.errors import KitError

    (tmp_path / "out").mkdir()
    s = session(tmp_path, lr=0.05)
    data = ToyPipeline().load()
    cv = train_folds(s, ToyPipeline(), data)
    wider = ToyPipeline()
    wider.model = lambda data, pretrained=True, fit_rows=None: __import__("torch").nn.Linear(6, 4)
    s = dataclasses.replace(s)
    with pytest.raises(KitError, match=r"fold0\.pt does not fit this run's model \(size mismatch for weight"):
        ensemble(s, wider, data, cv.folder)


def test_predict_mode_keeps_the_cells_model_path():
    """The model folder's location is not the model: an inference kernel that mounts it elsewhere says so in its
    cell (the training run's absolute path would not be found); an empty cell takes the training run's."""
    from kit.params import TextParams
    from kit.runtime.trained import Trained, apply

    trained = Trained(Path("run"), "text", {"model_path": "/kaggle/input/deberta/v3", "max_length": 256, "epochs": 3},
                      {}, "0.1.0")
    notes = []
    p = apply(trained, TextParams(model_path="deberta-v3-small"), notes.append)
    assert p.model_path == "deberta-v3-small" and p.max_length == 256 and p.epochs == 3
    assert apply(trained, TextParams(), notes.append).model_path == "/kaggle/input/deberta/v3"
