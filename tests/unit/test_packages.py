"""[kernel] packages on the build side: pip's resolution for Kaggle's image against a local index (no network),
what the image has left out, the folder reused while nothing changed, and the pieces push and the notebook use."""
import socket
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit import config as kit_config
from kit.build import embed, packages, push
from kit.errors import KitError
from kit.runtime import paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import wheels  # noqa: E402


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return wheels.probe_index(tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def local(index, monkeypatch):
    for key, value in wheels.local_index_env(index).items():
        monkeypatch.setenv(key, value)
    return index


def image(tmp_path, *pins: str) -> Path:
    path = tmp_path / "image.txt"
    path.write_text("# an image\n" + "".join(f"{p}  # pinned\n" for p in pins))
    return path


def pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(not pypi_reachable(), reason="needs PyPI")
def test_segmentation_models_pytorch_is_its_one_wheel_on_kaggles_image(tmp_path):
    """The segmentation template's case, against the real index: smp 0.6.0 needs torch, torchvision, timm,
    huggingface-hub, safetensors, numpy, pillow and tqdm, all on the image; only its own 155 KB wheel comes."""
    assert packages.resolve(("segmentation-models-pytorch==0.6.0",), tmp_path) == [
        "segmentation_models_pytorch-0.6.0-py3-none-any.whl"]


def test_what_the_image_has_is_left_out(local, tmp_path):
    got = packages.resolve(("kitprobe==1.0",), tmp_path / "out", image(tmp_path, "numpy==2.0.2", "kitprobe-dep==1.0"))
    assert got == ["kitprobe-1.0-py3-none-any.whl"]  # numpy and kitprobe-dep are on the image: not even looked for


def test_dependencies_the_image_lacks_come_along(local, tmp_path):
    got = packages.resolve(("kitprobe==1.0",), tmp_path / "out", image(tmp_path, "numpy==2.0.2"))
    assert got == ["kitprobe-1.0-py3-none-any.whl", "kitprobe_dep-2.0-py3-none-any.whl"]


def test_a_package_the_image_has_can_be_asked_for_newer(local, tmp_path):
    got = packages.resolve(("kitprobe-dep>=2",), tmp_path / "out", image(tmp_path, "kitprobe-dep==1.0"))
    assert got == ["kitprobe_dep-2.0-py3-none-any.whl"]


def test_a_conflict_with_the_image_is_one_line(local, tmp_path):
    with pytest.raises(KitError, match=r"^packages: pip could not resolve kitprobe==1.0 for Kaggle's image .*"
                                       r"kitprobe-dep==0.5.*; change \[kernel\] packages$"):
        packages.resolve(("kitprobe==1.0",), tmp_path / "out", image(tmp_path, "numpy==2.0.2", "kitprobe-dep==0.5"))


def test_a_package_without_a_wheel_is_one_line(local, tmp_path):
    with pytest.raises(KitError, match=r"could not resolve nosuchpackage.*No matching distribution found for nosuchpackage"):
        packages.resolve(("nosuchpackage",), tmp_path / "out", image(tmp_path))


def config(tmp_path, *listed: str, title: str = "Dog Breed With Packages"):
    path = tmp_path / "c.toml"
    text = kit_config.resolve("dog-breed").read_text().replace('title = "Dog Breed EfficientNet"', f'title = "{title}"')
    given = ", ".join(f'"{p}"' for p in listed)
    path.write_text(text.replace("internet = false", f"internet = false\npackages = [{given}]"))
    return kit_config.load(str(path))


def test_the_folder_is_reused_while_nothing_changed(local, tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "scratch"))  # the session's holds other tests' resolutions
    cfg, folder = config(tmp_path, "kitprobe==1.0"), tmp_path / "c-packages"
    first = packages.build(cfg, "tester", folder, image(tmp_path, "numpy==2.0.2"))
    assert first.dataset == "tester/dog-breed-with-packages-packages" and first.modules == ("kitprobe",)
    assert sorted(p.name for p in folder.iterdir()) == ["dataset-metadata.json", "kit-packages.json", *first.wheels]
    monkeypatch.setattr(packages, "resolve", lambda *a: pytest.fail("resolved again"))
    assert packages.build(cfg, "tester", folder, image(tmp_path, "numpy==2.0.2")) == first
    other = packages.build(cfg, "tester", tmp_path / "d-packages", image(tmp_path, "numpy==2.0.2"))
    assert other.wheels == first.wheels  # another folder: the day's resolution copied from the scratch folder
    with monkeypatch.context() as m, pytest.raises(pytest.fail.Exception, match="resolved again"):
        m.setenv("PIP_PRE", "1")  # another pip setting may resolve otherwise: not served from the scratch folder
        packages.build(cfg, "tester", tmp_path / "e-packages", image(tmp_path, "numpy==2.0.2"))
    (folder / first.wheels[0]).write_bytes(b"damaged")  # a damaged wheel is copied again
    assert packages.build(cfg, "tester", folder, image(tmp_path, "numpy==2.0.2")) == first
    assert (folder / first.wheels[0]).read_bytes() != b"damaged"
    (kept,) = paths.scratch_dir().glob(f"wheels/*/{first.wheels[0]}")
    kept.write_bytes(b"damaged")
    (folder / first.wheels[0]).write_bytes(b"damaged")
    with pytest.raises(pytest.fail.Exception, match="resolved again"):  # damaged there too: fetched again
        packages.build(cfg, "tester", folder, image(tmp_path, "numpy==2.0.2"))


