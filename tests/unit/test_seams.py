"""The seams of issue 36: the notebook's submission verb lives in its own room, the one loop is handed one record,
and what a target's kind decides is read from its record (kit.train.kinds.KINDS), never from a switch on its name."""
import ast
import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kit.run
from kit import templates
from kit.build import skeleton
from kit.pipelines import base
from kit.run import blending, submission
from kit.train.kinds import KINDS
from kit.train.loop import fit
from kit.train.results import FoldFit

PACKAGE = Path(__file__).resolve().parents[2] / "kit"
# modules whose "kind" is another idea than a target's: a booster's task, a column's, a mask's encoding (segmentation),
# a saved model's, a blend source's
OTHER_KINDS = {"models/boosters.py", "data/features.py", "pipelines/segmentation_data.py", "train/segmentation.py",
               "data/mask_augment.py", "build/weights.py", "build/metadata.py"}


def switches(source: str, names: set[str]) -> list[str]:
    """Comparisons of something named `kind` (an attribute or a variable) with a target kind's name, or a tuple of
    them: a switch on the kind's name that its record should answer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        named_kind = any(isinstance(s, ast.Attribute) and s.attr.endswith("kind") or isinstance(s, ast.Name)
                         and s.id.endswith("kind") for s in sides)
        constants = [c.value for s in sides for c in ([s] if isinstance(s, ast.Constant) else
                     s.elts if isinstance(s, ast.Tuple | ast.List | ast.Set) else []) if isinstance(c, ast.Constant)]
        if named_kind and any(c in names for c in constants):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_switch_finder_finds_a_switch():
    source = ('if t.kind == "ordinal": pass\nx = s.kind in ("multi", "tags")\nif kind != "rle": pass\n'
              'if t.record.spaced: pass\nif task.mode == "binary": pass\n')
    assert sorted(switches(source, {"ordinal", "multi", "tags", "rle", "binary"})) == [
        "line 1: t.kind == 'ordinal'", "line 2: s.kind in ('multi', 'tags')", "line 3: kind != 'rle'"]


def test_no_module_switches_on_a_target_kinds_name():
    names = set(KINDS) | {"pixels", "files", "rle"}  # segmentation's, registered from its rooms
    assert {"probs", "label", "ordinal", "values", "tags"} <= names  # the scan looks for real names
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in OTHER_KINDS or name == "train/kinds.py":
            continue
        hits = switches(path.read_text(), names)
        if hits:
            found[name] = hits
    assert found == {}


def test_the_shared_kinds_table_lists_no_mask_kind_and_segmentations_rooms_register_them():
    probe = "import kit.train.targets as t\nprint(sorted(t.KINDS))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PACKAGE.parent,
                         env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}).stdout.strip()
    assert out == "['binary', 'label', 'multi', 'onehot', 'ordinal', 'probs', 'soft', 'tags', 'value', 'values']"
    from kit.pipelines import segmentation_data  # makes segmentation's targets: their kinds are registered with it
    assert segmentation_data.mask_kinds.RLE is KINDS["rle"]
    segmentations = {k for k, kind in KINDS.items() if kind.masks and not kind.check.startswith("kit.train.box_kinds:")}
    assert sorted(segmentations) == ["files", "pixels", "rle"]  # beside detection's boxes, where its rooms were imported
    assert templates.get("segmentation").kinds == "kit.train.mask_kinds"  # for a resource plan made without it


def test_the_notebooks_submission_verb_is_the_submission_rooms():
    assert kit.run.write_submission is submission.write_submission
    assert submission.write_submission.__module__ == "kit.run.submission"
    assert not hasattr(blending, "write_submission")  # the blend is one of the verb's cases, not its home
    cell = next(c for c in skeleton.steps(templates.get("cnn")) if "write_submission" in c)
    assert "from kit.run import write_submission" in cell


def test_fold_prediction_has_a_room_of_its_own():
    from kit.run import ensemble
    assert {"ensemble", "predict_fold", "finite"} <= set(vars(ensemble))
    assert {"fold_sum", "fold_mean"} <= set(vars(base.Pipeline))  # how a template's folds are gathered (detection fuses)
    own = {n for n, f in vars(submission).items() if inspect.isfunction(f) and f.__module__ == submission.__name__}
    assert own == {"write_submission", "write_own"}


def test_fit_is_handed_one_record():
    assert list(inspect.signature(fit).parameters) == ["job"]
    fields = [f.name for f in dataclasses.fields(FoldFit)]
    assert fields == ["model", "objective", "train", "val", "cfg", "precision", "files", "log", "desc", "budget", "fold",
                      "monitor", "collective", "val_rows"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        FoldFit(None, None, [], [], None, None, None).desc = "x"
