"""Labels held as lists rather than one column per label.

- Ragged lines (mlsp-2013-birds' rec_labels_test_hidden.txt): a header, then `id,label,label...` a line; a bare
  `id` is a row with no label, and `id,?` a test row whose labels are hidden.
- Comma lists in one column (freesound-audio-tagging-2019's `labels`, "Bark,Dog" in quotes).

Both become 0/1 rows over the classes a sample submission names, one clear line for a label that is not one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.errors import KitError

HIDDEN = "?"  # a ragged line's mark of a test row


@dataclass(frozen=True)
class Ragged:
    ids: tuple[str, ...]  # every line's id, in file order
    labels: tuple[tuple[str, ...], ...]  # each line's labels (() for a bare id, and for a test row)
    test: np.ndarray  # (lines,) bool: the line is `id,?`


def read_ragged(path: Path) -> Ragged:
    """The lines of a ragged label file after its header; blank lines are skipped."""
    ids, labels, test = [], [], []
    seen: dict[str, int] = {}
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split(",")]
        if not line.strip():
            continue
        if not cells[0] or any(not c for c in cells[1:]):
            raise KitError(f"{path.name} line {number}: {line!r} has an empty cell; each line is id,label,label... "
                           "(a bare id for no label, id,? for a test row)")
        if cells[0] in seen:
            raise KitError(f"{path.name} line {number}: id {cells[0]} is on line {seen[cells[0]]} already")
        hidden = HIDDEN in cells[1:]
        if hidden and len(cells) > 2:
            raise KitError(f"{path.name} line {number}: {line!r} mixes '?' (a test row) with labels")
        seen[cells[0]] = number
        ids.append(cells[0])
        labels.append(() if hidden else tuple(cells[1:]))
        test.append(hidden)
    if not ids:
        raise KitError(f"{path.name}: no line after the header; it holds one line per recording, id,label,label...")
    return Ragged(tuple(ids), tuple(labels), np.array(test, bool))


def label_rows(lists: list[tuple[str, ...]] | pd.Series, classes: tuple[str, ...], where: str,
               separator: str = ",") -> np.ndarray:
    """(rows, classes) float32 0/1 of each row's labels: tuples, or cells of `separator`-joined labels (an empty
    cell: none). A label that is no class is one line naming the row (`where` names the file)."""
    index = {str(c): i for i, c in enumerate(classes)}
    rows = lists.fillna("").astype(str).tolist() if isinstance(lists, pd.Series) else list(lists)
    out = np.zeros((len(rows), len(index)), np.float32)
    for r, row in enumerate(rows):
        labels = [t.strip() for t in row.split(separator) if t.strip()] if isinstance(row, str) else row
        for label in labels:
            if label not in index:
                shown = f"{', '.join(list(index)[:5])}{' ...' if len(index) > 5 else ''}"
                raise KitError(f"{where} row {r + 1}: label '{label}' is not a class of the sample submission ({shown})")
            out[r, index[label]] = 1.0
    return out
