"""Every template mirrors its parameter contract, is a Jupytext pair, and has what the build needs."""
import ast
import dataclasses
import shutil

import jupytext
import pytest
from papermill.translators import PythonTranslator

from kit import params, templates
from kit.build import cells, notebook, pairing, skeleton
from kit.errors import KitError
from kit.spec import Spec

TEMPLATES = sorted(templates.names())
CONTRACT = ["data_dir", "output_dir", "device", "epochs", "folds", "lr", "seed", "batch_size", "time_budget_s"]


def parameters_cell(template: str):
    nb = jupytext.read(notebook.NOTEBOOKS / f"{template}.py")
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    values = {}
    for node in ast.parse(cells[0].source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        values[target.id] = ast.literal_eval(node.value)
    return values


@pytest.mark.parametrize("template", TEMPLATES)
def test_parameters_cell_mirrors_the_contract(template):
    cell = parameters_cell(template)
    cls = templates.get(template).params
    fields = {f.name: f.default for f in dataclasses.fields(cls)}
    assert list(cell)[:-1] == list(fields)  # same names, same order, then `competition`
    assert {k: tuple(cell[k]) if isinstance(cell[k], list) else cell[k] for k in fields} == fields  # a list is a tuple's literal
    for name in CONTRACT:
        assert name in cell
    spec = Spec.from_dict(cell["competition"])
    assert spec.template == template


@pytest.mark.parametrize("template", TEMPLATES)
def test_papermill_reads_every_parameter(template):
    """papermill's own reading of the cell (what `papermill --help-notebook` lists, and what it checks `-p` against)
    skips a line with two `=`, a comment's `<=` included: that parameter is then unknown to it."""
    nb = jupytext.read(notebook.NOTEBOOKS / f"{template}.py")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert [p.name for p in PythonTranslator.inspect(cell)] == list(parameters_cell(template))


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_has_kernelspec_and_one_runtime_cell(template):
    nb = jupytext.read(notebook.template_path(template))
    assert nb.metadata["kernelspec"]["name"] == "python3"
    tags = [t for c in nb.cells for t in c.metadata.get("tags", [])]
    assert tags.count("parameters") == 1 and tags.count(notebook.RUNTIME_TAG) == 1
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_pairs_are_in_sync():
    assert pairing.differences() == []


def test_pairing_check_catches_an_edit(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    shutil.copytree(notebook.NOTEBOOKS, folder)
    py = folder / "cnn.py"
    py.write_text(py.read_text().replace("epochs: int = 10", "epochs: int = 11"))
    monkeypatch.setattr(pairing, "NOTEBOOKS", folder)
    problems = pairing.differences()
    assert len(problems) == 1 and "cnn.py and cnn.ipynb differ" in problems[0]


def test_from_namespace_checks_types_like_the_build():
    ns = {"epochs": "3", "folds": 2}
    with pytest.raises(KitError, match="parameters cell: epochs must be an integer, got '3'"):
        params.from_namespace(params.CnnParams, ns)
    p = params.from_namespace(params.CnnParams, {"epochs": 3, "lr": 1, "unrelated_global": object()})
    assert p.epochs == 3 and p.lr == 1.0 and isinstance(p.lr, float)


def test_parameters_cells_and_docs_are_written_from_params():
    """Each notebook's parameters cell and docs/parameters.md's tables say what kit/params.py says (make sync)."""
    assert cells.differences() == []


def test_the_check_sees_a_comment_that_drifted(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    shutil.copytree(notebook.NOTEBOOKS, folder)
    py = folder / "lstm.py"
    py.write_text(py.read_text().replace("# LSTM units per direction", "# units"))
    monkeypatch.setattr(cells, "NOTEBOOKS", folder)
    assert cells.differences() == ["lstm.py differs from kit/params.py or kit/build/skeleton.py: run make sync"]


def test_the_step_cells_are_the_skeletons(tmp_path, monkeypatch):
    """A step cell edited in one notebook is drift (make lint fails); make sync writes the skeleton's back, with
    what the template's record adds (tabular's plot_importance) and its prose untouched."""
    folder = tmp_path / "notebooks"
    shutil.copytree(notebook.NOTEBOOKS, folder)
    monkeypatch.setattr(cells, "NOTEBOOKS", folder)
    py = folder / "tabular.py"
    shipped = py.read_text()
    py.write_text(shipped.replace("_ = plot_importance(session, cv)\n", "").replace("cv = train_folds(", "cv = run.train_folds("))
    assert cells.differences() == ["tabular.py differs from kit/params.py or kit/build/skeleton.py: run make sync"]
    cells.differences(write=True)
    assert py.read_text() == shipped and cells.differences() == []


def test_every_notebook_runs_the_skeletons_steps():
    """The six notebooks' code cells are the skeleton's but for the template's name and its record's plots."""
    for name in TEMPLATES:
        nb = jupytext.read(notebook.NOTEBOOKS / f"{name}.py")
        code = [c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
        assert code == [s.split("\n", 1)[1] for s in skeleton.steps(templates.get(name))]
    assert "plot_importance" in skeleton.steps(templates.get("tabular"))[-1]
    assert "plot_importance" not in skeleton.steps(templates.get("cnn"))[-1]


def test_the_sequence_notebooks_differ_only_in_their_model():
    """lstm and transformer share every step; they differ in the intro, the model's parameters and its description."""
    lstm, transformer = (jupytext.read(notebook.NOTEBOOKS / f"{t}.py") for t in ("lstm", "transformer"))
    assert len(lstm.cells) == len(transformer.cells)
    differ = [(a.cell_type, a.metadata.get("tags", [])) for a, b in zip(lstm.cells, transformer.cells)
              if a.source.replace("lstm", "T") != b.source.replace("transformer", "T")]
    assert differ == [("markdown", []), ("code", ["parameters"]), ("markdown", [])]
