"""[kernel] packages: the wheels Kaggle's image lacks, in kernels/<name>-packages/, a dataset folder the kernel
installs from with the internet off (`pip install --no-index --find-links`, in its runtime cell).

The resolution is pip's own (`pip install --dry-run --report`) for the image's interpreter and platform:
CPython 3.12, manylinux x86_64, binary wheels only. What the image already has (kaggle-image.txt) is shown to
pip as it is there: a stub wheel per package, of the image's version and without dependencies, pinned by a
constraint and preferred over the index's wheel of the same version (the stub's tag is the first the target
supports, and it has a build number). So pip resolves the rest against the index as it would on Kaggle, and
never downloads the image's own packages (gigabytes of torch and CUDA libraries). The folder's manifest keys
what was resolved: a rebuild with the same packages and image reuses it without asking the index, and the scratch
folder keeps a day's resolutions for other configs and folders (resolve_cached).
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from kit import files
from kit.build import metadata
from kit.errors import KitError
from kit.runtime import paths

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ROOT / "kaggle-image.txt"
PYTHON = "3.12"  # Kaggle's image
ABI = "cp312"
# glibc 2.35 (Ubuntu 22.04) runs every manylinux wheel up to 2_35; pip does not expand perennial tags itself
PLATFORMS = (*(f"manylinux_2_{minor}_x86_64" for minor in range(35, 4, -1)),
             "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
STUB_TAG = f"{ABI}-{ABI}-{PLATFORMS[0]}"  # the target's most preferred tag
STUB_BUILD = "99999"  # beats the index's wheel of the same version and tag
MANIFEST = "kit-packages.json"
METADATA = "dataset-metadata.json"
SUFFIX = "-packages"
LICENSE = "other"  # the wheels keep their own licences


@dataclass(frozen=True)
class Packages:
    dataset: str  # owner/slug of the dataset that carries the wheels
    folder: Path  # kernels/<name>-packages/: the wheels, the manifest and dataset-metadata.json
    requirements: tuple[str, ...]  # as the config gives them: what the kernel installs
    modules: tuple[str, ...]  # the requested packages' top-level modules: imported right after the install
    wheels: tuple[str, ...]  # file names, the requested packages' and their dependencies' the image lacks


def dataset_slug(kernel_slug: str) -> str:
    """The packages dataset's slug: the kernel's with -packages (Kaggle allows 6 to 50 characters)."""
    return kernel_slug[: 50 - len(SUFFIX)].rstrip("-") + SUFFIX


def dataset_title(kernel_title: str, slug: str) -> str:
    title = f"{kernel_title} packages"
    return title if len(title) <= 50 else slug


def requirements(given: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The config's requirements, checked: each a name with an optional version specifier (no URLs or
    paths: the wheels must come from an index), each name once."""
    seen: dict[str, str] = {}
    for text in given:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise KitError(f"{where} packages: '{text}' is not a pip requirement ({e}); write it as name==version") from None
        if req.url:
            raise KitError(f"{where} packages: '{text}' names a URL; give a name and version from the package index")
        name = canonicalize_name(req.name)
        if name in seen:
            raise KitError(f"{where} packages: '{text}' and '{seen[name]}' name the same package; keep one")
        seen[name] = text
    return tuple(given)


