"""Tiny real wheels built in a test (pip wheel of a temp package, offline), a wheel of an installed package, and a
local index of them."""
import subprocess
import sys
import textwrap
import zipfile
from importlib import metadata
from pathlib import Path

# kitprobe says, when imported, whether kit was imported before it: the runtime cell must install and import the
# packages before the first kit import. It needs kitprobe-dep (not on Kaggle's image) and numpy (on it).
PROBE = '''
import sys

import kitprobe_dep

KIT_BEFORE = sorted(m for m in sys.modules if m == "kit" or m.startswith("kit."))
print(f"kitprobe imported; kit modules loaded before it: {KIT_BEFORE}; dep {kitprobe_dep.VALUE}")
'''


def make_wheel(index: Path, name: str, version: str = "1.0", requires: tuple[str, ...] = (), code: str = "") -> Path:
    """pip wheel of a one-module package `name` (module: name with _ for -) into `index`."""
    module = name.replace("-", "_")
    src = index.parent / f"src-{name}-{version}"
    (src / module).mkdir(parents=True)
    (src / module / "__init__.py").write_text(code or f"VALUE = {version!r}\n")
    deps = ", ".join(f'"{r}"' for r in requires)
    (src / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name}"
        version = "{version}"
        requires-python = ">=3.8"
        dependencies = [{deps}]

        [tool.setuptools]
        packages = ["{module}"]
    """))
    index.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
                    "--disable-pip-version-check", "-w", str(index), str(src)], check=True, capture_output=True)
    return next(index.glob(f"{module}-{version}-*.whl"))


def probe_index(root: Path) -> Path:
    """A local index: kitprobe 1.0 (needs kitprobe-dep and numpy), kitprobe-dep 1.0 and 2.0."""
    index = root / "index"
    make_wheel(index, "kitprobe", "1.0", ("kitprobe-dep>=1", "numpy>=1.20"), PROBE)
    make_wheel(index, "kitprobe-dep", "1.0")
    make_wheel(index, "kitprobe-dep", "2.0")
    return index


def local_index_env(index: Path) -> dict[str, str]:
    """pip's own settings for an index of local files only: no network."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index), "PIP_CONFIG_FILE": "/dev/null"}


def wheel_of_installed(name: str, index: Path) -> Path:
    """A wheel of distribution `name` as this environment has it installed (its files, by its RECORD), into `index`:
    a real package's wheel without a download. pip rewrites RECORD when it installs one."""
    dist = metadata.distribution(name)
    root = Path(dist.locate_file(""))
    wheel = (root / next(f for f in dist.files if f.name == "WHEEL")).read_text()
    tag = next(line.split(": ", 1)[1] for line in wheel.splitlines() if line.startswith("Tag: "))
    index.mkdir(parents=True, exist_ok=True)
    out = index / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-{tag}.whl"
    skipped = ("INSTALLER", "REQUESTED", "direct_url.json")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in dist.files:
            if f.suffix == ".pyc" or "__pycache__" in f.parts or f.name in skipped or str(f).startswith(".."):
                continue
            zf.write(root / f, str(f))
    return out
