"""`make kernel`: the bundle's contents, byte-for-byte reproducibility, and the official client accepting it."""
import base64
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from kit.build import bundle, embed

ROOT = Path(__file__).resolve().parents[2]
KAGGLE = Path(sys.executable).parent / "kaggle"


@pytest.fixture
def built(tmp_path, kaggle_user):
    return bundle.build("dog-breed", tmp_path / "dog-breed")


def test_bundle_files_and_notebook(built):
    assert sorted(p.name for p in built.folder.iterdir()) == ["dog-breed-efficientnet.ipynb", "kernel-metadata.json"]
    meta = json.loads((built.folder / "kernel-metadata.json").read_text())
    assert meta["id"] == "tester/dog-breed-efficientnet" and meta["code_file"] == built.notebook.name
    nb = nbformat.read(built.notebook, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3" and "papermill" not in nb.metadata
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1
    assert 'model_name: str = "tf_efficientnet_b4"  # any timm model name' in params[0].source  # in place, once
    assert "efficientnet_b0" not in params[0].source
    assert '"slug": "dog-breed-identification"' in params[0].source
    assert not [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]


def test_runtime_is_embedded_without_build_side_code(built):
    nb = nbformat.read(built.notebook, as_version=4)
    (cell,) = [c for c in nb.cells if "kit-runtime" in c.metadata.get("tags", [])]
    encoded = re.search(r'_install_kit\("([A-Za-z0-9+/=]+)"', cell.source).group(1)
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(encoded))).namelist()
    assert "kit/__init__.py" in names and "kit/pipelines/cnn.py" in names and "kit/train/loop.py" in names
    assert not [n for n in names if n.startswith(("kit/build/", "kit/smoke/")) or n in ("kit/cli.py", "kit/config.py")]
    assert base64.b64decode(encoded) == embed.runtime_zip()


def test_rebuild_is_byte_identical(built, tmp_path):
    first = {p.name: p.read_bytes() for p in built.folder.iterdir()}
    again = bundle.build("dog-breed", tmp_path / "again")
    assert {p.name: p.read_bytes() for p in again.folder.iterdir()} == first


def test_retitled_rebuild_leaves_no_stale_notebook(tmp_path, kaggle_user, write_toml):
    path = write_toml('[kernel]\ntitle = "Dog Breed Other Title"\n'.join(
        (ROOT / "kit/competitions/dog-breed.toml").read_text().split('[kernel]\ntitle = "Dog Breed EfficientNet"\n')))
    out = tmp_path / "k"
    bundle.build("dog-breed", out)
    bundle.build(str(path), out)
    assert sorted(p.name for p in out.iterdir()) == ["dog-breed-other-title.ipynb", "kernel-metadata.json"]


def test_official_client_pushes_the_folder(built, fake_kaggle, kaggle_user):
    env = {**os.environ, **fake_kaggle.env()}
    out = subprocess.run([str(KAGGLE), "kernels", "push", "-p", str(built.folder)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "successfully pushed" in out.stdout
    (call,) = fake_kaggle.called("SaveKernel")
    body = call.body
    assert body["slug"] == "tester/dog-breed-efficientnet" and body["newTitle"] == "Dog Breed EfficientNet"
    assert body["machineShape"] == "NvidiaTeslaT4" and body["enableGpu"] is True
    assert body.get("enableInternet", False) is False and body["isPrivate"] is True
    assert body["competitionDataSources"] == ["dog-breed-identification"]
    pushed = json.loads(body["text"])
    assert pushed["metadata"]["kernelspec"]["name"] == "python3"


def test_cli_kernel_errors_are_one_line(tmp_path, kaggle_user, monkeypatch, write_toml):
    bad = write_toml('[competition]\nslug = "x-y"\nmetrik = "mae"\n[kernel]\ntitle = "Hello World"\n')
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-m", "kit", "kernel", str(bad)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 1
    expected = f"error: {bad}: [competition]: unknown key 'metrik' (known: slug, template, metric)"
    assert out.stderr.strip().splitlines() == [expected]
    assert "Traceback" not in out.stdout + out.stderr


def test_cli_missing_username_writes_nothing(tmp_path, kaggle_user, monkeypatch):
    env = {k: v for k, v in os.environ.items() if k != "KAGGLE_USERNAME"}
    target = bundle.kernels_dir() / "dog-breed"
    before = sorted(target.iterdir()) if target.exists() else None
    out = subprocess.run([sys.executable, "-m", "kit", "kernel", "dog-breed"], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1 and "no Kaggle username" in out.stderr
    assert "Traceback" not in out.stderr
    assert (sorted(target.iterdir()) if target.exists() else None) == before


CHURN = '''
import sys, threading, types
sys.setswitchinterval(1e-6)
stop = False
def churn():  # another thread importing modules, as the kernel's and the libraries' own threads do
    while not stop:  # a thousand modules in, then out: the size changes at every switch of threads
        for i in range(1000):
            sys.modules[f"_churn{i}"] = types.ModuleType("churn")
        for i in range(1000):
            del sys.modules[f"_churn{i}"]
threading.Thread(target=churn, daemon=True).start()
for _ in range(30):  # the runtime cell run again and again, as in an interactive session
    exec(CELL, {})
stop = True
'''


def test_the_runtime_cell_runs_while_other_threads_import(tmp_path):
    """A flake seen in CI: the cell walked sys.modules while another thread added to it."""
    script = tmp_path / "churn.py"  # a file: the cell's blob is past what one command-line argument may hold (128 KiB)
    script.write_text(CHURN.replace("CELL", repr(embed.runtime_cell(embed.runtime_zip()))))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
