import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("PYTEST_XDIST_WORKER"):  # make test: a process per core, and its notebooks' torch on one thread
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # (two OpenMP threads each spin for a busy core: 0.3 s epochs took 6-14 s)
sys.path.insert(0, str(Path(__file__).parent))

from fakes.kaggle_server import FakeKaggle  # noqa: E402


@pytest.fixture
def kaggle_user(monkeypatch, tmp_path):
    """A Kaggle identity for builds and pushes that never touches the real ~/.kaggle."""
    config = tmp_path / "kaggle-config"
    config.mkdir()
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(config))
    monkeypatch.setenv("KAGGLE_USERNAME", "tester")
    monkeypatch.setenv("KAGGLE_KEY", "0123456789abcdef0123456789abcdef")
    return config


@pytest.fixture
def fake_kaggle(monkeypatch):
    server = FakeKaggle()
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    yield server
    server.close()


MINIMAL_TOML = """
[competition]
slug = "some-competition"
template = "cnn"
metric = "accuracy"

[kernel]
title = "{title}"
{kernel}
"""


@pytest.fixture
def minimal_toml(write_toml):
    """A config with only the required keys; `kernel` adds lines to its [kernel] table."""

    def write(title: str = "Some Competition Baseline", kernel: str = "") -> Path:
        return write_toml(MINIMAL_TOML.format(title=title, kernel=kernel))

    return write


def dog_breed_toml(sizes: bool = True) -> str:
    """The shipped dog-breed config; without `sizes`, less its [sizes] table, so that a push of it makes no resource
    plan (the plan imports torch and timm: ~10 s a push, where a case is about Kaggle's answers, not the plan)."""
    text = (ROOT / "kit" / "competitions" / "dog-breed.toml").read_text()
    if sizes:
        return text
    head, rest = text.split("\n[sizes]", 1)
    return head + rest[rest.index("\n["):]


@pytest.fixture
def write_toml(tmp_path):
    """Write a config file; `base` (default: the shipped dog-breed config, `sizes`: with its [sizes] table) with
    `text` appended or replaced."""

    def write(text: str, name: str = "comp.toml", base: bool = False, sizes: bool = True) -> Path:
        path = tmp_path / name
        head = dog_breed_toml(sizes) if base else ""
        path.write_text(head + "\n" + text)
        return path

    return write


@pytest.fixture
def unplanned(write_toml) -> str:
    """dog-breed without [sizes], as dog-breed.toml: its pushes make no resource plan (dog_breed_toml)."""
    return str(write_toml("", name="dog-breed.toml", base=True, sizes=False))


@pytest.fixture(scope="module")
def dog_breed_data(tmp_path_factory):
    """The dog-breed config and its smoke data (Kaggle's layout), made once per test module."""
    from kit import config, smoke

    cfg = config.load("dog-breed")
    folder = tmp_path_factory.mktemp("dogs") / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=3)
    return cfg, folder


@pytest.fixture(autouse=True, scope="session")
def outputs_in_temp_folders(tmp_path_factory):
    """Decoded-image caches and bundles of test runs go to pytest's temp folder, not /tmp/kit-cache or the
    repository's kernels/."""
    os.environ["KIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("kit-cache"))
    os.environ["KIT_KERNELS_DIR"] = str(tmp_path_factory.mktemp("kernels"))


os.environ.setdefault("KIT_BATCH", "1")
