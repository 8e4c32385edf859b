"""The seq2seq template's run folder: the table of training pairs is a file beside the fold checkpoints (their
recipe names it and its digest, no longer carries it), and the predict-mode kernel on the run's output routes the
test tokens through that table as the training run did (a missing or another file: tests/unit/test_seq2seq.py)."""
import pytest

from kit import cli, config, smoke
from kit.data import normalize
from kit.runtime import checkpoint
from kit.runtime.run_folder import RunFolder
from kit.smoke.seq2seq import make_model_folder

pytestmark = pytest.mark.e2e
COMP = "text-normalization-challenge-english-language"


def kit_run(tmp_path, folder, model, out, *extra) -> list[str]:
    cfg = config.load(COMP)
    values = {**cfg.smoke, "model_path": str(model), "epochs": 1, "max_pairs": 300}
    args = ["run", COMP, "--data", str(folder), "--output", str(out)]
    return args + [a for k, v in values.items() for a in ("-p", f"{k}={v}")] + [a for e in extra for a in ("-p", e)]


def routes(log: str) -> str:
    return next(line for line in log.splitlines() if line.startswith("routes "))


def test_the_table_is_a_file_of_the_run_and_predict_mode_routes_through_it(tmp_path, capsys):
    cfg = config.load(COMP)
    folder = tmp_path / "input" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=3)
    model = make_model_folder(cfg.spec, folder, tmp_path / "input", {"model_path": "tiny"}, seed=3)
    trained = tmp_path / "trained"
    assert cli.main(kit_run(tmp_path, folder, model, trained)) == 0, capsys.readouterr().err[-2000:]
    run = RunFolder(next((trained / "checkpoints").glob("*/run.json")).parent)
    recipe = checkpoint.load(run.fold(0).meta)["kit"]["recipe"]
    assert "table" not in recipe and "unchanged" not in recipe  # the checkpoint no longer grows with the table
    lookup = normalize.read(run.path / recipe["lookup"], recipe["lookup_digest"])
    assert len(lookup) == recipe["table_pairs"] > 100 and run.path / "lookup.json" in run.published()
    capsys.readouterr()

    predicted = tmp_path / "predicted"
    assert cli.main(kit_run(tmp_path, folder, model, predicted, "mode=predict", f"model_dir={trained}")) == 0, \
        capsys.readouterr().err[-2000:]
    log, inferred = (trained / "kit.log").read_text(), (predicted / "kit.log").read_text()
    assert "predict mode" in inferred and " table: " in routes(inferred) and routes(inferred) == routes(log)
    assert (predicted / "submission.csv").read_text() == (trained / "submission.csv").read_text()

