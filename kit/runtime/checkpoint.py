"""Checkpoints written atomically, so a kill mid-save leaves the previous one intact."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from kit import files


def save(obj: Any, path: Path) -> None:
    with files.atomic_path(path) as tmp:
        torch.save(obj, tmp)


def load(path: Path, device: str | torch.device = "cpu") -> Any:
    # Our own files hold numpy arrays and plain records next to tensors.
    return torch.load(path, map_location=device, weights_only=False)


def save_json(obj: Any, path: Path) -> None:
    files.write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