def image_packages(path: Path = IMAGE) -> dict[str, tuple[str, str]]:
    """{canonical name: (name, version)} of what Kaggle's image has, from kaggle-image.txt's name==version pins."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        pins = [s.version for s in req.specifier if s.operator == "=="]
        if pins:
            out[canonicalize_name(req.name)] = (req.name, pins[0])
    return out


def build(config, user: str, folder: Path, image: Path = IMAGE) -> Packages | None:
    """kernels/<name>-packages/ for `config`'s [kernel] packages (None when it has none): resolved and downloaded
    when the manifest does not match the packages and the image, else reused as it is."""
    wanted = requirements(config.kernel.packages, f"{config.path}: [kernel]")
    if not wanted:
        return None
    slug = dataset_slug(metadata.kernel_slug(config))
    key = manifest_key(wanted, image)
    manifest = read_manifest(folder)
    if manifest.get("key") != key or not _wheels_intact(folder, manifest):
        with files.atomic_dir(folder) as tmp:
            names = resolve_cached(wanted, tmp, image, key)
            manifest = {"key": key, "requirements": list(wanted), "python": PYTHON, "platform": PLATFORMS[0],
                        "wheels": {n: _sha256(tmp / n) for n in names}, "modules": list(top_modules(tmp, wanted))}
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    meta = {"id": f"{user}/{slug}", "title": dataset_title(config.kernel.title, slug), "licenses": [{"name": LICENSE}],
            "description": "Wheels for Kaggle's image (Python 3.12, manylinux x86_64), built by kit for: "
                           + ", ".join(wanted) + ". Install with pip install --no-index --find-links <this folder>."}
    text = json.dumps(meta, indent=2) + "\n"
    if not (folder / METADATA).is_file() or (folder / METADATA).read_text(encoding="utf-8") != text:
        files.write_text(folder / METADATA, text)
    return Packages(meta["id"], folder, wanted, tuple(manifest["modules"]), tuple(sorted(manifest["wheels"])))


def manifest_key(wanted: tuple[str, ...], image: Path) -> str:
    h = hashlib.sha256(json.dumps([list(wanted), PYTHON, PLATFORMS]).encode())
    h.update(image.read_bytes())
    return h.hexdigest()[:16]


def read_manifest(folder: Path) -> dict:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _wheels_intact(folder: Path, manifest: dict) -> bool:
    wheels = manifest.get("wheels") or {}
    return all((folder / n).is_file() and _sha256(folder / n) == digest for n, digest in wheels.items())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_cached(wanted: tuple[str, ...], dest: Path, image: Path, key: str) -> list[str]:
    """resolve(), its wheels kept in the scratch folder for the day under the manifest's key and pip's settings
    (_pip_settings): another config with the same packages (the segmentation configs' smp, the DICOM configs'
    pydicom) or a fresh kernels/ folder copies them instead of asking the index again (two pip runs, ~10 s). Only a
    folder of this user's, writable by no one else, is read: the default scratch folder is the system's temp."""
    day = time.strftime("%Y-%m-%d")
    digest = hashlib.sha256(json.dumps([key, day, _pip_settings()]).encode()).hexdigest()[:16]
    cached = paths.scratch_dir() / "wheels" / digest
    kept = read_manifest(cached)
    if kept and _own(cached) and _own(cached.parent) and _wheels_intact(cached, kept):
        try:
            for name in kept["wheels"]:
                shutil.copy2(cached / name, dest / name)
            return sorted(kept["wheels"])
        except OSError:  # replaced or cleaned meanwhile: resolved below
            for stale in dest.glob("*.whl"):
                stale.unlink()
    names = resolve(wanted, dest, image)
    try:
        for old in cached.parent.iterdir() if cached.parent.is_dir() else ():  # earlier days' resolutions
            if old.name != digest and read_manifest(old).get("day", day) != day and _own(old):
                shutil.rmtree(old, ignore_errors=True)
        with files.atomic_dir(cached) as tmp:
            for name in names:
                shutil.copy2(dest / name, tmp / name)
            manifest = {"day": day, "wheels": {n: _sha256(dest / n) for n in names}}
            (tmp / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    except OSError:
        pass  # a full or read-only scratch folder, or another build storing the same: resolved again next time
    return names


def _own(folder: Path) -> bool:
    """`folder` is this user's and no one else may write in it."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _pip_settings() -> str:
    """What decides pip's answer beside the packages and the image: every PIP_ variable, the config files pip reads
    and the constraint files they name, and the interpreter pip resolves for (_pip)."""
    texts = [json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_"))), " ".join(_pip())]
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
    configs = [Path("/etc/pip.conf"), *(Path(d) / "pip" / "pip.conf" for d in dirs if d),
               Path.home() / ".config" / "pip" / "pip.conf", Path.home() / ".pip" / "pip.conf",
               Path(sys.prefix) / "pip.conf", Path(os.environ.get("PIP_CONFIG_FILE") or "/dev/null")]
    named = [os.environ.get("PIP_CONSTRAINT", "")]
    for path in configs:
        text = _read(path)
        texts.append(text)
        named += re.findall(r"^\s*constraints?\s*=\s*(.+?)\s*$", text, re.M)
    texts += [_read(Path(p)) for line in named for p in line.split() if p]
    return "\n".join(texts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def resolve(wanted: tuple[str, ...], dest: Path, image: Path = IMAGE) -> list[str]:
    """Download into `dest` the wheels of `wanted` and of their dependencies that the image lacks; the file
    names. A package the config asks for that the image has is resolved like the others (a newer version
    installs over the image's)."""
    asked = {canonicalize_name(Requirement(r).name) for r in wanted}
    have = {k: v for k, v in image_packages(image).items() if k not in asked}
    pip = _pip()
    target = ["--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp", "--abi", ABI,
              *(a for p in PLATFORMS for a in ("--platform", p))]
    with tempfile.TemporaryDirectory(prefix="kit-packages-") as tmp:
        stubs = Path(tmp) / "image"
        stubs.mkdir()
        for name, version in have.values():
            _stub(stubs, name, version)
        constraints = Path(tmp) / "image.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in have.values()), encoding="utf-8")
        report = Path(tmp) / "report.json"
        _run([*pip, "install", *target, "--dry-run", "--ignore-installed",
              "--target", str(Path(tmp) / "target"), "--report", str(report), "--find-links", str(stubs),
              "-c", str(constraints), *wanted], "resolve", wanted)
        chosen = [(i["metadata"]["name"], i["metadata"]["version"]) for i in json.loads(report.read_text())["install"]
                  if canonicalize_name(i["metadata"]["name"]) not in have]
        if chosen:
            _run([*pip, "download", *target, "--no-deps", "--dest", str(dest),
                  *(f"{n}=={v}" for n, v in chosen)], "download", wanted)
    return sorted(p.name for p in dest.glob("*.whl"))


def _stub(folder: Path, name: str, version: str) -> None:
    """A wheel that holds nothing but the metadata of `name` `version`, as installed on the image."""
    dist = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    with zipfile.ZipFile(folder / f"{dist}-{STUB_BUILD}-{STUB_TAG}.whl", "w") as zf:
        zf.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{dist}.dist-info/WHEEL", f"Wheel-Version: 1.0\nGenerator: kit\nRoot-Is-Purelib: false\n"
                                               f"Tag: {STUB_TAG}\nBuild: {STUB_BUILD}\n")
        zf.writestr(f"{dist}.dist-info/RECORD", "")


def _pip() -> list[str]:
    """pip, run for a Python 3.12 where this machine has one (pip's --python): dependency markers such as
    `python_version < "3.12"` are then read as on the image; else for this interpreter, whose markers may
    add a backport the image does not need."""
    python = image_python()
    return [sys.executable, "-m", "pip", *(["--python", python] if python and python != sys.executable else [])]


def image_python() -> str | None:
    if sys.version_info[:2] == (3, 12):
        return sys.executable
    home = Path.home()
    for candidate in (os.environ.get("PYTHON_KAGGLE"), str(ROOT / ".venv-kaggle" / "bin" / "python"),
                      shutil.which("python3.12"), *sorted(glob.glob(str(home / ".pyenv/versions/3.12*/bin/python3.12")))):
        if not candidate or not Path(candidate).exists():
            continue
        try:
            done = subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12); print(sys.executable)"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return None


