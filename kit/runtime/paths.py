"""Where the competition data and the outputs are, on Kaggle and elsewhere."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kit.errors import KitError

KAGGLE_WORKING = Path("/kaggle/working")
KAGGLE_TEMP = Path("/kaggle/temp")
DISK_SHARE = 0.9  # what kit writes to a disk leaves at least a tenth of its free space free


def on_kaggle() -> bool:
    return "KAGGLE_KERNEL_RUN_TYPE" in os.environ


def input_root() -> Path:
    # KIT_KAGGLE_INPUT stands in for /kaggle/input where a local run (make smoke) mimics Kaggle's layout.
    return Path(os.environ.get("KIT_KAGGLE_INPUT", "/kaggle/input"))


def data_dir(given: str, slug: str) -> Path:
    """`given`, or the competition's folder under /kaggle/input in either of Kaggle's mount layouts."""
    if given:
        path = Path(given).expanduser()
        if not path.is_dir():
            raise KitError(f"data_dir '{given}' is not a folder; point it at the competition's data")
        return path
    root = input_root()
    candidates = [root / slug, root / "competitions" / slug]
    for path in candidates:
        if path.is_dir():
            return path
    attached = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    seen = f" (attached: {', '.join(attached)})" if attached else ""
    raise KitError(
        f"competition data not found: looked in {candidates[0]} and {candidates[1]}{seen}; "
        f"add the '{slug}' competition as an input, or set data_dir"
    )


def output_dir(given: str) -> Path:
    """`given`, or /kaggle/working on Kaggle, else ./output; created if missing."""
    if given:
        path = Path(given).expanduser()
    elif on_kaggle() or KAGGLE_WORKING.is_dir():
        path = KAGGLE_WORKING
    else:
        path = Path("output")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"output_dir '{path}' cannot be created ({e.strerror}); choose a writable folder") from None
    return path


def scratch_dir() -> Path:
    """Where kit keeps what need not be saved with the output: decoded caches, tokens, resume state, unpacked
    archives. KIT_CACHE_DIR where set; else Kaggle's /kaggle/temp, else the system's temp folder; never
    /kaggle/working, which Kaggle saves as the kernel's output (20 GB, shared with the checkpoints)."""
    if os.environ.get("KIT_CACHE_DIR"):
        return Path(os.environ["KIT_CACHE_DIR"])
    return (KAGGLE_TEMP if KAGGLE_TEMP.is_dir() else Path(tempfile.gettempdir())) / "kit-cache"


def disk_refusal(nbytes: int, folder: Path, free: int | None = None) -> str:
    """Why `nbytes` should not be written under `folder` ("" if they fit): they must leave a tenth of the disk's
    free space free (`free`: as it was before a write that is under way, else as it is now)."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free if free is None else free
    if nbytes > DISK_SHARE * free:
        return f"it needs {nbytes / 2**30:.1f} GB and {folder} has {free / 2**30:.1f} GB free (kit keeps a tenth of it free)"
    return ""


def require_file(folder: Path, name: str, what: str) -> Path:
    path = folder / name
    if not path.is_file():
        present = ", ".join(sorted(p.name for p in folder.iterdir())[:12])
        raise KitError(f"{what} '{name}' not found in {folder} (it holds: {present}); check [data] in the config")
    return path


def find_weights(given: str) -> Path:
    """A weights file: `given` as a path, else searched for under /kaggle/input, where attached datasets and
    models are mounted in several layouts (/kaggle/input/<slug>/..., /kaggle/input/datasets/<owner>/<slug>/...,
    /kaggle/input/<model>/<framework>/<variation>/<version>/..., /kaggle/input/models/...): first as a path
    relative to any folder there, then by its file name."""
    path = Path(given).expanduser()
    if path.is_file():
        return path
    root = input_root()
    if root.is_dir() and not path.is_absolute():
        relative = path.as_posix()
        for pattern in (relative, f"*/{relative}", f"**/{relative}", f"**/{path.name}"):
            found = sorted(p for p in root.glob(pattern) if p.is_file())
            if found:
                return found[0]
    raise KitError(
        f"weights_path '{given}' not found: looked for {path}"
        + (f" and under {root} (every attached dataset and model)" if not path.is_absolute() else "")
        + "; attach the dataset or model that holds it ([kernel] dataset_sources or model_sources)"
    )


MODEL_FILE = "config.json"  # what marks a Hugging Face model folder


def find_model(given: str) -> Path:
    """A Hugging Face model folder (config.json, weights, tokenizer files): `given` as a path, else searched for
    under /kaggle/input in the mount layouts `find_weights` knows, as a folder relative to any folder there.
    A folder found without config.json is searched below for one with it (a Kaggle model's
    <framework>/<variation>/<version>/ folders, a dataset that holds the model in a subfolder); of several,
    the last in sorted order (a model's newest version)."""
    path = Path(given).expanduser()
    candidates = [path] if path.is_dir() else []
    root = input_root()
    if not candidates and root.is_dir() and given and not path.is_absolute():
        relative = path.as_posix().strip("/")
        for pattern in (relative, f"*/{relative}", f"**/{relative}"):
            candidates = sorted(p for p in root.glob(pattern) if p.is_dir())
            if candidates:
                break
    for folder in candidates:
        if (folder / MODEL_FILE).is_file():
            return folder
        inside = sorted((p.parent for p in folder.rglob(MODEL_FILE)), key=_natural)
        if inside:
            return inside[-1]
    where = f"{path}" + (f" and under {root} (every attached dataset and model)" if given and not path.is_absolute() else "")
    if candidates:
        raise KitError(f"model_path '{given}': {candidates[0]} holds no {MODEL_FILE}; point model_path at the Hugging Face "
                       "model folder (config.json, the weights and the tokenizer's files)")
    raise KitError(f"model_path '{given}' not found: looked for {where}; attach the dataset or model that holds the "
                   "Hugging Face model folder ([kernel] dataset_sources or model_sources) and set model_path to its name")


def _natural(path: Path) -> tuple:
    """Sort key: numbered parts as numbers, so a model's version 10 comes after version 9."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in path.parts)
