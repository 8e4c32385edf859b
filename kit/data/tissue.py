"""Tissue filtering of tiles (segmentation's `tissue_min`): most of a kidney slide is bare glass, and a tile of glass
teaches nothing and holds nothing to find. A tile's tissue fraction is read from a cheap map of the canvas, every
STRIDE-th pixel each way: a pixel is tissue where its colour is saturated (its RGB bytes' max - min at least
SATURATION_MIN); glass (near white), black padding and grey are not. Training draws its random tiles only from the
places whose fraction reaches the cut; prediction runs the model only on the tiles that reach it, and a pixel no kept
tile covers is predicted empty (kit.data.tiles.blend).
"""
from __future__ import annotations

import numpy as np

from kit.data import tiles

SATURATION_MIN = 20  # max - min of a pixel's RGB bytes: stained tissue is coloured; glass and padding are grey
STRIDE = 4  # the map reads every 4th canvas pixel each way: 1/16 of them


def tissue_pixels(image: np.ndarray) -> np.ndarray:
    """(h, w) bool of an (h, w, 3) uint8 image: its saturated (tissue) pixels."""
    image = np.asarray(image)
    return (image.max(-1).astype(np.int16) - image.min(-1)) >= SATURATION_MIN


def tissue_map(image: np.ndarray, stride: int = STRIDE) -> np.ndarray:
    """(ceil(H / stride), ceil(W / stride)) bool: the tissue of every stride-th pixel of an (H, W, 3) image (a
    memory-mapped canvas row: only those rows are read)."""
    return tissue_pixels(image[::stride, ::stride])


def fractions(found: np.ndarray, places: np.ndarray, tile: int, stride: int = STRIDE) -> np.ndarray:
    """(n,) the share of tissue among the map's samples inside each tile of `tile` px at (n, 2) (top, left) canvas
    pixels: the samples at rows and columns r x stride in [top, top + tile)."""
    total = np.zeros((found.shape[0] + 1, found.shape[1] + 1), np.int64)
    total[1:, 1:] = found.cumsum(0).cumsum(1)
    places = np.asarray(places, np.int64).reshape(-1, 2)
    r0, c0 = -(-places[:, 0] // stride), -(-places[:, 1] // stride)
    r1 = np.minimum(-(-(places[:, 0] + tile) // stride), found.shape[0])
    c1 = np.minimum(-(-(places[:, 1] + tile) // stride), found.shape[1])
    inside = total[r1, c1] - total[r0, c1] - total[r1, c0] + total[r0, c0]
    return inside / np.maximum((r1 - r0) * (c1 - c0), 1)


def candidates(height: int, width: int, tile: int) -> np.ndarray:
    """(n, 2) training tile places of an image of height x width: every tile / 4 px where the tile fits (the top
    left alone on a side the image is smaller than a tile)."""
    step = max(1, tile // 4)
    ys = np.arange(0, max(height - tile, 0) + 1, step)
    xs = np.arange(0, max(width - tile, 0) + 1, step)
    return np.stack(np.meshgrid(ys, xs, indexing="ij"), -1).reshape(-1, 2)


def kept_places(found: np.ndarray, size: tuple[int, int], tile: int, cut: float) -> tuple[np.ndarray, int]:
    """The training tile places of one image (its tissue map `found`, its own size `size`) whose tissue fraction
    reaches `cut`, and how many places there were. None reaching it: every place (an image of no tissue is still seen)."""
    every = candidates(int(size[0]), int(size[1]), tile)
    keep = fractions(found, every, tile) >= cut
    return (every[keep] if keep.any() else every), len(every)


def draw(kept: np.ndarray, size: tuple[int, int], tile: int, draws: np.ndarray) -> np.ndarray:
    """(2,) a random training tile place: one of `kept` from draws[0], moved by up to half the candidates' step
    either way (draws[1:3], uniform in [0, 1)), and held inside the image."""
    step = max(1, tile // 4)
    shift = np.floor((np.asarray(draws[1:3]) - 0.5) * step).astype(np.int64)
    place = kept[min(int(draws[0] * len(kept)), len(kept) - 1)] + shift
    return np.clip(place, 0, np.maximum(np.asarray(size, np.int64) - tile, 0))


def grid_keep(found: np.ndarray, height: int, width: int, tile: int, overlap: float, cut: float) -> np.ndarray:
    """(tiles,) bool: the prediction tiles (kit.data.tiles.grid over a canvas of height x width) of one canvas row
    (its tissue map `found`) whose tissue fraction reaches `cut`."""
    places = np.array(tiles.grid(height, width, tile, overlap), np.int64)
    return fractions(found, places, tile) >= cut
