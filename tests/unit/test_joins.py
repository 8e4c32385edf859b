"""Rows from more than one table (kit.data.joins): champs' pairs joined to their atoms, osic's test rows made from the
sample's ids against each patient's first visit; a booster per group (kit.train.per_group); each bad declaration one
line."""
import numpy as np
import pandas as pd
import pytest

from kit import config
from kit.data import joins
from kit.errors import KitError
from kit.models import boosters
from kit.pipelines import confidence
from kit.spec import Spec
from kit.train import per_group

CHAMPS = {"slug": "champs-scalar-coupling", "template": "tabular", "metric": "group_log_mae", "score_groups": "type",
          "target_column": "scalar_coupling_constant", "join_table": "structures.csv",
          "join_keys": ["molecule_name", "atom_index"], "join_on": ["atom_index_0", "atom_index_1"],
          "join_columns": ["atom"], "join_distance": ["x", "y", "z"]}


@pytest.fixture
def atoms(tmp_path):
    pd.DataFrame({"molecule_name": ["m1", "m1", "m1", "m2", "m2"], "atom_index": [0, 1, 2, 0, 1],
                  "atom": ["C", "H", "H", "N", "H"], "x": [0.0, 1.0, 0.0, 0.0, 0.0], "y": [0.0, 0.0, 2.0, 0.0, 0.0],
                  "z": [0.0, 0.0, 0.0, 0.0, 3.0], "charge": [0.1] * 5}).to_csv(tmp_path / "structures.csv", index=False)
    return tmp_path


def pairs(*rows):
    return pd.DataFrame(rows, columns=["id", "molecule_name", "atom_index_0", "atom_index_1", "type"])


def test_each_pair_reads_both_atoms_and_their_distance_in_float32(atoms):
    spec = Spec.from_dict(CHAMPS)
    table = joins.read_table(spec, atoms)
    assert list(table.columns) == ["molecule_name", "atom_index", "atom", "x", "y", "z"]  # not the charge
    out = joins.join(spec, table, pairs((0, "m1", 1, 0, "1JHC"), (1, "m1", 2, 1, "2JHH"), (2, "m2", 1, 0, "1JHN"),
                                        (3, "m9", 1, 0, "1JHC")), "train.csv")
    assert out["atom_0"].tolist()[:3] == ["H", "H", "H"] and out["atom_1"].tolist()[:3] == ["C", "H", "N"]
    assert out["distance"].dtype == np.float32
    np.testing.assert_allclose(out["distance"].to_numpy()[:3], [1.0, np.sqrt(5.0), 3.0], rtol=1e-6)
    assert pd.isna(out["atom_0"].iloc[3]) and np.isnan(out["distance"].iloc[3])  # a molecule structures.csv lacks
    assert "x_0" not in out and "charge_0" not in out  # the coordinates make the distance; not asked, not brought


def test_joined_columns_no_test_row_has_are_left_out_of_both_tables_with_one_warning(atoms):
    """MLE-bench's champs: structures.csv holds the training molecules only."""
    spec = Spec.from_dict(CHAMPS)
    sample = pd.DataFrame({"id": [5], "scalar_coupling_constant": [0]})
    said = []
    train, test = joins.build(spec, atoms, pairs((0, "m1", 1, 0, "1JHC")).assign(scalar_coupling_constant=90.0),
                              pairs((5, "m7", 1, 0, "1JHC")), sample, ("train.csv", "test.csv"), said.append)
    assert "atom_0" not in train and "distance" not in test and "type" in test
    assert said == ["structures.csv holds no row for any of test.csv's rows, so atom_0, atom_1, distance are missing in "
                    "every test row (3 such): the model does not read them"]


@pytest.mark.parametrize("change, match", [
    ({"join_table": "atoms.csv"}, r"^join table \(\[data\] join_table\) 'atoms.csv' not found in "),
    ({"join_keys": ["molecule", "atom_index"]}, r"^structures.csv: no column 'molecule', which \[data\] join_keys names "),
    ({"join_columns": ["element"]}, r"^structures.csv: no column 'element', which \[data\] join_columns names"),
    ({"join_keys": ["molecule_name", "atom"]}, r"^structures.csv: the keys molecule_name, atom \(\[data\] join_keys\) "
                                               r"repeat in some rows; a join needs one row per key$"),
])
def test_a_join_table_or_key_that_is_not_there_is_one_line(atoms, change, match):
    with pytest.raises(KitError, match=match):
        joins.read_table(Spec.from_dict({**CHAMPS, **change}), atoms)


def test_a_join_column_the_rows_lack_is_one_line(atoms):
    spec = Spec.from_dict({**CHAMPS, "join_on": ["atom_index_0", "atom_b"]})
    with pytest.raises(KitError, match=r"^test.csv: no column 'atom_b' to join structures.csv on \(\[data\] join_keys, "):
        joins.join(spec, joins.read_table(spec, atoms), pairs((0, "m1", 1, 0, "1JHC")), "test.csv")


