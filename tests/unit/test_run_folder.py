"""One owner for a run's folder (kit.runtime.run_folder): the names it gives are those every earlier run wrote, so
older runs still read, and no other module of kit spells one out."""
import re
from pathlib import Path

from kit.runtime import paths, run_folder
from kit.runtime.run_folder import RunFolder

PACKAGE = Path(__file__).resolve().parents[2] / "kit"
OWNER = PACKAGE / "runtime" / "run_folder.py"
# what a module would write to name a run folder's file itself: a fold's f-string, the folder's and the predictions'
# file names as string literals, the fold pattern, the checkpoints/ folder as a path
SPELLED = re.compile(r"""fold\{|fold\*|fold\(\\d|["'](run\.json|latest\.json|batch\.json|\.meta\.pt|\.last\.pt|oof\.csv"""
                     r"""|oof_target\.npy|oof_pred\.npy|oof_index\.npy|test_ids\.csv|test_pred\.npy|test_index\.npy"""
                     r"""|predictions\.json|test_predictions\.csv|checkpoints/)["']|/ ["']checkpoints["']""")


def test_no_module_but_the_owner_spells_a_run_folder_name():
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != OWNER
             for n, line in enumerate(path.read_text().splitlines(), 1) if SPELLED.search(line)]
    assert found == [], "run folder names spelled outside kit/runtime/run_folder.py:\n" + "\n".join(found)


def test_the_pattern_finds_what_the_modules_wrote_before():
    """The spellings the owner took over (as kit.run.folds, kit.runtime.trained, kit.run.batch and kit.run.predictions
    wrote them) are what the test above looks for."""
    before = ['best=folder / f"fold{fold}.pt"', 'folder.glob("fold*.pt")', 'FOLD = re.compile(r"fold(\\d+)\\.pt")',
              'BATCH = "batch.json"', 'RECORD, LATEST = "run.json", "latest.json"',
              'return output_dir / "checkpoints" / key(rec)',
              'TEST_IDS, TEST_PRED, TEST_INDEX, RECORD = "test_ids.csv", "test_pred.npy", "test_index.npy", "predictions.json"',
              'return self.best.with_suffix(".meta.pt")', 'written.startswith("checkpoints/")']
    assert [line for line in before if not SPELLED.search(line)] == []
    assert not SPELLED.search('os.path.join(torch.hub.get_dir(), "checkpoints", name)')  # torch's own folder, not kit's


def test_names_are_the_ones_older_runs_wrote(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "scratch"))
    run = RunFolder.of(tmp_path / "out", "abc123")
    assert run.path == tmp_path / "out" / "checkpoints" / "abc123" and run.name == "abc123"
    assert (run.record.name, run.batch.name, run.latest_file) == ("run.json", "batch.json",
                                                                   tmp_path / "out" / "checkpoints" / "latest.json")
    fold = run.fold(2)
    assert (fold.best, fold.meta, fold.done) == (run.path / "fold2.pt", run.path / "fold2.meta.pt", run.path / "fold2.json")
    assert fold.last == paths.scratch_dir() / "resume" / "abc123" / "fold2.last.pt" == run.resume / "fold2.last.pt"
    assert run_folder.PREDICTION_FILES == ("oof.csv", "oof_target.npy", "oof_pred.npy", "oof_index.npy", "test_ids.csv",
                                           "test_pred.npy", "test_index.npy", "predictions.json")
    assert run_folder.LEGACY == ("test_predictions.csv",) and run_folder.PREDICTIONS_FORMAT == 2


def test_folds_checkpoints_and_what_a_version_keeps(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "scratch"))
    run = RunFolder.of(tmp_path, "abc")
    run.path.mkdir(parents=True)
    for name in ("run.json", "batch.json", "fold0.pt", "fold0.meta.pt", "fold0.json", "fold1.pt", "fold10.pt",
                 "fold10.meta.pt", "fold2.meta.pt", "oof.csv", "predictions.json", "lookup.json", "notes.txt"):
        (run.path / name).write_text("x")
    assert run.folds() == [0, 1, 10]  # best weights, with their .meta.pt or not
    assert run.checkpoints() == {0: run.path / "fold0.pt", 10: run.path / "fold10.pt"}  # fold1's meta is not written yet
    assert run.finished(0) and not run.finished(10) and not run.finished(2)
    assert [p.name for p in run.published()] == ["run.json", "fold0.pt", "fold0.meta.pt", "fold0.json", "fold1.pt", "fold10.pt",
                                            "fold10.meta.pt", "oof.csv", "predictions.json", "lookup.json"]
    assert run_folder.is_run(["run.json", "fold3.pt"]) and not run_folder.is_run(["run.json", "fold3.meta.pt"])
    assert RunFolder.latest(tmp_path) == ""
    run.latest_file.write_text('{"run": "abc"}')
    assert RunFolder.latest(tmp_path) == "abc" == run_folder.latest_of(run.path.parent)
