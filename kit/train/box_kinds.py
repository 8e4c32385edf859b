"""The detection template's kinds of target, registered from its own rooms (kit.train.kinds.register): every test
image's boxes, written as a string per image, not a row of outputs. Predictions reach the submission through the
pipeline's own `submission` (kit.pipelines.detection); these kinds' `to_columns` write what a row of the prior (the
fallback: no fold predicted) is, an image without boxes:

- "boxes": an empty string;
- "boxes_nothing": the sample's class for "no finding" on its 0 0 1 1 box, the class after the findings
  (vinbigdata's "14 1 0 0 1 1");
- "boxes_named": boxes written by their class's name, the nothing-found class's name (the target's last class) on
  its 0 0 1 1 box for an image without them (siim-covid19's "opacity ...", "none 1 0 0 1 1");
- "boxes_points": each box written as its class's name at its centre, `name x y ...`, a page without them empty
  (kuzushiji's "U+306F 1021 604 ..."; kit.pipelines.detection_points).
"""
from __future__ import annotations

import numpy as np

from kit.data import box_strings
from kit.train.kinds import Kind, Target, register


def nothing_string(target: Target) -> str:
    if target.kind == NAMED.name:
        return f"{target.classes[-1]} 1 0 0 1 1"
    return f"{len(target.classes)} 1 0 0 1 1" if target.kind == NOTHING.name else ""


def empty_rows(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    return {target.columns[0]: np.full(len(pred), nothing_string(target), dtype=object)}


def check_submission(cells, sample_cells, folder) -> None:
    """Every cell a string of `label conf x_min y_min x_max y_max` groups (one clear line where not)."""
    for row, text in enumerate(cells.tolist()):
        box_strings.parse_detections(text, row + 2)


def check_points(cells, sample_cells, folder) -> None:
    """Every cell blank or a string of `label x y` groups (one clear line where not)."""
    for row, text in enumerate(cells.tolist()):
        box_strings.parse_points(text, row + 2)


BOXES = register(Kind("boxes", empty_rows, "kit.train.box_kinds:check_submission", one_output=True, masks=True))
NOTHING = register(Kind("boxes_nothing", empty_rows, "kit.train.box_kinds:check_submission", one_output=True, masks=True))
NAMED = register(Kind("boxes_named", empty_rows, "kit.train.box_kinds:check_submission", one_output=True, masks=True))
POINTS = register(Kind("boxes_points", empty_rows, "kit.train.box_kinds:check_points", one_output=True, masks=True))
