"""The built notebook's parameters cell is what runs: each name once, the config's value in place of the
template's default, and a value edited there by hand is the one in force."""
import ast
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from kit import config, smoke
from kit.build import execute, notebook

REPO = Path(__file__).resolve().parents[2]


def parameters_cell(nb) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))


@pytest.mark.parametrize("comp", config.shipped())
def test_each_name_once_with_the_configs_value_and_its_comment(comp):
    cfg = config.load(comp)
    cell = parameters_cell(notebook.build(cfg.spec.template, cfg.parameters())).source
    names = [n.target.id if isinstance(n, ast.AnnAssign) else n.targets[0].id for n in ast.parse(cell).body]
    assert len(names) == len(set(names)), names
    namespace: dict = {}
    exec(cell, namespace)
    for key, value in cfg.parameters().items():
        assert namespace[key] == (list(value) if isinstance(value, tuple) else value), key
    for key in cfg.params:
        line = next(line for line in cell.splitlines() if line.startswith(f"{key}:") or line.startswith(f"{key} ="))
        assert "  # " in line, line  # the template's comment stays beside the config's value
    assert max(len(line) for line in cell.splitlines()) <= 120


def test_make_run_passes_parameter_overrides():
    done = subprocess.run(["make", "-n", "run", "COMP=dog-breed", "DATA=/data", 'P=epochs=2 image_size=64'],
                          cwd=REPO, capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if " -m kit run " in line)
    assert "-p 'epochs=2' -p 'image_size=64'" in line, line


@pytest.mark.e2e
def test_a_value_edited_in_the_cell_is_the_one_in_force(tmp_path):
    cfg = config.load("dog-breed")
    data = tmp_path / "data"
    smoke.make_dataset(cfg.spec, data, seed=3)
    nb = notebook.build("cnn", {**cfg.parameters(smoke=True), "epochs": 3})
    cell = parameters_cell(nb)
    # as a person does it: the first assignment of each name they see, its value changed in place
    for name, new in (("epochs", "1"), ("image_size", "48")):
        pattern = rf"^({name}(?:: \w+)? = )[^#\n]*?(  #|$)"
        assert re.search(pattern, cell.source, flags=re.M), cell.source
        cell.source = re.sub(pattern, rf"\g<1>{new}\2", cell.source, count=1, flags=re.M)
    built = tmp_path / "kernel.ipynb"
    built.write_text(notebook.dumps(nb))
    out = tmp_path / "out"
    out.mkdir()
    execute.run(built, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out)}, cwd=out)
    log = (out / "kit.log").read_text()
    assert "epoch  1/1" in log and "epoch  2/" not in log, log[-3000:]
    assert re.search(r"^parameters .*epochs=1, .*image_size=48", log, flags=re.M), log[:3000]
