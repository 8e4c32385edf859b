"""The kit runtime as a zip embedded in the notebook, so a kernel runs with the internet off and nothing
installed: the cell writes the zip to the temp folder and puts it on sys.path (zipimport does the rest)."""
from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import kit

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


def runtime_cell(blob: bytes, offline: bool = True) -> str:
    digest = hashlib.sha256(blob).hexdigest()
    name = f"kit-{kit.__version__}-{digest[:12]}.zip"
    encoded = base64.b64encode(blob).decode("ascii")
    return f'''# The kit {kit.__version__} runtime, embedded by `make kernel` ({len(blob) // 1024} KB zip, sha256 {digest[:16]}).
# It is written to the temp folder and put first on sys.path: no install and no internet needed.
import base64, os, sys, tempfile
{OFFLINE if offline else ""}


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
