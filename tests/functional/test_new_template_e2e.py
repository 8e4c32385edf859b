"""A template is its own rooms plus one record: the test suite's own template (mean_template: a pipeline built
from kit's base class, its params, its footprint) is registered in one line and runs end to end through the
notebook `make kernel` builds for it from kit's skeleton, without a file of kit naming it."""
import os
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from kit import templates
from kit.build import bundle, execute
from kit.errors import KitError

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent  # mean_template's folder: the kernel imports the record from it, as this process does
CONFIG = """
[competition]
slug = "some-values"
template = "mean"
metric = "rmse"

[data]
train = "train.csv"
test = "test.csv"
sample_submission = "sample_submission.csv"
id_column = "id"
target_column = "value"

[kernel]
title = "Mean of some values"

[params]
device = "cpu"
epochs = 2
folds = 2
batch_size = 8
"""


@pytest.fixture
def registry(monkeypatch):
    """kit's registry, to which this test's registration is undone after it."""
    monkeypatch.setattr(templates, "TEMPLATES", dict(templates.TEMPLATES))
    return templates


def values(folder: Path, rows: int = 40, test_rows: int = 10) -> Path:
    rng = np.random.default_rng(0)
    folder.mkdir()
    pd.DataFrame({"id": [f"r{i}" for i in range(rows)], "value": rng.normal(5.0, 2.0, rows)}).to_csv(folder / "train.csv",
                                                                                                      index=False)
    test = [f"t{i}" for i in range(test_rows)]
    pd.DataFrame({"id": test}).to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"id": test, "value": 0.0}).to_csv(folder / "sample_submission.csv", index=False)
    return folder


def test_a_template_from_outside_kit_runs_through_its_notebook(tmp_path, registry, kaggle_user):
    registry.register("mean_template:MEAN")  # the one line that adds the template
    config = tmp_path / "mean.toml"
    config.write_text(CONFIG)
    built = bundle.build(str(config), tmp_path / "bundle")
    code = "".join(c.source for c in nbformat.read(built.notebook, as_version=4).cells if c.cell_type == "code")
    assert 'register("mean_template:MEAN")' in code  # the kernel registers it as this process did
    data, out = values(tmp_path / "data"), tmp_path / "out"
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    execute.run(built.notebook, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out)},
                cwd=tmp_path, env={"PYTHONPATH": path})
    sub = pd.read_csv(out / "submission.csv")
    sample = pd.read_csv(data / "sample_submission.csv")
    assert list(sub.columns) == ["id", "value"] and sub["id"].tolist() == sample["id"].tolist()
    train = pd.read_csv(data / "train.csv")["value"]
    assert np.isfinite(sub["value"]).all()
    assert np.abs(sub["value"] - train.mean()).max() < 0.5 * train.std()  # the constant is about the training mean
    executed = (tmp_path / "executed.ipynb").read_text()
    assert "out-of-fold rmse over 2 of 2 folds" in executed


def test_a_name_kit_knows_is_not_taken(registry):
    with pytest.raises(KitError, match="a template named 'cnn' is known already"):
        registry.register("mean_template:CNN_AGAIN")
