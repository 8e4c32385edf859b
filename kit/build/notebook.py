"""Build a kernel notebook: the template with the config's values written into its parameters cell and the
kit runtime embedded, no outputs, and stable cell ids, so the same inputs give the same bytes."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jupytext
import nbformat

from kit import templates
from kit.build import cells, embed, parameters, skeleton
from kit.build.packages import Packages
from kit.build.skeleton import NOTEBOOKS, RUNTIME_TAG
from kit.errors import KitError


def template_path(template: str) -> Path:
    path = NOTEBOOKS / f"{template}.ipynb"
    if not path.is_file():
        raise KitError(f"template '{template}' not found at {path}")
    return path


def template_notebook(template: str) -> nbformat.NotebookNode:
    """notebooks/<template>.ipynb; for a template registered from outside kit, which has none, the skeleton's
    notebook with its parameters cell written from its params class."""
    record = templates.get(template)
    if record.origin and not (NOTEBOOKS / f"{template}.ipynb").is_file():
        return jupytext.reads(cells.render_notebook(skeleton.text(record), record.params), fmt="py:percent")
    return nbformat.read(template_path(template), as_version=4)


def build(template: str, values: Mapping[str, Any], internet: bool = False,
          packages: Packages | None = None) -> nbformat.NotebookNode:
    """The template with `values` in its parameters cell and the runtime embedded; `internet=False` (a
    kernel with the internet off) keeps the Hugging Face hub offline from the first import on; `packages`
    are installed from their attached dataset before kit is imported."""
    nb = template_notebook(template)
    return normalize(nb, embed.runtime_cell(embed.runtime_zip(), offline=not internet, packages=packages), values)


def normalize(nb: nbformat.NotebookNode, runtime_source: str, values: Mapping[str, Any]) -> nbformat.NotebookNode:
    """Write `values` into the parameters cell, in place of the template's defaults (not in a cell after it:
    papermill replaces such a cell when it runs a notebook with parameters, and a person who edits the
    parameters cell would see the edit overridden), swap in the embedded runtime, and drop outputs,
    execution counts and run records."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("jupytext", None)  # the pairing is the template's business, not the kernel's
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(params) != 1:
        raise KitError(f"template needs exactly one cell tagged 'parameters', found {len(params)}")
    params[0].source = parameters.fill(params[0].source, values)
    runtime_cells = 0
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if not cell.metadata.get("tags", True):
            cell.metadata.pop("tags")
        if RUNTIME_TAG in cell.metadata.get("tags", []):
            cell.source = runtime_source
            cell.metadata["jupyter"] = {"source_hidden": True}
            cell.metadata["_kg_hide-input"] = True  # Kaggle's own flag: its editor shows the cell folded
            runtime_cells += 1
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    if runtime_cells != 1:
        raise KitError(f"template needs exactly one cell tagged '{RUNTIME_TAG}', found {runtime_cells}")
    nbformat.validate(nb)
    return nb


def dumps(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"
