"""The kit runtime as a zip embedded in the notebook, so a kernel runs with the internet off and nothing
installed: the cell writes the zip to the temp folder and puts it on sys.path (zipimport does the rest).
With [kernel] packages, the cell first installs them from the attached dataset of wheels, before kit or
anything else imports them."""
from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import kit
from kit.build.packages import Packages

PACKAGE = Path(kit.__file__).parent
# Build-side modules stay out: the kernel never pushes, builds, reads TOML or makes smoke data.
BUILD_ONLY = ("build/", "smoke/", "cli.py", "__main__.py", "config.py", "competitions/")
EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same bytes


def runtime_files() -> list[Path]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if "__pycache__" in rel or rel.startswith(BUILD_ONLY):
            continue
        found.append(path)
    return found


def runtime_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path in runtime_files():
            info = zipfile.ZipInfo(f"kit/{path.relative_to(PACKAGE).as_posix()}", date_time=EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes(), compresslevel=9)
    return buffer.getvalue()


OFFLINE = """
# Built with the internet off: the Hugging Face hub must not be asked (it retries for a minute, then fails).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
"""


# Self-contained: it runs before kit can be imported. KitError is kit's one-line error, by name (papermill and
# kit's runner report it so); the cell defines its own.
PACKAGES = """

class KitError(Exception):
    def _render_traceback_(self):
        return [f"KitError: {self}"]


def _install_packages(dataset, requirements, modules):
    import glob, importlib, importlib.metadata, subprocess
    try:  # already there (a local run, a cell run again): nothing to install
        from packaging.requirements import Requirement
        if all(Requirement(r).specifier.contains(importlib.metadata.version(Requirement(r).name), prereleases=True)
               for r in requirements):
            return print("packages already installed: " + ", ".join(requirements))
    except Exception:
        pass
    root = os.environ.get("KIT_KAGGLE_INPUT", "/kaggle/input")
    owner, slug = dataset.split("/")
    places = [os.path.join(root, slug), os.path.join(root, "datasets", owner, slug)]
    places += sorted(glob.glob(os.path.join(root, "datasets", "*", slug)) + glob.glob(os.path.join(root, "*", slug)))
    found = next((p for p in places if glob.glob(os.path.join(p, "*.whl"))), None)
    if found is None:
        attached = ", ".join(sorted(os.listdir(root))) if os.path.isdir(root) else "nothing"
        raise KitError(f"the packages dataset {dataset} is not attached (looked for its wheels in {places[0]} and "
                       f"{places[1]}; attached: {attached}); push with make push, which uploads and attaches it, or "
                       f"add {dataset} to the kernel's inputs")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--no-index", "--find-links", found,
                           "--disable-pip-version-check", "--no-warn-script-location", "--quiet", *requirements],
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()][-1:]
        raise KitError(f"pip could not install {', '.join(requirements)} from {found}: {last[0] if last else done.returncode}; "
                       "build the packages again (make kernel) and push")
    importlib.invalidate_caches()
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as e:
            raise KitError(f"{module} was installed from {found} but does not import ({type(e).__name__}: {e}); "
                           "check [kernel] packages against Kaggle's image") from None
    print(f"packages from {found}: " + ", ".join(requirements))
"""


def runtime_cell(blob: bytes, offline: bool = True, packages: Packages | None = None) -> str:
    digest = hashlib.sha256(blob).hexdigest()
    name = f"kit-{kit.__version__}-{digest[:12]}.zip"
    encoded = base64.b64encode(blob).decode("ascii")
    install = "" if packages is None else (
        f"{PACKAGES}\n\n_install_packages({packages.dataset!r}, {list(packages.requirements)!r}, {list(packages.modules)!r})\n")
    return f'''# The kit {kit.__version__} runtime, embedded by `make kernel` ({len(blob) // 1024} KB zip, sha256 {digest[:16]}).
# It is written to the temp folder and put first on sys.path: no install and no internet needed.
import base64, os, sys, tempfile
{OFFLINE if offline else ""}{install}


def _install_kit(encoded, name):
    path = os.path.join(tempfile.gettempdir(), name)
    if not os.path.exists(path):
        tmp = f"{{path}}.{{os.getpid()}}.tmp"
        with open(tmp, "wb") as f:
            f.write(base64.b64decode(encoded))
        os.replace(tmp, path)
    if path not in sys.path:
        sys.path.insert(0, path)
    for module in [m for m in list(sys.modules) if m == "kit" or m.startswith("kit.")]:  # a copy: other threads import too
        del sys.modules[module]  # an interactive session may hold another kit already


_install_kit("{encoded}", "{name}")
import kit

print(f"kit {{kit.__version__}} from {{kit.__file__}}")'''
