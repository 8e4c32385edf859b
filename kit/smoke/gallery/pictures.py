"""Tiny pictures whose label shows, for the gallery's image competitions: a class is a colour and a stripe
angle, a set of labels is a set of coloured patches, a hidden message is a fine checkerboard. Small (32 px by
default), so that decoding and a tiny CNN on the CPU take a second, not a minute."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from kit.smoke.images import COLORS

# colours far apart, one per label of a label set (plant-pathology's 6, imet's few)
PATCHES = np.array([[230, 40, 40], [40, 200, 60], [50, 80, 230], [240, 220, 40], [200, 60, 220], [40, 220, 230],
                    [250, 140, 20], [255, 255, 255]], np.float32)


def of_class(rng: np.random.Generator, k: int, n: int, size: int = 32) -> Image.Image:
    """Class k of n: its colour and its stripes' angle, at a random phase, with noise."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    angle = np.pi * k / max(n, 2)
    stripes = np.sin(2 * np.pi * 3 * (xx * np.cos(angle) + yy * np.sin(angle)) + rng.uniform(0, 2 * np.pi))
    pixels = COLORS[k % len(COLORS)] * (0.65 + 0.35 * stripes[..., None]) + rng.normal(0, 12, (size, size, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def of_labels(rng: np.random.Generator, labels: list[int], size: int = 32) -> Image.Image:
    """A grey, noisy ground with one coloured patch per label, each somewhere on it."""
    pixels = np.full((size, size, 3), 110, np.float32) + rng.normal(0, 12, (size, size, 3))
    side = max(size // 3, 4)
    for j in labels:
        y, x = (int(v) for v in rng.integers(0, size - side, 2))
        pixels[y:y + side, x:x + side] = PATCHES[j % len(PATCHES)] + rng.normal(0, 8, (side, side, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def with_message(cover: Image.Image, rng: np.random.Generator, strength: float = 40.0) -> Image.Image:
    """The cover with a hidden message: a fine checkerboard of +-strength over a random part of it (ALASKA2's
    stego images differ from their cover in high-frequency detail only)."""
    pixels = np.asarray(cover, np.float32).copy()
    h, w = pixels.shape[:2]
    board = (np.indices((h, w)).sum(0) % 2 * 2 - 1).astype(np.float32)[..., None]
    y, x = (int(v) for v in rng.integers(0, h // 2, 2))
    pixels[y:y + h // 2, x:x + w // 2] += strength * board[y:y + h // 2, x:x + w // 2]
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def save(image: Image.Image, path: Path) -> Path:
    """`image` at `path` (JPEG or PNG by its suffix), folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, **({"quality": 92} if path.suffix.lower() in (".jpg", ".jpeg") else {}))
    return path


def hex_id(rng: np.random.Generator, length: int) -> str:
    """`length` hex digits, as the competitions' ids (16 for imet's, 32 for aerial-cactus')."""
    return rng.bytes((length + 1) // 2).hex()[:length]


def hex_ids(rng: np.random.Generator, n: int, length: int) -> list[str]:
    """n distinct hex ids."""
    ids: dict[str, None] = {}
    while len(ids) < n:
        ids[hex_id(rng, length)] = None
    return list(ids)
