"""The parameters cell of every template notebook, and the parameter tables of docs/parameters.md, written from
kit/params.py (each field's default and doc): one source, so the three never disagree. The notebooks' step cells
are written here too, from the one skeleton (kit.build.skeleton) and each template's record.

`python -m kit.build.cells` fails when a notebook's cells or the docs page differ from what params.py and the
skeleton say; `make sync` runs it with `--write` (then pairs the .ipynb files).
"""
from __future__ import annotations

import dataclasses
import re
import sys
import typing

from kit import params, templates
from kit.build import parameters, skeleton
from kit.build.skeleton import NOTEBOOKS

DOCS_PAGE = NOTEBOOKS.parent / "docs" / "parameters.md"
TABLE = re.compile(r"(<!-- parameters: (\w+) -->\n)(.*?)(<!-- end -->)", re.S)
CELL = re.compile(r'(# %% tags=\["parameters"\]\n)(.*?)(\ncompetition: dict = )', re.S)


def cell_lines(cls: type[params.TrainParams]) -> str:
    """The parameters cell's assignments, default and comment each (the `competition` table is the template's own)."""
    hints = typing.get_type_hints(cls)
    lines = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        annotation = f": {hint.__name__}" if hint in (str, int, float, bool) else ""  # a union: no one type to name
        comment = params.doc(cls, f.name)
        lines.append(f"{f.name}{annotation} = {parameters.literal(f.default)}" + (f"  # {comment}" if comment else ""))
    return "\n".join(lines)


def table(section: str) -> str:
    """A markdown table of the parameters every template has ("common"), or of one template's own."""
    classes = {t.name: t.params for t in templates.TEMPLATES.values()}
    base = {f.name for f in dataclasses.fields(params.TrainParams)}
    if section == "common":
        names, shown = [f.name for f in dataclasses.fields(params.TrainParams)], classes
    else:
        names = [f.name for f in dataclasses.fields(classes[section]) if f.name not in base]
        shown = {section: classes[section]}
    rows = ["| name | default | meaning |", "|---|---|---|"]
    for name in names:
        defaults, meanings = _by_template(name, shown)
        rows.append(f"| `{name}` | {defaults} | {meanings} |")
    return "\n".join(rows) + "\n"


def _by_template(name: str, classes: dict[str, type]) -> tuple[str, str]:
    """The default and the meaning of `name`, each followed by the templates where it differs."""
    values = {t: (parameters.literal(_default(cls, name)), params.doc(cls, name)) for t, cls in classes.items()}
    first = next(iter(values.values()))
    out = []
    for index in (0, 1):
        usual = first[index]
        other: dict[str, list[str]] = {}
        for t, value in values.items():
            if value[index] != usual:
                other.setdefault(value[index], []).append(t)
        text = f"`{usual}`" if index == 0 else (usual or "")
        for value, where in other.items():
            shown = f"`{value}`" if index == 0 else value
            text += f"; {', '.join(where)}: {shown}"
        out.append(text.replace("|", "\\|"))
    return out[0], out[1]


def _default(cls: type, name: str):
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def render_notebook(text: str, cls: type[params.TrainParams]) -> str:
    return CELL.sub(lambda m: m.group(1) + cell_lines(cls) + m.group(3), text, count=1)


def render_docs(text: str) -> str:
    return TABLE.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)


def differences(write: bool = False) -> list[str]:
    """What differs from params.py and the skeleton: each of kit's notebooks' parameters cell and step cells, and
    the docs page's tables (rewritten with `write`)."""
    found = []
    targets = [(NOTEBOOKS / f"{t.name}.py", lambda text, t=t: skeleton.render(render_notebook(text, t.params), t))
               for t in templates.TEMPLATES.values() if not t.origin]
    targets.append((DOCS_PAGE, render_docs))
    for path, render in targets:
        text = path.read_text(encoding="utf-8")
        wanted = render(text)
        if wanted != text:
            if write:
                path.write_text(wanted, encoding="utf-8")
            else:
                found.append(f"{path.name} differs from kit/params.py or kit/build/skeleton.py: run make sync")
    return found


def main(argv: list[str] | None = None) -> int:
    problems = differences(write="--write" in (argv if argv is not None else sys.argv[1:]))
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