@pytest.mark.parametrize("listed, message", [
    (("kitprobe=1.0",), "'kitprobe=1.0' is not a pip requirement"),
    (("kitprobe @ https://example.com/kitprobe.whl",), "names a URL"),
    (("kitprobe", "KitProbe>=1"), "name the same package"),
])
def test_bad_requirements_are_one_line(tmp_path, listed, message):
    with pytest.raises(KitError, match=message):
        packages.build(config(tmp_path, *listed), "tester", tmp_path / "p")


def test_the_dataset_slug_fits_kaggles_50_characters():
    slug = packages.dataset_slug("a-" * 24 + "bc")  # a 50-character kernel slug
    assert len(slug) <= 50 and slug.endswith("-packages") and "--" not in slug
    assert packages.dataset_title("T" * 45, slug) == slug  # a title of its own where it fits, else the slug


def test_the_runtime_cell_installs_before_kit():
    wheels_ = packages.Packages("me/x-packages", Path("/nowhere"), ("kitprobe==1.0",), ("kitprobe",), ())
    source = embed.runtime_cell(b"zip", packages=wheels_)
    compile(source, "cell", "exec")
    assert source.index("_install_packages('me/x-packages', ['kitprobe==1.0'], ['kitprobe'])") < source.index("_install_kit(")
    assert "_install_packages" not in embed.runtime_cell(b"zip")  # a kernel without packages is as before


@pytest.mark.parametrize("budget, inference, expected", [
    (0, False, 12 * 3600), (0, True, 9 * 3600), (7200, False, 9000), (7200, True, 9000), (42000, False, 12 * 3600),
])
def test_the_session_timeout_is_the_budget_plus_a_margin(budget, inference, expected):
    cfg = SimpleNamespace(checked=SimpleNamespace(time_budget_s=budget))
    assert push.session_timeout(cfg, inference) == expected


def test_log_entries_read_kaggles_json_log_and_plain_text():
    log = '[{"stream_name":"stdout","time":1.0,"data":"a\\nb"}\n,{"stream_name":"stderr","time":2.0,"data":"c\\n"}]'
    assert push.log_entries(log) == ["a", "bc"]  # a line may come in pieces
    assert push.log_entries("plain\ntext") == ["plain", "text"] and push.log_entries("") == []
