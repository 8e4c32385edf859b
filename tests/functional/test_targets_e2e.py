"""Issue 25's targets, folds and metrics end to end at smoke size: a config alone, run by `kit run` (the built
notebook under papermill), writing what the competition's grader accepts, and the bad inputs stopped in one line.
lmsys' one-hot winners, jigsaw-unintended's bias AUC and its cut, and detecting-insults' sample without ids are
their shipped configs' gallery runs (test_gallery_e2e.py), which check what the runs here checked."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit import cli, config, smoke
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.run import start
from kit.smoke.text import essays, make_model_folder

pytestmark = pytest.mark.e2e


def write_config(tmp_path: Path, comp: str, metric: str, data: dict, data_lines: str = "") -> Path:
    """A shipped config with another metric and [data] values (`data_lines` added to [data] as they are)."""
    text = config.resolve(comp).read_text()
    text = text.replace(f'metric = "{config.load(comp).spec.metric}"', f'metric = "{metric}"', 1)
    kept = [line for line in text.splitlines(keepends=True) if line.split("=")[0].strip() not in data]  # set anew below
    lines = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in data.items()) + data_lines
    path = tmp_path / f"{comp}-{metric.replace('@', '-')}.toml"
    path.write_text("".join(kept).replace("[data]\n", "[data]\n" + lines, 1))
    return path


def kit_run(tmp_path: Path, comp: Path, folder: Path, **params) -> int:
    cfg = config.load(str(comp))
    values = {**cfg.smoke, **params}
    args = ["run", str(comp), "--data", str(folder), "--output", str(tmp_path / "out")]
    return cli.main(args + [a for k, v in values.items() for a in ("-p", f"{k}={str(v).lower() if isinstance(v, bool) else v}")])


def dogs(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    smoke.make_dataset(config.load("dog-breed").spec, folder, seed=1)
    labels = pd.read_csv(folder / "labels.csv")
    labels.assign(litter=np.arange(len(labels)) // 3).to_csv(folder / "labels.csv", index=False)
    return folder


def test_a_cnn_writes_five_breeds_best_first_beside_a_blank_headed_index(tmp_path):
    """Whale's and hotel-id's shape, `Id,Predicted`-like with five labels for map@5, in a sample written with
    pandas' index (iwildcam-2019's `,Id,Category`); folds keep each litter (group_column) on one side."""
    folder = dogs(tmp_path)
    sample = pd.read_csv(folder / "sample_submission.csv")
    top = pd.DataFrame({"id": sample["id"].to_numpy(), "breed": "a b c d e"}, index=np.arange(len(sample)) * 7 + 3)
    top.to_csv(folder / "sample_submission.csv")  # index=True: the header is ",id,breed"
    comp = write_config(tmp_path, "dog-breed", "map@5", {"group_column": "litter"})
    assert kit_run(tmp_path, comp, folder, epochs=3) == 0
    text = (tmp_path / "out" / "submission.csv").read_text().splitlines()
    assert text[0] == ",id,breed"  # as the sample's header: the blank column written blank
    sub = pd.read_csv(tmp_path / "out" / "submission.csv")
    assert sub["Unnamed: 0"].tolist() == top.index.tolist() and sub["id"].tolist() == top["id"].tolist()
    breeds = set(pd.read_csv(folder / "labels.csv")["breed"])
    rows = sub["breed"].str.split(" ")
    assert (rows.map(len) == 5).all() and rows.map(lambda r: len(set(r)) == 5 and set(r) <= breeds).all()
    log = (tmp_path / "out" / "kit.log").read_text()
    assert "out-of-fold map@5 over 2 of 2 folds" in log and "submission     label: breed" in log


def test_a_cnns_folds_follow_the_group_and_fold_columns(tmp_path):
    folder = dogs(tmp_path)
    values = {**config.load("dog-breed").parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "o")}
    values["competition"] = {**values["competition"], "group_column": "litter"}
    pipe = create_pipeline(start("cnn", values))
    data = pipe.load()
    litters = pd.read_csv(folder / "labels.csv").set_index("id")["litter"]
    for train, val in pipe.split(data):
        assert not set(litters[data.ids[train]]) & set(litters[data.ids[val]])
    values["competition"] = {**values["competition"], "group_column": "", "fold_column": "litter"}
    pipe = create_pipeline(start("cnn", values))
    data = pipe.load()
    folds = pipe.split(data)  # the first two of the 20 litters, as folds=2 asks
    assert [sorted(set(litters[data.ids[v]])) for _, v in folds] == [[0], [1]]


def test_kit_run_stops_at_a_fold_column_with_one_fold(tmp_path, capsys):
    folder = dogs(tmp_path)
    labels = pd.read_csv(folder / "labels.csv")
    labels.assign(fold=0).to_csv(folder / "labels.csv", index=False)
    comp = write_config(tmp_path, "dog-breed", "log_loss", {"fold_column": "fold"})
    assert kit_run(tmp_path, comp, folder, fallback="none") == 1  # the one-line stop, not the labels' prior
    err = capsys.readouterr().err.strip().splitlines()
    assert not [line for line in err if "Traceback" in line]
    assert err[-1] == ("error: labels.csv: fold_column 'fold' holds one fold ('0') for every row; it needs two or more to "
                       "validate on one and train on the others (or leave fold_column empty)")


def insults(folder: Path, seed: int = 0, train: int = 160, test: int = 30) -> None:
    """detecting-insults-in-social-commentary's layout at smoke size: train.csv Insult,Date,Comment (no id),
    test.csv Date,Comment, sample_submission_null.csv Insult,Date,Comment in test.csv's order (a Date may be
    empty, a comment may repeat)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    texts, scores = essays(train + test, rng, scores=(1, 6))
    texts = [f'"{t}"' for t in texts]  # the comments come quoted, quotes and all
    texts[-1] = texts[-2]
    dates = [f"201206{d:02d}192155Z" if d % 5 else np.nan for d in rng.integers(1, 29, train + test)]
    table = pd.DataFrame({"Insult": (np.array(scores) == 6).astype(int), "Date": dates, "Comment": texts})
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][["Date", "Comment"]].to_csv(folder / "test.csv", index=False)
    table[train:].assign(Insult=0).to_csv(folder / "sample_submission_null.csv", index=False)


INSULTS = {"train": "train.csv", "test": "test.csv", "sample_submission": "sample_submission_null.csv", "id_column": "",
           "target_column": "Insult", "text_columns": ["Comment"]}


def test_a_test_table_without_ids_must_list_the_samples_rows(tmp_path):
    folder = tmp_path / "input" / "detecting-insults-in-social-commentary"
    insults(folder)
    test = pd.read_csv(folder / "test.csv")
    test[:-1].to_csv(folder / "test.csv", index=False)
    comp = write_config(tmp_path, "learning-agency-lab-automated-essay-scoring-2", "auc", INSULTS)
    cfg = config.load(str(comp))
    model = make_model_folder(cfg.spec, folder, tmp_path / "input", {"model_path": "tiny"}, seed=2)
    values = {**cfg.parameters(smoke=True), "model_path": str(model), "data_dir": str(folder), "output_dir": str(tmp_path / "o")}
    with pytest.raises(KitError, match=r"^test.csv: 29 rows, sample_submission_null.csv 30; with no id_column the test "
                                       r"table's row k is the sample's row k, so both must list the same rows$"):
        create_pipeline(start("text", values)).load()
