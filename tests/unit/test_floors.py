"""kit reads bottom up: base records < runtime < data < models < train < pipelines < run; the build side (build,
smoke, cli, config) stands apart and ships in no kernel. These tests read the imports of every module."""
import ast
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kit.build import embed

PACKAGE = Path(__file__).resolve().parents[2] / "kit"
# floor 2 in three storeys, data < models < train: a model builder never imports the loop, a data path neither
FLOORS = {"base": 0, "runtime": 1, "data": 2.0, "models": 2.1, "train": 2.2, "pipelines": 3, "run": 4}
BASE = ("kit", "kit.errors", "kit.files", "kit.fields", "kit.metric_records", "kit.spec", "kit.params", "kit.templates")
BUILD = ("kit.build", "kit.smoke", "kit.cli", "kit.config", "kit.__main__")


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path) -> dict[str, list[tuple[str, bool]]]:
    """{module: [(kit module it imports, whether the import sits inside a function)]} for every module of the
    package at `root`. `from kit.x import y` counts as kit.x.y when y is a module, else as kit.x."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    found: dict[str, list[tuple[str, bool]]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        inside = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(f)}
        out = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names]
            else:
                continue
            out += [(t, id(node) in inside) for t in targets if t == root.name or t.startswith(f"{root.name}.")]
        found[name] = out
    return found


def floor(module: str) -> int | None:
    """A kernel module's floor; None for the build side."""
    if module.split(".")[:2] in [b.split(".") for b in BUILD]:
        return None
    if module in BASE:
        return FLOORS["base"]
    return FLOORS[module.split(".")[1]]


def problems(graph: dict[str, list[tuple[str, bool]]]) -> list[str]:
    """Imports up a floor, into the build side, or inside a function, on the kernel side; and cycles."""
    out = []
    for module, targets in sorted(graph.items()):
        mine = floor(module)
        if mine is None:
            continue
        for target, in_function in targets:
            theirs = floor(target)
            if theirs is None:
                out.append(f"{module} imports the build side: {target}")
            elif theirs > mine:
                out.append(f"{module} imports up a floor: {target}")
            if in_function:
                out.append(f"{module} imports {target} inside a function")
    out += [f"cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return out


def cycles(graph: dict[str, list[tuple[str, bool]]]) -> list[list[str]]:
    """The import cycles between modules (a package's __init__ importing its own modules is no cycle of theirs)."""
    edges = {m: sorted({t for t, _ in ts if t in graph and t != m}) for m, ts in graph.items()}
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in edges[node]:
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def test_every_import_points_down_a_floor_without_cycles():
    assert problems(imports(PACKAGE)) == []


@pytest.mark.parametrize("source, line, expected", [
    ("runtime/budget.py", "from kit.train import loop", "kit.runtime.budget imports up a floor: kit.train.loop"),
    ("data/images.py", "def _f():\n    from kit.runtime import paths",
     "kit.data.images imports kit.runtime.paths inside a function"),
    ("run/start.py", "from kit.build import push", "kit.run.start imports the build side: kit.build.push"),
    ("train/step.py", "from kit.train import loop", "kit.train.step -> kit.train.loop"),  # in whichever cycle is walked first
], ids=["upward", "in-function", "build-side", "cycle"])
def test_the_floor_check_finds_each_kind_of_problem(tmp_path, source, line, expected):
    """The check itself fails on each kind of import it forbids: a copy of the package with one import added."""
    root = tmp_path / "kit"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    path = root / source
    path.write_text(f"{path.read_text()}\n{line}\n")
    assert any(expected in problem for problem in problems(imports(root)))


def test_the_kernel_zip_ships_no_build_module_and_everything_it_imports():
    names = zipfile.ZipFile(io.BytesIO(embed.runtime_zip())).namelist()
    shipped = {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names}
    assert not [n for n in shipped if floor(n) is None], "build-only modules in the kernel zip"
    assert {"kit.run", "kit.run.folds", "kit.pipelines.cnn", "kit.runtime.session", "kit.templates"} <= shipped
    graph = imports(PACKAGE)
    missing = {t for m in shipped for t, _ in graph[m] if t not in shipped}
    assert missing == set(), f"the kernel imports modules the zip lacks: {missing}"


# what only the segmentation template reads: masks, their run-length codes, canvases and tiles, and mask metrics
SEGMENTATION_ONLY = ("kit.train.mask_metrics", "kit.train.mask_kinds", "kit.train.volume_metrics",
                     "kit.data.masks", "kit.data.rle", "kit.data.canvas", "kit.data.tiles", "kit.data.bands",
                     "kit.data.scans", "kit.data.tiffs", "kit.data.stitch")


@pytest.mark.parametrize("template", ["cnn", "text", "tabular", "sequence"])
def test_a_template_without_masks_imports_no_segmentation_module(template):
    """The segmentation template's rooms stay out of the others' import closure: a fresh interpreter that imports
    one of their pipelines holds none of them (a shared table or check that names a mask module drags it in)."""
    probe = (f"import sys, kit.pipelines.{template}\n"
             f"print(' '.join(sorted(m for m in {SEGMENTATION_ONLY!r} if m in sys.modules)))")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           cwd=PACKAGE.parent, env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}).stdout.split()
    assert found == [], f"kit.pipelines.{template} imports segmentation-only modules: {found}"


def test_the_templates_without_images_start_without_timm_or_torchvision():
    """What a notebook of a table, a sequence or a text imports (the run's verbs, its pipeline and its part of the
    resource plan) holds neither timm nor torchvision: importing them (torchvision's ops import torch._dynamo) took
    3.4 s of a tabular kernel's 19 s, when the plan's footprints imported the detection models for every template.
    One interpreter loads the six in turn and names what each one's loading brought in."""
    probe = ("import sys, kit.run\nfrom kit import templates\n"
             "for name in ('tabular', 'lstm', 'text', 'seq2seq', 'spans', 'imputation'):\n"
             "    record = templates.get(name)\n"
             "    templates.load(record.pipeline), templates.load(record.footprint)\n"
             "    print(name, *[m for m in ('timm', 'torchvision') if m in sys.modules])\n")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           cwd=PACKAGE.parent, env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)}).stdout.splitlines()
    assert found == ["tabular", "lstm", "text", "seq2seq", "spans", "imputation"], f"timm or torchvision imported: {found}"
