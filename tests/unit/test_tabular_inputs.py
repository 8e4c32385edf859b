"""Bad inputs to the tabular template, each one line that says what to do (a category only the test table has:
one warning, and the run goes on), read by the pipeline as the notebook's data step reads them; and one of
them through `kit run`, where it is the CLI's last line and no traceback."""
import numpy as np
import pandas as pd
import pytest

from kit import cli, config, smoke
from kit.data import frames
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.run.start import start
from kit.runtime import hardware

SHIP, TAXI = "spaceship-titanic", "new-york-city-taxi-fare-prediction"


@pytest.fixture
def data(tmp_path):
    def make(comp: str = SHIP):
        folder = tmp_path / comp
        smoke.make_dataset(config.load(comp).spec, folder, seed=1)
        return folder
    return make


def load(tmp_path, folder, comp: str = SHIP):
    values = {**config.load(comp).parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "out")}
    session = start("tabular", values)
    return create_pipeline(session).load(), session


def edit(path, change) -> None:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    change(frame).to_csv(path, index=False)


def stops(tmp_path, folder, comp: str = SHIP) -> str:
    with pytest.raises(KitError) as e:
        load(tmp_path, folder, comp)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_a_missing_target_column(tmp_path, data):
    folder = data()
    edit(folder / "train.csv", lambda f: f.drop(columns="Transported"))
    assert stops(tmp_path, folder).startswith("train.csv: no column 'Transported' (it has: PassengerId, HomePlanet, ")


def test_test_columns_that_differ_from_the_training_tables(tmp_path, data):
    folder = data()
    edit(folder / "test.csv", lambda f: f.drop(columns=["Age"]).rename(columns={"Spa": "spa"}))
    assert stops(tmp_path, folder) == ("test.csv: no column 'Age' of the training table (2 such: Age, Spa); the model reads "
                                       "every feature in both tables: leave them out with [data] drop_columns, or name "
                                       "the features in [data] features")


def test_an_empty_column(tmp_path, data):
    folder = data()
    edit(folder / "train.csv", lambda f: f.assign(VIP=""))
    assert stops(tmp_path, folder) == ("train.csv: column 'VIP' is empty in every row (1 such); leave it out with "
                                       "[data] drop_columns")


def test_a_string_target_under_a_regression_metric(tmp_path, data):
    folder = data(TAXI)
    edit(folder / "labels.csv", lambda f: f.assign(fare_amount="$" + f["fare_amount"]))
    line = stops(tmp_path, folder, TAXI)
    assert line.startswith("labels.csv, column 'fare_amount': metric rmse needs numeric targets, found '$")


def test_a_category_only_the_test_table_has_is_one_warning(tmp_path, data, capsys):
    folder = data()
    edit(folder / "test.csv", lambda f: f.assign(HomePlanet=np.where(np.arange(len(f)) < 3, "Pluto", f["HomePlanet"])))
    table, session = load(tmp_path, folder)
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("WARNING")]
    assert warnings == ["WARNING: test.csv: categories the training table never has, read as missing: 'HomePlanet' 3 rows "
                        "('Pluto')"]
    assert len(table.test.codes) == 150  # the run goes on


def test_a_table_too_big_for_the_memory_without_train_rows(tmp_path, data, monkeypatch):
    folder = data()
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 100_000)
    line = stops(tmp_path, folder)
    assert line.startswith("train.csv: about 550 rows, 0.0 GB once read, more than the 30% of the 0.0 GB of free memory")
    assert line.endswith("to train on a sample of its rows") and "set train_rows (such as " in line


def test_a_test_table_too_big_for_the_memory_says_it_is_read_whole(tmp_path, data, monkeypatch):
    """train_rows samples the training table: with it set, a test table that does not fit is no case for it (every
    test row is predicted)."""
    folder = data()
    reading, estimate = [], frames.estimate
    monkeypatch.setattr(frames, "estimate", lambda path, *a: reading.append(path.name) or estimate(path, *a))
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 10_000 if reading[-1:] == ["test.csv"] else 10**12)
    values = {**config.load(SHIP).parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "out"),
              "train_rows": 500}
    with pytest.raises(KitError) as e:
        create_pipeline(start("tabular", values)).load()
    line = str(e.value)
    assert line.startswith("test.csv: about ") and "set train_rows (such as" not in line
    assert line.endswith("every test row is predicted, so it is read whole: lower train_rows to leave it room, leave out "
                         "columns the model need not read ([data] drop_columns), or run where there is more memory")


@pytest.mark.e2e
def test_kit_run_says_it_in_one_line_without_a_traceback(tmp_path, data, capsys):
    folder = data()
    edit(folder / "test.csv", lambda f: f.drop(columns=["Age"]))
    args = ["run", SHIP, "--data", str(folder), "--output", str(tmp_path / "out"), "-p", "fallback=none"]  # no prior
    assert cli.main(args + [a for k, v in config.load(SHIP).smoke.items() for a in ("-p", f"{k}={v}")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert not [line for line in err if "Traceback" in line]
    assert err[-1].startswith("error: test.csv: no column 'Age' of the training table (1 such: Age)")
    assert not (tmp_path / "out" / "submission.csv").exists()
