"""One notebook skeleton: the code cells every template notebook runs (the kit runtime, then kit.run's verbs in
order), written from here into each notebooks/<t>.py between its own prose, as kit.build.cells writes the
parameters cell. What only one template does is a field of its record (`plots`), not an edit of its notebook.

A template with no notebook of its own (one registered from outside kit: kit.templates.register) is the skeleton
with plain headings for prose (`text`).
"""
from __future__ import annotations

import re
from pathlib import Path

from kit.build import parameters
from kit.errors import KitError
from kit.templates import Template

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
RUNTIME_TAG = "kit-runtime"
# a cell starts at its `# %%` line; the parameters cell is kit.build.cells', the markdown cells are the template's
CELL_START = re.compile(r"^(?=# %%)", re.M)
HEADER = """\
# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""


def steps(record: Template) -> list[str]:
    """The code cells after the parameters cell, each with its `# %%` line: the runtime, set-up, data, training,
    submission, plots."""
    registered = (f'from kit.templates import register\n\nregister("{record.origin}")  # a template from outside kit: '
                  "its record, registered before set-up\n" if record.origin else "\n")
    plots = ", ".join(record.plots)
    return [
        f'# %% tags=["{RUNTIME_TAG}"]\n'
        "import kit  # a built kernel replaces this cell with the embedded kit runtime\n\n"
        'print(f"kit {kit.__version__} from {kit.__file__}")',
        f'# %%\nfrom kit.run import start\n{registered}session = start("{record.name}", globals())',
        "# %%\nfrom kit.run import create_pipeline, load_data\n\npipe = create_pipeline(session)\n"
        "data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)",
        "# %%\nfrom kit.run import train_folds\n\ncv = train_folds(session, pipe, data)",
        "# %%\nfrom kit.run import write_submission\n\nsubmission = write_submission(session, pipe, data)\n"
        "submission.head()",
        f"# %%\nfrom kit.run import {plots}\n\n" + "\n".join(f"_ = {verb}(session, cv)" for verb in record.plots),
    ]


def render(text: str, record: Template) -> str:
    """A template notebook's text (py:percent) with its step cells, in order, as the skeleton writes them; its
    markdown cells and parameters cell as they are."""
    chunks = CELL_START.split(text)
    code = [i for i, c in enumerate(chunks) if c.startswith("# %%") and not c.startswith(("# %% [markdown]",
                                                                                          '# %% tags=["parameters"]'))]
    wanted = steps(record)
    if len(code) != len(wanted):
        raise KitError(f"the {record.name} notebook has {len(code)} code cells besides its parameters cell; the "
                       f"skeleton (kit/build/skeleton.py) writes {len(wanted)}: keep its cells in the skeleton's order")
    for i, cell in zip(code, wanted):
        body = chunks[i].rstrip("\n")
        chunks[i] = cell + chunks[i][len(body):]
    return "".join(chunks)


def text(record: Template) -> str:
    """The notebook of a template with none of its own: the skeleton's cells under plain headings, and a
    parameters cell that kit.build.cells fills from the record's params class."""
    competition = parameters.literal({"template": record.name}, "# the config's [competition] and [data]")
    prose = [f"# # The {record.name} template, by kit\n#\n# Built from kit's notebook skeleton.",
             "# ## The kit runtime", "# ## 1. Set-up", "# ## 2. Data", "# ## 3. Training", "# ## 4. Submission",
             "# ## 5. Curves"]
    cells = [f"# %% [markdown]\n{prose[0]}", f'# %% tags=["parameters"]\n\ncompetition: dict = {competition}']
    for heading, step in zip(prose[1:], steps(record)):
        cells += [f"# %% [markdown]\n{heading}", step]
    return HEADER + "\n" + "\n\n".join(cells) + "\n"
