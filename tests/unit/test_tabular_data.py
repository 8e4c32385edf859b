"""Tables as the tabular template reads them: each column's kind decided once from the training table and
applied the same way to the test table; large tables read in chunks, sampled, and checked against the memory."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit.data import features, frames
from kit.errors import KitError
from kit.runtime import hardware

TRAIN, TEST = Path("train.csv"), Path("test.csv")


def table(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "planet": rng.choice(["Earth", "Mars", "Europa"], n).astype(object),
        "asleep": pd.Series(rng.choice([True, False, None], n), dtype=object),  # booleans with gaps: objects
        "group": rng.choice([12, 33, 167, 194, 206, 227], n),  # an integer code of few values: a category
        "siblings": rng.integers(0, 6, n),  # an integer count of few values (0 to 10): a number
        "age": rng.integers(0, 80, n),  # of many: a number
        "spend": rng.exponential(100, n),
        "when": [f"2015-0{1 + i % 9}-1{i % 10} 0{i % 10}:30:00 UTC" for i in range(n)],
        "code": ["".join(rng.choice(list("ABCD"), 6)) for _ in range(n)],  # one length, too many values: by position
        "name": [f"Ann {i * 7919 % 100_003}" for i in range(n)],  # of many lengths and values: left out
        "cabin": pd.Series([f"C{i // 2}" if i % 4 else None for i in range(n)], dtype=object),  # shared by two: a category
    })


def infer(train, test, given=(), categorical=(), exclude=frozenset(), log=None):
    lines = []
    recipe = features.infer(train, test, given, categorical, set(exclude), TRAIN, TEST, log or lines.append)
    return recipe, lines


def test_each_column_gets_its_kind_and_names_left_out_say_why():
    recipe, lines = infer(table(), table())
    assert recipe["kinds"] == {"planet": "category", "asleep": "category", "group": "category", "siblings": "number",
                               "age": "number", "spend": "number", "when": "datetime", "code": "code:6", "cabin": "category"}
    assert recipe["levels"]["planet"] == ["Earth", "Europa", "Mars"] and recipe["levels"]["asleep"] == ["False", "True"]
    assert recipe["levels"]["group"] == ["12", "33", "167", "194", "206", "227"]  # in the order of their values
    assert recipe["levels"]["code"] == [["A", "B", "C", "D"]] * 6
    assert len(lines) == 1 and "name (200 values, 0% of its rows share one)" in lines[0] and "[data] categorical" in lines[0]
    kept, _ = infer(table(), table(), categorical=("name", "age"))
    assert kept["kinds"]["name"] == "category" and kept["kinds"]["age"] == "category"


def test_the_test_table_is_read_with_the_training_tables_levels_and_unseen_ones_are_one_warning():
    train, test = table(), table(40)
    test.loc[:4, "planet"] = "Pluto"
    test["group"] = test["group"].astype(float)  # a gap elsewhere makes pandas read integers as floats: 3.0 is 3
    recipe, _ = infer(train, test)
    warnings = []
    encoded = features.encode(test, recipe, "test.csv", warnings.append)
    planet = encoded.names.index("planet") - encoded.numbers.shape[1]
    assert (encoded.codes[:5, planet] == -1).all() and (encoded.codes[5:, planet] >= 0).all()
    assert warnings == ["test.csv: categories the training table never has, read as missing: 'planet' 5 rows ('Pluto')"]
    group = encoded.names.index("group") - encoded.numbers.shape[1]
    assert (encoded.codes[:, group] == test["group"].astype(int).map([12, 33, 167, 194, 206, 227].index)).all()


def test_datetimes_become_their_parts_and_missing_values_stay_missing():
    frame = pd.DataFrame({"when": ["2009-06-15 17:26:21 UTC", None], "x": [1.5, np.nan]})
    recipe = {"kinds": {"when": "datetime", "x": "number"}, "levels": {}}
    encoded = features.encode(frame, recipe)
    assert encoded.names == ("when_year", "when_month", "when_day", "when_weekday", "when_hour", "when_days", "x")
    assert encoded.numbers[0, :5].tolist() == [2009, 6, 15, 0, 17]  # a Monday
    assert encoded.numbers[0, 5] == pytest.approx(14410.727, abs=1e-3)  # days since 1970
    assert np.isnan(encoded.numbers[1]).all()


def test_a_frame_for_the_boosters_holds_categories_of_fixed_levels_or_codes():
    recipe, _ = infer(table(), table())
    encoded = features.encode(table(30), recipe)
    frame = encoded.frame(np.arange(10))
    assert len(frame) == 10 and list(frame.columns) == list(encoded.names)
    assert isinstance(frame["planet"].dtype, pd.CategoricalDtype) and list(frame["planet"].cat.categories) == [0, 1, 2]
    assert frame["code_0"].dtype == "category" and frame["age"].dtype == np.float32
    assert encoded.frame(categories="codes")["planet"].dtype == np.int32


def test_names_the_boosters_would_refuse_are_made_safe_and_unique():
    assert features.safe_names(["a[1]", "a<1>", "b:c", "x y"]) == ("a_1_", "a_1__", "b_c", "x y")


@pytest.mark.parametrize("change, message", [
    (lambda tr, te: te.drop(columns=["age", "spend"]),
     "test.csv: no column 'age' of the training table (2 such: age, spend); the model reads every feature in both "
     "tables: leave them out with [data] drop_columns, or name the features in [data] features"),
    (lambda tr, te: tr.assign(spend=np.nan),
     "train.csv: column 'spend' is empty in every row (1 such); leave it out with [data] drop_columns"),
])
def test_a_feature_the_test_lacks_or_an_empty_column_is_one_line(change, message):
    train, test = table(), table()
    out = change(train, test)
    if "spend" in out and out["spend"].isna().all():
        train = out
    else:
        test = out
    with pytest.raises(KitError) as e:
        infer(train, test)
    assert str(e.value) == message


def test_left_out_columns_are_not_asked_of_the_test_table():
    recipe, _ = infer(table(), table().drop(columns=["age"]), exclude={"age"})
    assert "age" not in recipe["kinds"]


def write(path: Path, n: int) -> pd.DataFrame:
    frame = pd.DataFrame({"key": [f"k{i:06d}" for i in range(n)], "x": np.arange(n, dtype=np.float64) / 7,
                          "count": np.arange(n) % 5, "label": np.where(np.arange(n) % 3, "a", "b")})
    frame.to_csv(path, index=False)
    return frame


def test_tables_are_read_with_numbers_downcast_and_ids_as_text(tmp_path):
    path = tmp_path / "t.csv"
    write(path, 100)
    frame = frames.read_table(path, "key")
    assert frame["x"].dtype == np.float32 and frame["count"].dtype == np.int8
    assert frame["key"].tolist()[:2] == ["k000000", "k000001"]


def test_train_rows_draws_that_many_rows_in_file_order_in_chunks_too(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    write(path, 5000)
    lines = []
    small = frames.read_table(path, "key", rows=300, seed=1, log=lines.append)
    assert len(small) == 300 and small["key"].is_monotonic_increasing and small["key"].nunique() == 300
    assert lines == ["t.csv: 5,000 rows; read a sample of 300 drawn at random (train_rows)"]
    monkeypatch.setattr(frames, "LARGE_BYTES", 1000)  # the chunked path, as a 5 GB table takes
    monkeypatch.setattr(frames, "CHUNK_ROWS", 700)
    chunked = frames.read_table(path, "key", rows=300, seed=1, log=lines.append)
    assert len(chunked) == 300 and chunked["key"].is_monotonic_increasing
    assert 0 < chunked["key"].str[1:].astype(int).min() < 200 and chunked["key"].str[1:].astype(int).max() > 4800
    assert lines[-1].startswith("t.csv: about ") and lines[-1].endswith("rows; read a sample of 300 drawn at random (train_rows)")
    assert len(frames.read_table(path, "key")) == 5000


def test_a_table_too_big_for_the_memory_without_train_rows_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "labels.csv"
    write(path, 30_000)
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 2 * 2**20)  # 2 MB free
    with pytest.raises(KitError) as e:
        frames.read_table(path, "key")
    message = str(e.value)
    assert message.startswith("labels.csv: about ") and "rows, 0.0 GB once read, more than the 30% of the 0.0 GB" in message
    assert message.endswith("to train on a sample of its rows") and "set train_rows (such as " in message
    assert len(frames.read_table(path, "key", rows=1000)) == 1000  # what it says to do works


def test_a_table_read_whole_too_big_for_the_memory_says_what_its_caller_says(tmp_path, monkeypatch):
    """A test table is predicted row by row: no sample of it will do, and train_rows (the training table's) is no
    advice for it."""
    path = tmp_path / "test.csv"
    write(path, 30_000)
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 2 * 2**20)
    with pytest.raises(KitError) as e:
        frames.read_table(path, "key", whole="every test row is predicted: run where there is more memory")
    assert str(e.value).endswith("of free memory a table may take; every test row is predicted: run where there is more "
                                 "memory") and "set train_rows" not in str(e.value)


def test_only_the_columns_asked_for_are_read_in_chunks_too(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    write(path, 5000)
    assert list(frames.read_table(path, "key", columns=["key", "x", "absent"]).columns) == ["key", "x"]
    whole = frames.estimate(path, "key").memory
    assert frames.estimate(path, "key", ["key", "count"]).memory < whole
    monkeypatch.setattr(frames, "LARGE_BYTES", 1000)
    monkeypatch.setattr(frames, "CHUNK_ROWS", 700)
    chunked = frames.read_table(path, "key", columns=["key", "count"])
    assert list(chunked.columns) == ["key", "count"] and len(chunked) == 5000
