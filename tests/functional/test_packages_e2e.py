"""[kernel] packages on the kernel's side: the built notebook, with its wheels folder mounted as Kaggle mounts a
dataset and every network route dead, installs the packages and imports them before the first kit import,
and trains; without the dataset it stops at once, in one line that names it."""
import shutil

import nbformat
import pytest
import wheels
from test_offline_e2e import DeadProxy

from kit import config, smoke
from kit.build import bundle, execute
from kit.errors import KitError

pytestmark = pytest.mark.e2e

CONFIG = """
[competition]
slug = "dog-breed-identification"
template = "cnn"
metric = "log_loss"

[data]
train = "labels.csv"
target_column = "breed"

[kernel]
title = "Dog Breed With Packages"
packages = ["kitprobe==1.0"]

[params]
model_name = "test_efficientnet"
pretrained = false
device = "cpu"
image_size = 64
epochs = 1
folds = 2
batch_size = 16
"""
DATASET = "tester/dog-breed-with-packages-packages"


@pytest.fixture
def built(tmp_path, kaggle_user, write_toml, monkeypatch):
    for key, value in wheels.local_index_env(wheels.probe_index(tmp_path / "wheels")).items():
        monkeypatch.setenv(key, value)
    path = write_toml(CONFIG, name="probe.toml")
    result = bundle.build(str(path), tmp_path / "bundle" / "probe")
    root = tmp_path / "kaggle" / "input"
    smoke.make_dataset(config.load(str(path)).spec, root / "dog-breed-identification")
    return result, root


def dead_network() -> tuple[DeadProxy, dict[str, str]]:
    proxy = DeadProxy()
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
    return proxy, {**{k: proxy.url for k in names}, "NO_PROXY": "", "no_proxy": ""}


def test_the_packages_install_offline_before_kit(built, tmp_path):
    result, root = built
    assert result.packages.dataset == DATASET and result.metadata["dataset_sources"] == [DATASET]
    assert sorted(result.packages.wheels) == ["kitprobe-1.0-py3-none-any.whl", "kitprobe_dep-2.0-py3-none-any.whl"]
    mounted = root / "datasets" / "tester" / DATASET.split("/")[1]
    shutil.copytree(result.packages.folder, mounted)  # as Kaggle mounts an attached dataset
    proxy, env = dead_network()
    out = tmp_path / "out"
    executed = tmp_path / "executed.ipynb"
    execute.run(result.notebook, executed, {"output_dir": str(out)}, cwd=tmp_path, env={"KIT_KAGGLE_INPUT": str(root), **env})
    assert proxy.connections == 0, f"{proxy.connections} connection(s) to the proxy"
    nb = nbformat.read(executed, as_version=4)
    (cell,) = [c for c in nb.cells if "kit-runtime" in c.metadata.get("tags", [])]
    printed = "".join(o.get("text", "") for o in cell.outputs)
    probe, installed, kit_line = (printed.index(s) for s in ("kitprobe imported; kit modules loaded before it: []; dep 2.0",
                                                              f"packages from {mounted}: kitprobe==1.0", "kit 0.1.0 from"))
    assert probe < installed < kit_line  # installed and imported, then kit
    assert (out / "submission.csv").is_file()


def test_an_unattached_packages_dataset_is_one_line(built, tmp_path):
    result, root = built
    with pytest.raises(KitError, match=rf"^the packages dataset {DATASET} is not attached \(looked for its wheels in "
                                       rf"{root}/dog-breed-with-packages-packages and .*attached: dog-breed-identification\); "
                                       "push with make push"):
        execute.run(result.notebook, tmp_path / "executed.ipynb", {"output_dir": str(tmp_path / "out")}, cwd=tmp_path,
                    env={"KIT_KAGGLE_INPUT": str(root)})
    assert not (tmp_path / "out" / "kit.log").exists()  # stopped before kit started
