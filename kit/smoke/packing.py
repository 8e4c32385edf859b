"""Archives for smoke data, written as competitions ship them: files at the archive's root or in a folder,
zip, tar (compressed or not, whatever the name says) and 7z."""
from __future__ import annotations

import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

from kit.errors import KitError


def write_zip(source: Path, dest: Path, prefix: str = "") -> Path:
    """`source`'s files (a folder's, recursively, or one file) into the zip `dest`, named relative to
    `source` (its parent, for a file) under `prefix` ("" = at the root, as MLE-bench's compress() writes)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for path, name in _members(source, prefix):
            z.write(path, name)
    return dest


def write_tar(source: Path, dest: Path, prefix: str = "", compress: bool = True) -> Path:
    """As `write_zip`, a tar: gzip-compressed, or plain whatever `dest` is called (inaturalist's .tar.gz
    files are plain tars)."""
    with tarfile.open(dest, "w:gz" if compress else "w") as t:
        for path, name in _members(source, prefix):
            t.add(path, name)
    return dest


def write_7z(source: Path, dest: Path, prefix: str = "") -> Path:
    """As `write_zip`, a 7z: with py7zr where it is installed, else the 7z command."""
    members = _members(source, prefix)
    try:
        import py7zr  # a dev dependency: Kaggle's image lacks it, and the kernel never writes archives
    except ImportError:
        py7zr = None
    if py7zr is not None:
        with py7zr.SevenZipFile(dest, "w") as z:
            for path, name in members:
                z.write(path, name)
        return dest
    if not shutil.which("7z"):
        raise KitError("writing a .7z needs py7zr (pip install py7zr) or the 7z command (apt install p7zip-full)")
    staging = dest.with_name(f".{dest.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    for path, name in members:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, staging / name)
    subprocess.run(["7z", "a", "-bd", "-y", str(dest.resolve()), "."], cwd=staging, check=True, capture_output=True)
    shutil.rmtree(staging)
    return dest


def write_7z_folder(dest: Path, folder: str) -> Path:
    """A 7z holding one empty folder entry, `folder`, and no file: what py7zr's write(folder), which does not
    recurse, stores (MLE-bench's prepare.py for invasive-species-monitoring wrote its train.7z and test.7z so)."""
    staging = dest.with_name(f".{dest.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / folder).mkdir(parents=True)
    try:
        import py7zr  # a dev dependency (see write_7z)
    except ImportError:
        py7zr = None
    if py7zr is not None:
        with py7zr.SevenZipFile(dest, "w") as z:
            z.write(staging / folder, folder)
    elif shutil.which("7z"):
        subprocess.run(["7z", "a", "-bd", "-y", str(dest.resolve()), folder], cwd=staging, check=True, capture_output=True)
    else:
        raise KitError("writing a .7z needs py7zr (pip install py7zr) or the 7z command (apt install p7zip-full)")
    shutil.rmtree(staging)
    return dest


def _members(source: Path, prefix: str) -> list[tuple[Path, str]]:
    base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    if source.is_file():
        return [(source, f"{base}{source.name}")]
    return [(p, f"{base}{p.relative_to(source).as_posix()}") for p in sorted(source.rglob("*")) if p.is_file()]
