"""`kit weights` on tiny local models (no hub): a timm test model's weights from a local file and a tiny Hugging
Face folder are saved, published through the official client to the fake Kaggle API, and what reached Kaggle,
mounted where Kaggle mounts a model, loads with kit's own loaders offline; the printed config lines build."""
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import timm
import torch

from kit.build import bundle
from kit.errors import KitError
from kit.models.text import TextModel
from kit.params import CnnParams
from kit.pipelines.cnn import CnnPipeline
from kit.pipelines.text import load_tokenizer
from kit.runtime import paths
from kit.runtime.hardware import Hardware, setup
from kit.runtime.session import Session
from kit.smoke.text import build_tiny_encoder
from kit.spec import Spec
from kit.train.targets import Target

KEY = "f00dfeedf00dfeedf00dfeedf00dfeed"


@pytest.fixture
def env(fake_kaggle, tmp_path, kaggle_user):
    return {**os.environ, **fake_kaggle.env(), "KAGGLE_USERNAME": "tester", "KAGGLE_KEY": KEY, "TMPDIR": str(tmp_path),
            "KAGGLE_CONFIG_DIR": str(kaggle_user), "KIT_KERNELS_DIR": str(tmp_path / "kernels"), "KIT_POLL_S": "0.01",
            "KIT_RETRY_BASE_S": "0.01", "HF_HUB_OFFLINE": "1"}


def weights(env, *args) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "kit", "weights", *args], env=env, capture_output=True, text=True, timeout=300)
    assert KEY not in done.stdout + done.stderr and "Traceback" not in done.stderr
    return done


def mount(fake_kaggle, version: str, root: Path) -> Path:
    """What Kaggle holds of `version`, where a kernel finds it: <input>/models/<owner>/<model>/<framework>/<variation>/<N>/."""
    instance, number = version.rsplit("/", 1)
    folder = root / "models" / version
    folder.mkdir(parents=True)
    for name, data in fake_kaggle.instances[instance][int(number) - 1].items():
        (folder / name).write_bytes(data)
    return folder


def config_with(printed: str, tmp_path: Path, base: str) -> Path:
    """A shipped config's [competition] and [data], then the printed lines as they are (and a title)."""
    head = (Path(bundle.ROOT) / "kit" / "competitions" / base).read_text().split("[kernel]")[0]
    lines = printed[printed.index("[kernel]"):].replace("[kernel]\n", '[kernel]\ntitle = "Pasted Weights Lines"\n', 1)
    path = tmp_path / "with-weights.toml"
    path.write_text(head + lines)
    return path


def test_timm_weights_from_a_local_file(env, fake_kaggle, tmp_path, monkeypatch, kaggle_user):
    source = timm.create_model("test_efficientnet", pretrained=False)
    with torch.no_grad():
        source.conv_stem.weight.fill_(0.125)
    torch.save(source.state_dict(), tmp_path / "mine.pth")
    done = weights(env, "test_efficientnet", "--file", str(tmp_path / "mine.pth"))
    assert done.returncode == 0, done.stderr
    version = "tester/test-efficientnet/pytorch/default/1"
    assert f'model_sources = ["{version}"]' in done.stdout
    assert 'weights_path = "test-efficientnet/pytorch/default/1/model.safetensors"' in done.stdout
    assert fake_kaggle.called("CreateModelInstance")[0].body["body"]["framework"] == "MODEL_FRAMEWORK_PY_TORCH"
    root = tmp_path / "input"
    mounted = mount(fake_kaggle, version, root)
    assert sorted(p.name for p in mounted.iterdir()) == ["model.safetensors"]
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    given = tomllib.loads(done.stdout[done.stdout.index("[kernel]"):])["params"]
    hw = Hardware("cpu", cpu_count=2)
    p = CnnParams(model_name=given["model_name"], pretrained=True, weights_path=given["weights_path"], image_size=64)
    session = Session("cnn", p, Spec(slug="x"), hw, setup(hw), tmp_path, tmp_path)
    session.log = lambda line: None
    model = CnnPipeline(session).model(SimpleNamespace(target=Target("probs", ("a", "b"), ("a", "b")), recipe={}))
    assert torch.all(model.conv_stem.weight == 0.125)  # the file's weights, through kit's loader
    built = bundle.build(str(config_with(done.stdout, tmp_path, "dog-breed.toml")), tmp_path / "built")
    assert built.metadata["model_sources"] == [version] and built.warnings == ()


def test_a_hugging_face_folder(env, fake_kaggle, tmp_path, monkeypatch):
    folder = build_tiny_encoder(["a tiny text", "another tiny text"], tmp_path / "tiny-encoder")
    done = weights(env, str(folder))
    assert done.returncode == 0, done.stderr
    version = "tester/tiny-encoder/transformers/default/1"
    assert f'model_sources = ["{version}"]' in done.stdout and 'model_path = "tiny-encoder/transformers/default/1"' in done.stdout
    root = tmp_path / "input"
    mounted = mount(fake_kaggle, version, root)
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= {p.name for p in mounted.iterdir()}
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    found = paths.find_model("tiny-encoder/transformers/default/1")
    assert found == mounted
    tokenizer = load_tokenizer(found)
    model = TextModel(found, outputs=1, pad_id=tokenizer.pad_token_id)
    original = TextModel(folder, outputs=1, pad_id=tokenizer.pad_token_id)
    for (name, a), (_, b) in zip(model.backbone.state_dict().items(), original.backbone.state_dict().items()):
        assert torch.equal(a, b), name  # the same encoder, loaded from what Kaggle holds
    assert tokenizer("a tiny text")["input_ids"] == load_tokenizer(folder)("a tiny text")["input_ids"]
    path = config_with(done.stdout, tmp_path, "learning-agency-lab-automated-essay-scoring-2.toml")
    built = bundle.build(str(path), tmp_path / "built")
    assert built.metadata["model_sources"] == [version] and built.warnings == ()  # the model folder is attached


@pytest.mark.parametrize("args, message", [
    (("no_such_model_anywhere",), "is neither a timm model"),
    (("test_efficientnet", "--file", "/nonexistent/w.pth"), "--file /nonexistent/w.pth: no such file"),
])
def test_weights_mistakes_are_one_line(env, fake_kaggle, args, message):
    done = weights(env, *args)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert not fake_kaggle.instances


def test_a_folder_without_a_model_is_one_line(tmp_path):
    from kit.build import weights as kit_weights

    with pytest.raises(KitError, match="is a folder without config.json"):
        kit_weights.kind_of(str(tmp_path))