def test_a_join_on_column_with_missing_values_is_one_line(atoms):
    """An integer key read beside an empty cell is a float column; its NaN cannot be cast to the table's int64."""
    spec = Spec.from_dict(CHAMPS)
    rows = pairs((0, "m1", 1, 0, "1JHC"), (1, "m1", None, 1, "2JHH"))
    with pytest.raises(KitError, match=r"^train.csv: column 'atom_index_0' \(\[data\] join_on\) is empty in 1 rows, "
                                       r"such as row 3, and structures.csv's key atom_index is an integer; fill or drop "
                                       r"those rows"):
        joins.join(spec, joins.read_table(spec, atoms), rows, "train.csv")


@pytest.mark.parametrize("change, match", [
    ({"join_keys": []}, "a join needs join_table, join_keys and join_on together"),
    ({"join_on": ["atom_index_0"]}, "join_distance is the distance between two joined rows"),
    ({"score_groups": ""}, "metric group_log_mae needs score_groups"),
    ({"metric": "mae"}, r"score_groups is read by a grouped metric only \(group_log_mae\)"),
    ({"baseline_key": "molecule_name"}, "baseline_key and baseline_order go together"),
    ({"template": "cnn", "join_table": "", "join_keys": [], "join_on": [], "join_columns": [], "join_distance": [],
      "score_groups": "", "metric": "mae", "id_parts": ["a", "b"]}, "id_parts is not read by the cnn template"),
])
def test_a_declaration_that_cannot_be_read_is_one_line_at_the_config(change, match):
    with pytest.raises(KitError, match=rf"^competition: .*{match}"):
        Spec.from_dict({**CHAMPS, **change})


OSIC = {"slug": "osic-pulmonary-fibrosis-progression", "template": "tabular", "metric": "laplace",
        "id_column": "Patient_Week", "target_column": "FVC", "submission_columns": ["FVC"],
        "id_parts": ["Patient", "Weeks"], "baseline_key": "Patient", "baseline_order": "Weeks"}


def visits(*rows):
    return pd.DataFrame(rows, columns=["Patient", "Weeks", "FVC", "Age"])


def test_osics_test_rows_are_the_samples_ids_read_against_each_patients_first_visit():
    spec = Spec.from_dict(OSIC)
    train = visits(("A", 10, 2000, 60), ("A", 2, 2200, 60), ("A", 30, 1900, 60), ("B", -3, 3000, 70))
    test = visits(("ID_7", 4, 2500, 66))  # a patient id may hold "_" itself: the id splits at its last
    sample = pd.DataFrame({"Patient_Week": ["ID_7_-2", "ID_7_4", "ID_7_40"], "FVC": 2000, "Confidence": 100})
    train, test = joins.build(spec, None, train, test, sample, ("train.csv", "test.csv"), print)
    assert train["base_FVC"].tolist() == [2200, 2200, 2200, 3000] and train["Weeks_since_base"].tolist() == [8, 0, 28, 0]
    assert train["rows_after"].tolist() == [1, 2, 0, 0]  # score_mask = "rows_after < 3": the grader's last visits
    assert test["Patient"].tolist() == ["ID_7"] * 3 and test["Weeks"].tolist() == [-2, 4, 40]
    assert test["base_FVC"].tolist() == [2500] * 3 and test["Weeks_since_base"].tolist() == [-6, 0, 36]
    assert test["Patient_Week"].tolist() == sample["Patient_Week"].tolist()
    with pytest.raises(KitError, match=r"^test.csv: Patient 'ID_8' has no row of its own to read as its baseline"):
        joins.build(spec, None, None, visits(("ID_7", 4, 2500, 66)),
                    sample.assign(Patient_Week=["ID_8_1", "ID_7_4", "ID_7_5"]), ("", "test.csv"), print)
    with pytest.raises(KitError, match=r"^test.csv: id 'ID7' has no \"_\" to split into Patient, Weeks"):
        joins.test_rows(spec, sample.assign(Patient_Week=["ID7", "ID_7_4", "ID_7_5"]), test, "test.csv")


def test_a_baseline_order_that_is_no_number_is_one_line():
    spec = Spec.from_dict(OSIC)
    train = visits(("A", "week 2", 2000, 60), ("A", "week 9", 2200, 60))
    with pytest.raises(KitError, match=r"^train.csv: column 'Weeks' \(\[data\] baseline_order\) holds text such as "
                                       r"'week 2', not numbers; the gap to each group's first row is a difference along "
                                       r"it: name a numeric column"):
        joins.baseline(spec, train, train, "train.csv")


