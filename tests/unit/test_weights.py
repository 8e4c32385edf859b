"""Offline pretrained weights: found under /kaggle/input in any mount layout, loaded through timm's file overlay."""
from types import SimpleNamespace

import pytest
import timm
import torch
from safetensors.torch import save_file

from kit.errors import KitError
from kit.params import CnnParams
from kit.pipelines.cnn import CnnPipeline
from kit.runtime import paths
from kit.runtime.hardware import Hardware, setup
from kit.runtime.session import Session
from kit.spec import Spec
from kit.train.targets import Target


@pytest.fixture
def kaggle_input(tmp_path, monkeypatch):
    root = tmp_path / "input"
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(root))
    return root


@pytest.mark.parametrize(
    "mounted, given",
    [
        ("effnet-weights/model.safetensors", "effnet-weights/model.safetensors"),  # dataset, old layout
        ("datasets/alice/effnet-weights/model.safetensors", "effnet-weights/model.safetensors"),  # dataset, new layout
        ("effnet/pytorch/default/1/model.safetensors", "model.safetensors"),  # model, old layout, by file name
        ("models/alice/effnet/pytorch/default/1/model.safetensors", "effnet/pytorch/default/1/model.safetensors"),
    ],
)
def test_find_weights_in_every_layout(kaggle_input, mounted, given):
    path = kaggle_input / mounted
    path.parent.mkdir(parents=True)
    path.write_bytes(b"w")
    assert paths.find_weights(given) == path


def test_missing_weights_name_the_path(kaggle_input, tmp_path):
    kaggle_input.mkdir()
    with pytest.raises(KitError, match=r"weights_path 'effnet/model.pth' not found: looked for effnet/model.pth and "
                                       r"under .*input"):
        paths.find_weights("effnet/model.pth")
    absolute = tmp_path / "nope.pth"
    with pytest.raises(KitError, match=f"weights_path '{absolute}' not found: looked for {absolute}; attach"):
        paths.find_weights(str(absolute))


def test_model_loads_the_weights_file_without_the_hub(kaggle_input, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = timm.create_model("test_efficientnet", pretrained=False)
    with torch.no_grad():
        source.conv_stem.weight.fill_(0.125)
    file = kaggle_input / "models" / "me" / "tiny" / "pytorch" / "default" / "1" / "tiny.safetensors"
    file.parent.mkdir(parents=True)
    save_file(source.state_dict(), str(file))
    hw = Hardware("cpu", cpu_count=2)
    params = CnnParams(model_name="test_efficientnet", pretrained=True, weights_path="tiny.safetensors", image_size=64)
    logs = []
    session = Session("cnn", params, Spec(slug="x"), hw, setup(hw), tmp_path, tmp_path)
    session.log = logs.append
    data = SimpleNamespace(target=Target("probs", ("a", "b", "c"), ("a", "b", "c")), recipe={})
    model = CnnPipeline(session).model(data)
    assert torch.all(model.conv_stem.weight == 0.125)
    assert model.get_classifier().out_features == 3
    assert logs == [f"pretrained weights: {file}"]


@pytest.mark.parametrize("name", ["vit_tiny_patch16_224", "swin_tiny_patch4_window7_224"])
def test_a_vision_transformer_is_built_for_the_image_size(tmp_path, name):
    """A ViT or Swin of 224 px asked for 64 px images failed at its first forward ("Input height (64) doesn't
    match model (224)"): timm builds it for image_size when given img_size."""
    hw = Hardware("cpu", cpu_count=2)
    params = CnnParams(model_name=name, pretrained=False, image_size=64)
    logs = []
    session = Session("cnn", params, Spec(slug="x"), hw, setup(hw), tmp_path, tmp_path)
    session.log = logs.append
    data = SimpleNamespace(target=Target("probs", ("a", "b", "c"), ("a", "b", "c")), recipe={})
    model = CnnPipeline(session).model(data, pretrained=False)
    assert model(torch.zeros(2, 3, 64, 64)).shape == (2, 3)
    assert [line for line in logs if "is built for 64 px" in line]
