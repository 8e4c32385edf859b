"""Measures kit.data.tiffs' decode rate, what `make plan` counts for reading gigapixel TIFFs (kit.pipelines.footprints'
TIFF_RGB_MPX_S, TIFF_LAYER_MPX_S): a slide of RGB bytes written with tifffile as the competitions' come (JPEG tiles, LZW strips,
uncompressed strips; a 16-bit grey layer as vesuvius' are), read whole the way kit reads it (Tiff.reduced: hubmap's slides at
1/4, vesuvius' layers at full size), on one core. Prints megapixels (full-resolution pixels) a second. JPEG needs
imagecodecs (on Kaggle's image).

    python bench/tiff_decode.py [--side 4096]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import tifffile

from kit.data.tiffs import Tiff


def image(side: int, rgb: bool) -> np.ndarray:
    """A smooth, noisy picture: what compresses as a slide does (not a flat one, not pure noise)."""
    rows, cols = np.mgrid[0:side, 0:side].astype(np.float32)
    base = 128 + 60 * np.sin(rows / 97) * np.cos(cols / 131) + np.random.default_rng(0).normal(0, 8, (side, side))
    if not rgb:
        return np.clip(base * 200, 0, 65535).astype(np.uint16)
    return np.clip(np.stack([base, base * 0.8 + 20, base * 0.9], -1), 0, 255).astype(np.uint8)


def rate(path: Path, reduce: int, repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        with Tiff(path) as tiff:
            tiff.reduced(reduce)
            pixels = tiff.height * tiff.width
        best = min(best, time.perf_counter() - start)
    return pixels / best / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=4096, help="the test image's side in pixels")
    args = parser.parse_args()
    rgb, grey = image(args.side, True), image(args.side, False)
    kinds = {"jpeg tiles 512": (rgb, 4, dict(tile=(512, 512), compression="jpeg", photometric="rgb")),
             "lzw strips": (rgb, 4, dict(compression="lzw", photometric="rgb", rowsperstrip=64)),
             "raw strips": (rgb, 4, dict(photometric="rgb", rowsperstrip=64)),
             "16-bit grey raw": (grey, 1, dict(photometric="minisblack"))}
    with tempfile.TemporaryDirectory() as folder:
        for name, (data, reduce, options) in kinds.items():
            path = Path(folder) / f"{name.replace(' ', '_')}.tif"
            try:
                tifffile.imwrite(path, data, **options)
                print(f"{name:<18}{rate(path, reduce):>8.1f} Mpx/s at 1/{reduce} ({path.stat().st_size / 2**20:.0f} MB file)")
            except (ValueError, ImportError, NotImplementedError) as e:  # no imagecodecs: no JPEG
                print(f"{name:<18} not measured ({str(e).splitlines()[0][:80]})")


if __name__ == "__main__":
    main()