def test_a_booster_per_group_learns_each_groups_own_rule_and_survives_its_checkpoint():
    rng = np.random.default_rng(0)
    kinds = pd.Categorical.from_codes(rng.integers(0, 2, 400), categories=range(3))  # level 2: no training row
    x = pd.DataFrame({"d": rng.random(400).astype(np.float32), "type": kinds})
    y = np.where(kinds.codes == 0, 100 * x["d"], -5 * x["d"]).astype(np.float32)  # opposite slopes per group
    settings = boosters.Settings(learning_rate=0.3, early_stopping_rounds=20)
    task = boosters.Task("regression", l1=True)
    model = per_group.PerGroup(lambda: boosters.create("xgboost", task, settings), "type")
    model.fit(x[:300], y[:300], x[300:], y[300:], 200, lambda done: False)
    assert set(model.members) == {"0", "1"} and model.rounds > 0
    error = np.abs(model.predict(x[300:]) - y[300:]).mean()
    single = boosters.create("xgboost", task, boosters.Settings(learning_rate=0.3, early_stopping_rounds=20, max_depth=1))
    single.fit(x[:300], y[:300], x[300:], y[300:], 200, lambda done: False)
    assert error < 0.5 * np.abs(single.predict(x[300:]) - y[300:]).mean()  # stumps cannot split type and d at once
    back = per_group.restore(model.state(), settings)
    np.testing.assert_allclose(back.predict(x[300:]), model.predict(x[300:]), rtol=1e-6)
    unseen = x[:3].assign(type=pd.Categorical.from_codes([2, 2, 2], categories=range(3)))
    assert back.predict(unseen).tolist() == [model.fallback] * 3  # a group no booster saw: the training median


def test_predict_mode_reads_the_columns_the_rows_are_built_from():
    """The inference kernel reads only the test columns the model needs: a join's keys and a baseline's columns too."""
    assert joins.sources(Spec.from_dict(CHAMPS), ["atom_index_0", "type", "distance"]) == [
        "molecule_name", "atom_index_0", "atom_index_1"]
    assert joins.sources(Spec.from_dict(OSIC), ["Weeks", "base_FVC", "base_Sex", "Weeks_since_base"]) == [
        "Patient", "Weeks", "FVC", "Sex"]


@pytest.mark.parametrize("slug, what", [("champs-scalar-coupling", "groups"), ("osic-pulmonary-fibrosis-progression",
                                                                               "confidence")])
def test_a_blend_under_a_grouped_or_confidence_metric_is_one_line(tmp_path, slug, what):
    path = tmp_path / f"{slug}.toml"
    path.write_text(config.resolve(slug).read_text() + '\n[blend]\nruns = ["you/run-a", "you/run-b"]\n')
    with pytest.raises(KitError, match=rf"^{path}: \[blend\] under metric .*hold no {what}; remove \[blend\]"):
        config.load(str(path))


def test_the_confidence_is_fitted_on_the_rows_the_metric_scores():
    """osic's grader scores each patient's last visits, whose errors are the largest: the confidence is fitted on
    the out-of-fold rows the score mask keeps, where one is set."""
    oof = [{"pred": np.array([[100.0], [100.0], [100.0], [100.0]]), "target": np.array([100.0, 100.0, 500.0, 900.0]),
            "weight": np.array([0.0, 0.0, 1.0, 1.0])}]
    out = confidence.cut(np.array([[1.0], [2.0]]), oof, {}, print)
    assert out[:, 0].tolist() == [1.0, 2.0] and out[:, 1] == pytest.approx(np.sqrt(2) * 600)
    assert confidence.cut(np.array([[1.0]]), [{k: v for k, v in oof[0].items() if k != "weight"}], {}, print)[0, 1] == \
        pytest.approx(np.sqrt(2) * 300)
    assert confidence.cut(np.array([[1.0]]), [], {"confidence": 123.0}, print)[0, 1] == 123.0  # no folds: the spread


def test_a_group_no_booster_saw_gets_the_classes_shares_under_a_classification():
    rng = np.random.default_rng(1)
    x = pd.DataFrame({"d": rng.random(120).astype(np.float32),
                      "g": pd.Categorical.from_codes(np.repeat([0, 1], 60), categories=range(3))})
    y = np.tile([0, 1, 2, 2], 30)
    task = boosters.Task("multiclass", classes=3)
    model = per_group.PerGroup(lambda: boosters.create("xgboost", task, boosters.Settings(early_stopping_rounds=5)), "g")
    model.fit(x[:100], y[:100], x[100:], y[100:], 20, lambda done: False)
    unseen = model.predict(x[:2].assign(g=pd.Categorical.from_codes([2, 2], categories=range(3))))
    assert unseen.shape == (2, 3) and unseen[0] == pytest.approx([0.25, 0.25, 0.5])