def _run(args: list[str], step: str, wanted: tuple[str, ...]) -> None:
    done = subprocess.run([*args, "--disable-pip-version-check"], capture_output=True, text=True)  # not quiet: the causes
    if done.returncode == 0:
        return
    text = done.stdout + done.stderr
    lines = [line.strip().split(" (from versions:")[0] for line in text.splitlines()
             if line.strip() and not line.startswith("WARNING: Location")]
    cause = [line for line in lines if line.startswith(("The user requested", "ERROR: Could not find", "ERROR: No matching"))
             or " depends on " in line]
    detail = "; ".join(cause or lines[-2:])[:400]
    raise KitError(f"packages: pip could not {step} {', '.join(wanted)} for Kaggle's image (Python {PYTHON}, manylinux "
                   f"x86_64, binary wheels, beside kaggle-image.txt's versions): {detail}; change [kernel] packages")


def top_modules(folder: Path, wanted: tuple[str, ...]) -> tuple[str, ...]:
    """The importable top-level names of the requested packages' wheels in `folder` (their dependencies'
    are imported by them): the one named like the distribution, else every package folder but tests."""
    asked = {canonicalize_name(Requirement(r).name) for r in wanted}
    out: list[str] = []
    for wheel in sorted(folder.glob("*.whl")):
        name = parse_wheel_filename(wheel.name)[0]
        if name not in asked:
            continue
        with zipfile.ZipFile(wheel) as zf:
            tops = sorted({n.split("/", 1)[0].removesuffix(".py") for n in zf.namelist()
                           if not n.split("/", 1)[0].endswith((".dist-info", ".data", ".pth"))
                           and (n.endswith(".py") or "/" in n)})
        same = [t for t in tops if canonicalize_name(t) == name]
        out += same or [t for t in tops if t.isidentifier() and t not in ("tests", "test") and not t.startswith("_")]
    return tuple(out)
