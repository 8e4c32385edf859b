"""Tiles: images larger than the model's input are trained on random tiles and predicted tile by tile, the
tiles overlapping and blended, so a large image keeps its resolution (no resizing away the signal).

A split's images lie on one canvas (kit.data.canvas): the largest image's height and width, at least one tile,
each image at the top left and the rest of the canvas its reflection. Prediction covers the canvas with tiles
whose starts step by tile x (1 - overlap), the last one flush with the edge; each pixel's prediction is the
mean of the tiles over it, weighted by a pyramid that falls towards each tile's edges (where a model sees
least context). A pixel under one tile gets that tile's value exactly.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

EDGE_WEIGHT = 0.05  # a tile's weight at its border, relative to its centre's 1


def starts(length: int, tile: int, overlap: float) -> list[int]:
    """Where tiles of `tile` pixels start along a side of `length` pixels (at least `tile`): every
    tile x (1 - overlap) pixels, and the last one flush with the end."""
    if length <= tile:
        return [0]
    step = max(1, int(tile * (1.0 - overlap)))
    found = list(range(0, length - tile, step))
    return found + [length - tile]


def grid(height: int, width: int, tile: int, overlap: float) -> list[tuple[int, int]]:
    """(top, left) of every tile over a canvas of height x width."""
    return [(y, x) for y in starts(height, tile, overlap) for x in starts(width, tile, overlap)]


def weights(tile: int) -> torch.Tensor:
    """(tile, tile) blending weights: a pyramid, 1 in the centre and EDGE_WEIGHT at the border."""
    ramp = 1.0 - np.abs(np.linspace(-1.0, 1.0, tile)) * (1.0 - EDGE_WEIGHT)
    return torch.from_numpy(np.minimum.outer(ramp, ramp).astype(np.float32))


def blend(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, tile: int, overlap: float,
          chunk: int = 0, keep: torch.Tensor | None = None) -> torch.Tensor:
    """`forward` over the overlapping tiles of (B, C, H, W) canvases (H, W at least `tile`), blended into
    (B, K, H, W) float32; `forward` takes (n, C, tile, tile) and returns (n, K, tile, tile), and is called on
    `chunk` tiles at a time (0: all of them at once). Only a chunk's tiles and predictions are held at a time: a
    gigapixel canvas has thousands (vesuvius' largest fragment, 14,830 x 9,506 px, 8,400 tiles of 256 px at an
    overlap of 0.5: 4 times the canvas if stacked). `keep` (B, tiles of `grid`) bool: only those tiles are
    predicted (kit.data.tissue), and a pixel no kept tile covers is zero in every output."""
    b, _, h, w = x.shape
    places = grid(h, w, tile, overlap)
    if keep is None and places == [(0, 0)] and h == w == tile:  # one tile: the canvas itself
        return forward(x).float()
    keep = torch.ones(b, len(places), dtype=torch.bool) if keep is None else keep.bool().cpu()
    which = keep.nonzero().tolist()  # (canvas, tile) of each kept tile, each canvas's tiles in grid order
    if not which:  # none kept: one tile, to learn K; every output zero
        outputs = forward(x[:1, :, :tile, :tile]).shape[1]
        return torch.zeros(b, outputs, h, w, device=x.device)
    step = chunk or len(which)
    weight = weights(tile).to(x.device)
    out = total = None
    for i in range(0, len(which), step):
        part = [(r, *places[t]) for r, t in which[i : i + step]]
        pred = forward(torch.stack([x[r, :, y : y + tile, left : left + tile] for r, y, left in part])).float()
        if out is None:
            out = torch.zeros(b, pred.shape[1], h, w, device=pred.device)
            total = torch.zeros(b, 1, h, w, device=pred.device)
        for (r, y, left), tile_pred in zip(part, pred):  # a pixel's tiles added in grid order, as they always were
            out[r, :, y : y + tile, left : left + tile] += tile_pred * weight
            total[r, :, y : y + tile, left : left + tile] += weight
    return out / total.clamp(min=EDGE_WEIGHT**2 / 2)  # a covered pixel's total is at least EDGE_WEIGHT ** 2


def places(sizes: np.ndarray, tile: int, draws: np.ndarray) -> np.ndarray:
    """(n, 2) top and left of a random training tile in each image of (n, 2) sizes, from `draws` uniform in [0, 1):
    inside the image where it fits; at its top or left edge where the image is smaller than a tile (the tile then
    takes in the canvas's mirror image beyond it)."""
    return (draws * (np.maximum(np.asarray(sizes) - tile, 0) + 1)).astype(np.int64)
