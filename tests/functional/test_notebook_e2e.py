"""The built notebook end to end through papermill, on a kernel that cannot import kit."""
import os
import subprocess
import sys
from pathlib import Path

import dogs
import numpy as np
import pandas as pd
import pytest
from toys import run_folder

from kit import smoke
from kit.build import bundle, execute
from kit.errors import KitError

pytestmark = pytest.mark.e2e
HELDOUT = dict(device="cpu", epochs=2, folds=2, batch_size=16, model_name="test_efficientnet", pretrained=False, image_size=64)


def check_probabilities(path: Path, sample_path: Path) -> pd.DataFrame:
    sub, sample = pd.read_csv(path, dtype={"id": str}), pd.read_csv(sample_path, dtype={"id": str})
    assert list(sub.columns) == list(sample.columns)
    assert sub["id"].tolist() == sample["id"].tolist()
    p = sub.drop(columns="id").to_numpy()
    assert np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()
    assert np.allclose(p.sum(1), 1.0, atol=1e-4)
    return sub


def test_smoke_dog_breed(tmp_path, monkeypatch):
    secret = "feedfacefeedfacefeedfacefeedface"
    monkeypatch.setenv("KAGGLE_KEY", secret)  # present in the kernel's environment, as on a laptop
    result = smoke.run("dog-breed", root=tmp_path)
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".ipynb", ".log", ".csv", ".json"):
            assert secret not in path.read_text(errors="ignore"), path
    assert result.rows == 16
    check_probabilities(result.submission, result.input_dir / "sample_submission.csv")
    executed = result.executed.read_text()
    assert "kit 0.1.0 from /" in executed and ".zip/kit/__init__.py" in executed  # the embedded runtime ran
    assert "out-of-fold log_loss over 2 of 2 folds" in executed
    working = result.submission.parent
    assert (working / "history.png").is_file() and (working / "samples.png").is_file()
    assert sorted(p.name for p in run_folder(working).glob("*.pt")) == ["fold0.meta.pt", "fold0.pt", "fold1.meta.pt", "fold1.pt"]


def test_kit_free_kernel_cannot_import_kit(tmp_path):
    nb = tmp_path / "probe.ipynb"
    import nbformat

    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import kit")],
                                            metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                     "display_name": "Python 3"}}), nb)
    with pytest.raises(KitError, match="ModuleNotFoundError: No module named 'kit'"):
        execute.run(nb, tmp_path / "out.ipynb", {}, cwd=tmp_path)


def test_built_notebook_on_unseen_dog_breed_data(tmp_path, kaggle_user):
    built = bundle.build("dog-breed", tmp_path / "bundle")
    data = dogs.make(tmp_path / "data")
    out = tmp_path / "out"
    values = {**HELDOUT, "data_dir": str(data), "output_dir": str(out)}
    execute.run(built.notebook, tmp_path / "executed.ipynb", values, cwd=tmp_path)
    sub = check_probabilities(out / "submission.csv", data / "sample_submission.csv")
    assert sub.shape == (20, 121)
    unseen = sub[dogs.UNSEEN].to_numpy()
    seen = sub[dogs.BREEDS].to_numpy()
    assert seen.mean() > unseen.mean()  # even two short epochs learn which breeds exist at all


def run_cli(tmp_path: Path, data: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "kit", "run", "dog-breed", "--data", str(data), "--output", str(tmp_path / "out")]
    args += [a for k, v in HELDOUT.items() for a in ("-p", f"{k}={v!r}".replace("'", '"').replace("False", "false"))]
    return subprocess.run(args + list(extra), capture_output=True, text=True, cwd=tmp_path, env={**os.environ}, timeout=600)


def assert_one_line_error(out: subprocess.CompletedProcess, tmp_path: Path, expected: str) -> None:
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "out" / "submission.csv").exists()


def test_missing_data_folder(tmp_path):
    assert_one_line_error(run_cli(tmp_path, tmp_path / "nowhere"), tmp_path,
                          "is not a folder; point it at the competition's data")


def test_data_not_under_kaggle_input(tmp_path, monkeypatch, kaggle_user):
    (tmp_path / "input" / "some-other-comp").mkdir(parents=True)
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path / "input"))
    nb = bundle.build("dog-breed", tmp_path / "bundle").notebook
    with pytest.raises(KitError, match=r"competition data not found: looked in .*dog-breed-identification "
                                       r".*attached: some-other-comp"):
        execute.run(nb, tmp_path / "executed.ipynb", {**HELDOUT, "output_dir": str(tmp_path / "out")}, cwd=tmp_path)


def test_label_absent_from_sample_submission(tmp_path):
    data = dogs.make(tmp_path / "data", per_breed=3)
    labels = pd.read_csv(data / "labels.csv")
    labels.loc[4, "breed"] = "cheshire_cat"
    labels.to_csv(data / "labels.csv", index=False)
    assert_one_line_error(run_cli(tmp_path, data), tmp_path,
                          "class 'cheshire_cat' (row 6) is not a column of the sample submission")


def test_corrupt_jpegs_stop_the_run_when_many(tmp_path):
    data = dogs.make(tmp_path / "data", per_breed=3)
    victims = sorted((data / "train").iterdir())[:3]
    dogs.corrupt(victims[0])
    dogs.corrupt(victims[1], "garbage")
    victims[2].unlink()
    out = run_cli(tmp_path, data, "-p", 'fallback="none"')  # by default such a run submits the prior (test_fallback_e2e)
    assert_one_line_error(out, tmp_path, "3 of 24 train images could not be decoded")
    assert f"train/{victims[0].name}" in out.stderr


def test_one_corrupt_jpeg_among_many_is_named_and_left_out(tmp_path):
    data = dogs.make(tmp_path / "data", per_breed=14)
    victim = sorted((data / "train").iterdir())[5]
    dogs.corrupt(victim)
    out = run_cli(tmp_path, data)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"1 of 112 train images could not be decoded and are left out of training: train/{victim.name}" in out.stdout
    check_probabilities(tmp_path / "out" / "submission.csv", data / "sample_submission.csv")
