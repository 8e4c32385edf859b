"""The pipeline contract (kit.pipelines.base.Pipeline): every template's pipeline is a subclass that builds, every
name a registry record holds resolves, and kit.run calls the hooks rather than asking which a pipeline has."""
import ast
import dataclasses
from pathlib import Path

import pytest

from kit import templates
from kit.pipelines.base import Pipeline
from kit.runtime.hardware import Hardware, setup
from kit.runtime.session import Session
from kit.spec import Spec

RUN = Path(__file__).resolve().parents[2] / "kit" / "run"
HOOKS = {name for name in dir(Pipeline) if not name.startswith("_")}


def probes(source: str) -> list[str]:
    """getattr/hasattr calls in `source` that ask an object for one of the Pipeline's methods, or ask `pipe` for
    anything: what a base class with defaults makes needless."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2):
            continue
        owner, name = ast.unparse(node.args[0]), node.args[1]
        if owner in ("pipe", "self.pipe") or (isinstance(name, ast.Constant) and name.value in HOOKS):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_probe_finder_finds_a_probe():
    assert probes('own = getattr(pipe, "fit_fold", None)\nhasattr(x, "judge")\ngetattr(p, "layer_decay", 1.0)') == [
        "line 1: getattr(pipe, 'fit_fold', None)", "line 2: hasattr(x, 'judge')"]


def test_the_run_never_asks_a_pipeline_which_hooks_it_has():
    found = {path.name: probes(path.read_text()) for path in sorted(RUN.glob("*.py"))}
    assert {name: lines for name, lines in found.items() if lines} == {}


def session(record: templates.Template, tmp_path: Path, **params) -> Session:
    hw = Hardware("cpu", cpu_count=2, ram_gb=8)
    return Session(record.name, record.params(**params), Spec(slug="toy", template=record.name), hw, setup(hw), tmp_path,
                   tmp_path / "out")


@pytest.mark.parametrize("name", templates.names())
def test_every_record_names_what_exists_and_its_pipeline_builds(name, tmp_path):
    record = templates.get(name)
    for field in ("pipeline", "smoke", "smoke_inputs", "names", "footprint"):
        dotted = getattr(record, field)
        if dotted:
            assert templates.load(dotted) is not None, f"{name}: {field} = {dotted}"
    choices = {f.name: f.metadata.get("choices") for f in dataclasses.fields(record.params)}.get("model_name")
    models = [{"model_name": m} for m in choices] if choices else [{}]  # tabular: the boosters' and the network's
    for params in models:
        pipe = templates.load(record.pipeline)(session(record, tmp_path, **params))
        assert isinstance(pipe, Pipeline) and pipe.session.template == name
        assert pipe.fits_folds == (params.get("model_name") in ("xgboost", "lightgbm", "catboost"))
