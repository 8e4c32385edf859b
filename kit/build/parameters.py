"""The built notebook's parameters cell: each name assigned once, to the config's value where the config sets
it and the template's default otherwise, with the template's comment kept on its line. What a person sees
there is what runs, and editing a value in place is all it takes to change it (papermill still injects its
overrides in a cell after this one)."""
from __future__ import annotations

import ast
import io
import json
import math
import tokenize
from collections.abc import Mapping
from typing import Any

from kit.errors import KitError

INDENT = "    "
WIDTH = 120  # a table's line longer than this wraps its list (jigsaw's nine identity columns), as a person would


def fill(source: str, values: Mapping[str, Any]) -> str:
    """`source` (a parameters cell of `name: type = value  # why` lines) with the values of `values` written
    in place of the template's; a name the cell does not assign is an error."""
    lines = source.splitlines()
    comments = {t.start[0]: t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type == tokenize.COMMENT}  # by line number: a value spanning lines keeps its first line's
    assigned = {}
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and node.value is not None:
            assigned[target.id] = node.value
    unknown = [name for name in values if name not in assigned]
    if unknown:
        raise KitError(f"the template's parameters cell has no '{unknown[0]}' (it assigns: {', '.join(assigned)})")
    # last first, so that the line and column numbers of the values above stay true
    for name in sorted(values, key=lambda n: assigned[n].lineno, reverse=True):
        node = assigned[name]
        first, last = node.lineno - 1, node.end_lineno - 1
        head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset :]
        comment = comments.get(node.lineno, "") if last > first else ""
        text = literal(values[name], comment)
        lines[first : last + 1] = f"{head}{text}{tail}".split("\n")
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def literal(value: Any, comment: str = "") -> str:
    """Python source for a TOML-born value; a table is one key per line (with `comment` after its brace)."""
    if isinstance(value, dict):
        opening = "{" + (f"  {comment}" if comment else "")
        items = [_item(literal(k), v) for k, v in value.items()]
        return "\n".join([opening, *items, "}"])
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # double quotes, as the templates write strings
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, (int, float)):
        return repr(value)
    raise KitError(f"parameter value {value!r} ({type(value).__name__}) cannot be written into a notebook")


def _item(key: str, value: Any) -> str:
    """A table's `key: value,` line; a list that would run past WIDTH is wrapped, its items filled into lines."""
    line = f"{INDENT}{key}: {literal(value)},"
    if len(line) <= WIDTH or not isinstance(value, (list, tuple)):
        return line
    rows, row = [], ""
    for item in (f"{literal(v)}," for v in value):
        if row and len(INDENT * 2) + len(row) + 1 + len(item) > WIDTH:
            rows.append(row)
            row = ""
        row = f"{row} {item}" if row else item
    return "\n".join([f"{INDENT}{key}: [", *(f"{INDENT * 2}{r}" for r in rows + [row]), f"{INDENT}],"])
