"""The templates are Jupytext pairs: notebooks/<t>.py (what we edit and review) and <t>.ipynb (what the
build reads). `python -m kit.build.pairing` fails when a pair differs; `make sync` rewrites the .ipynb."""
from __future__ import annotations

import sys

import jupytext
from jupytext.compare import NotebookDifference, compare_notebooks

from kit.build.notebook import NOTEBOOKS


def differences() -> list[str]:
    found = []
    for py in sorted(NOTEBOOKS.glob("*.py")):
        ipynb = py.with_suffix(".ipynb")
        if not ipynb.exists():
            found.append(f"{ipynb} is missing: run make sync")
            continue
        try:
            compare_notebooks(jupytext.read(ipynb), jupytext.read(py), fmt="py:percent")
        except NotebookDifference as e:
            found.append(f"{py.name} and {ipynb.name} differ: run make sync ({str(e).splitlines()[0]})")
    return found


def main() -> int:
    problems = differences()
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
