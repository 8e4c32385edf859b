"""The detection template's smoke data: vinbigdata's public layout (kit.smoke.gallery.radiographs), DICOM x-rays with
bright findings, whatever the config; the gallery writes each detection competition's own."""
from __future__ import annotations

from pathlib import Path

from kit.smoke.gallery import radiographs
from kit.spec import Spec


def make_dataset(spec: Spec, folder: Path, seed: int = 0, **sizes: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    radiographs.vinbigdata(folder, seed, **sizes)
