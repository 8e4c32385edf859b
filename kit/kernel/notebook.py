"""Build a kernel notebook: the template, parameterised by papermill (prepare only, nothing runs), with the
kit runtime embedded, no outputs, and stable cell ids, so the same inputs give the same bytes."""
from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat

from kit.errors import KitError
from kit.kernel import embed

TEMPLATES = Path(__file__).resolve().parents[2] / "notebooks"
RUNTIME_TAG = "kit-runtime"
CONFIG_HEADER = "# From the competition config (they override the defaults above):\n"


def template_path(template: str) -> Path:
    path = TEMPLATES / f"{template}.ipynb"
    if not path.is_file():
        raise KitError(f"template '{template}' not found at {path}")
    return path


def build(template: str, parameters: Mapping[str, Any]) -> nbformat.NotebookNode:
    """The template with `parameters` injected after its parameters cell and the runtime embedded."""
    import papermill

    # papermill's parameter inspection warns about lines it cannot parse (a dict holding "u_out == 0");
    # the values are injected all the same, and kit checks them itself
    logging.getLogger("papermill").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prepared.ipynb"
        papermill.execute_notebook(
            str(template_path(template)),
            str(out),
            parameters=dict(parameters),
            prepare_only=True,
            kernel_name="python3",
            language="python",
            progress_bar=False,
        )
        nb = nbformat.read(out, as_version=4)
    return normalize(nb, embed.runtime_cell(embed.runtime_zip()))


def normalize(nb: nbformat.NotebookNode, runtime_source: str) -> nbformat.NotebookNode:
    """Fold papermill's injected values into the parameters cell, swap in the embedded runtime, and drop
    outputs, execution counts and papermill's run records.

    The config's values end the `parameters` cell instead of living in papermill's `injected-parameters`
    cell: papermill replaces that cell when it runs a notebook with parameters (the config would be lost),
    and it checks run-time parameters against the names in the parameters cell."""
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("jupytext", None)  # the pairing is the template's business, not the kernel's
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    nb.cells = [c for c in nb.cells if c not in injected]
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(params) != 1:
        raise KitError(f"template needs exactly one cell tagged 'parameters', found {len(params)}")
    if injected:
        values = injected[0].source.split("\n", 1)[-1].strip()
        params[0].source = f"{params[0].source.rstrip()}\n\n{CONFIG_HEADER}{values}\n"
    runtime_cells = 0
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if not cell.metadata.get("tags", True):
            cell.metadata.pop("tags")
        if RUNTIME_TAG in cell.metadata.get("tags", []):
            cell.source = runtime_source
            cell.metadata["jupyter"] = {"source_hidden": True}
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
