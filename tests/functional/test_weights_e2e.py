"""A built kernel loads pretrained weights from an attached model, with the internet off."""
import os

import pytest
import timm
from safetensors.torch import save_file

from kit import config, smoke
from kit.build import bundle, execute

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
title = "Dog Breed Offline Weights"
model_sources = ["tester/tiny-effnet/pytorch/default/1"]

[params]
model_name = "test_efficientnet"
pretrained = true
weights_path = "tiny-effnet/pytorch/default/1/model.safetensors"
device = "cpu"
image_size = 64
epochs = 1
folds = 2
batch_size = 16
"""


def test_weights_from_an_attached_model_offline(tmp_path, kaggle_user, write_toml, monkeypatch):
    path = write_toml(CONFIG, name="offline.toml")
    built = bundle.build(str(path), tmp_path / "bundle")
    assert built.metadata["model_sources"] == ["tester/tiny-effnet/pytorch/default/1"]
    assert built.warnings == ()  # weights_path set: nothing to download
    root = tmp_path / "kaggle" / "input"
    smoke.make_dataset(config.load(str(path)).spec, root / "dog-breed-identification")
    weights = root / "models" / "tester" / "tiny-effnet" / "pytorch" / "default" / "1" / "model.safetensors"
    weights.parent.mkdir(parents=True)
    save_file(timm.create_model("test_efficientnet", pretrained=False).state_dict(), str(weights))
    dead = "http://127.0.0.1:9"  # nothing listens there: any download attempt fails at once
    for name in ("HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    env = {"KIT_KAGGLE_INPUT": str(root), "HTTPS_PROXY": dead, "HTTP_PROXY": dead, "https_proxy": dead, "http_proxy": dead,
           "NO_PROXY": "", "no_proxy": ""}
    out = tmp_path / "out"
    execute.run(built.notebook, tmp_path / "executed.ipynb", {"output_dir": str(out)}, cwd=tmp_path, env=env)
    log = (out / "kit.log").read_text()
    assert f"pretrained weights: {weights}" in log
    assert "could not be loaded" not in log and (out / "submission.csv").exists()
    assert os.environ.get("HF_HUB_OFFLINE") is None  # set inside the kernel, not leaked into the test process


def test_missing_weights_are_one_line(tmp_path, kaggle_user, write_toml):
    path = write_toml(CONFIG, name="offline.toml")
    built = bundle.build(str(path), tmp_path / "bundle")
    root = tmp_path / "kaggle" / "input"
    smoke.make_dataset(config.load(str(path)).spec, root / "dog-breed-identification")
    from kit.errors import KitError

    with pytest.raises(KitError, match=r"^weights_path 'tiny-effnet/pytorch/default/1/model.safetensors' not found: "
                                       r"looked for .* and under .*input \(every attached dataset and model\); attach"):
        execute.run(built.notebook, tmp_path / "executed.ipynb", {"output_dir": str(tmp_path / "out")}, cwd=tmp_path,
                    env={"KIT_KAGGLE_INPUT": str(root)})
    assert not (tmp_path / "out" / "submission.csv").exists()
