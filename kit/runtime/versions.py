"""The oldest libraries the kernel runtime supports, checked at set-up with one line.

pyproject.toml states the same floors (a test holds them equal). Kaggle's current GPU image is well above
them; an image pinned from before mid-2024 (torch 2.1) is below, and the run stops at once with what to do.
"""
from __future__ import annotations

import re
from importlib import metadata

from kit.errors import KitError

FLOORS = {  # distribution: (oldest version, what needs it)
    "torch": ("2.3", "torch.amp.GradScaler on every device (fp16 loss scaling, and the CPU's precision tests)"),
    "torchvision": ("0.18", "the torchvision built for torch 2.3"),
    "timm": ("1.0", "timm.layers, pretrained_cfg_overlay, create_optimizer_v2"),
    "scikit-learn": ("1.2", "the fold splitters and metrics"),
}


def parse(version: str) -> tuple[int, ...]:
    """(2, 10, 0) from '2.10.0+cu128': the release numbers, without local or pre-release tags."""
    m = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def check(found: dict[str, str] | None = None) -> str:
    """The line that says which versions run; a KitError naming the first one below its floor."""
    found = found if found is not None else {name: installed(name) for name in FLOORS}
    for name, (floor, why) in FLOORS.items():
        version = found.get(name, "")
        if not version:
            if name == "torchvision":  # optional: the fast JPEG decoder; Pillow decodes without it
                continue
            raise KitError(f"{name} is not installed; kit needs {name}>={floor} ({why})")
        if parse(version) < parse(floor):
            raise KitError(
                f"{name} {version} is older than kit supports ({name}>={floor}: {why}); on Kaggle use the latest "
                "environment (kernel metadata docker_image_pinning_type = \"latest\"), elsewhere upgrade it"
            )
    listed = ", ".join(f"{name} {found[name]}" for name in FLOORS if found.get(name))
    return f"libraries      {listed} (kit needs {', '.join(f'{n}>={f}' for n, (f, _) in FLOORS.items())})"
