"""The runtime's library floors: checked at set-up with one line, and the same in pyproject.toml."""
import re
import tomllib
from pathlib import Path

import pytest

from kit.errors import KitError
from kit.runtime import versions

KAGGLE_IMAGE = {"torch": "2.10.0+cu128", "torchvision": "0.25.0+cu128", "timm": "1.0.26", "scikit-learn": "1.6.1"}


def test_kaggles_current_image_passes_in_one_line():
    line = versions.check(KAGGLE_IMAGE)
    assert "\n" not in line and line.startswith("libraries      torch 2.10.0+cu128, torchvision 0.25.0+cu128")
    assert "kit needs torch>=2.3, torchvision>=0.18, timm>=1.0, scikit-learn>=1.2" in line


@pytest.mark.parametrize(
    "name, old",
    [("torch", "2.1.2"), ("timm", "0.9.16"), ("scikit-learn", "1.1.3"), ("torchvision", "0.16.2")],
)
def test_an_image_below_the_floor_stops_with_what_to_do(name, old):
    with pytest.raises(KitError, match=rf"^{name} {re.escape(old)} is older than kit supports \({name}>="):
        versions.check({**KAGGLE_IMAGE, name: old})


def test_torchvision_is_optional():
    line = versions.check({k: v for k, v in KAGGLE_IMAGE.items() if k != "torchvision"})
    assert "torchvision" not in line.split(" (kit needs")[0]


def test_pyproject_states_the_same_floors():
    deps = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["dependencies"]
    stated = dict(re.match(r"([A-Za-z0-9_-]+)>=([0-9.]+)", d).groups() for d in deps if ">=" in d)
    assert {name: stated[name] for name in versions.FLOORS} == {name: floor for name, (floor, _) in versions.FLOORS.items()}


def test_parse():
    assert versions.parse("2.10.0+cu128") == (2, 10, 0) and versions.parse("1.0.0rc1") == (1, 0, 0)
    assert versions.parse("2.10.0") > versions.parse("2.3") > versions.parse("2.1.2")
