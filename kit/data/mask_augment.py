"""Image and mask batches on the device: the target read from the cached mask bytes, and for training one affine
resampling of both with the same geometry (kit.data.augment's crops, flips and quarter turns: bilinear for the
image and a page, nearest for class masks, so a mask keeps its classes); the test-time views and their inverses.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from kit.data.augment import OnDevice, crop_flip_theta, to_device, turn

KINDS = ("binary", "labels", "classes", "image")  # one 0/1 channel; 0/1 channels; one class index; a page's values


def lookup(kind: str, values: list[int], classes: int) -> np.ndarray:
    """(256,) what each cached mask byte means: binary, the foreground (any value but the least of a two-valued
    mask, and 0); labels, 0/1 per channel (nonzero); classes, the byte itself (a class index); image, the byte."""
    table = np.arange(256, dtype=np.int64)
    if kind in ("binary", "labels"):
        low = min(values) if kind == "binary" and len(values) == 2 else 0
        return (table > low).astype(np.int64)
    return table


class PairTransform:
    """uint8 images (B, S, S, C) and masks (B, S, S, M) -> normalised float images (B, C, size, size) in the
    precision's dtype and the target: binary or labels (B, K, size, size) float 0/1, classes (B, size, size) long,
    image (B, C, size, size) float in [0, 1]. Training crops, flips and turns both alike; evaluation takes the canvas
    as it is."""

    def __init__(self, kind: str, table: np.ndarray, channels: int, mean, std, train: bool, size: int,
                 scale: tuple[float, float], hflip: float, vflip: float, rotate90: bool, seed: int = 0, precision=None,
                 channels_last: bool = True):
        self.kind, self.channels = kind, channels
        self.train, self.size, self.scale = train, size, scale
        self.hflip, self.vflip, self.rotate90, self.precision = hflip, vflip, rotate90, precision
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.constants = OnDevice(table=torch.from_numpy(table),  # x / 255, then (x - mean) / std
                                  mul=torch.tensor([1 / (255.0 * s) for s in std]).view(1, -1, 1, 1),
                                  add=torch.tensor([-m / s for m, s in zip(mean, std)]).view(1, -1, 1, 1))
        self.generator = torch.Generator().manual_seed(seed)

    def target(self, masks: torch.Tensor) -> torch.Tensor:
        """The cached mask bytes (B, S, S, M) as the objective's target, channels first: a page's first `channels`
        channels in [0, 1]; a class index (B, 1, S, S); the first `channels` channels' 0/1 (a grey mask saved in
        three alike channels is one)."""
        if self.kind == "image":
            return masks[..., : self.channels].permute(0, 3, 1, 2).float() / 255.0
        mapped = self.constants(masks.device)["table"][masks.long()]  # (B, S, S, M)
        return mapped[..., :1 if self.kind == "classes" else self.channels].permute(0, 3, 1, 2).float()

    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        y = self.target(batch["mask"]) if "mask" in batch else None
        dtype = self.precision.dtype if self.precision is not None else torch.float32
        out = {k: v for k, v in batch.items() if k not in ("image", "mask")}
        x = batch["image"].permute(0, 3, 1, 2)  # (B, C, S, S) uint8: whole canvases stay so until normalised
        if self.train:
            x = x.float()
            theta = to_device(crop_flip_theta(x.shape[0], self.generator, self.scale, (3 / 4, 4 / 3), self.hflip,
                                              self.vflip, self.rotate90), x.device)
            grid = F.affine_grid(theta, [x.shape[0], 1, self.size, self.size], align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
            if y is not None:  # the same geometry; nearest keeps a mask's values (a page is resampled as the image is)
                y = F.grid_sample(y, grid, mode="bilinear" if self.kind == "image" else "nearest",
                                  padding_mode="reflection", align_corners=False)
        out["image"] = self.normalized(x, dtype)
        if y is not None:
            out["target"] = y[:, 0].round().long() if self.kind == "classes" else y
        return out

    def normalized(self, x: torch.Tensor, dtype: torch.dtype, band: int = 512) -> torch.Tensor:
        """Images (B, C, H, W) of byte values normalised in float32 and cast into `dtype`, `band` rows at a time: a
        whole canvas is never float32 at once (a 16-layer slab of vesuvius' largest fragment is 9 GB so, 4.5 in fp16)."""
        c = self.constants(x.device)
        out = torch.empty(x.shape, dtype=dtype, device=x.device, memory_format=self.memory_format)
        for top in range(0, x.shape[2], band):
            out[:, :, top : top + band] = x[:, :, top : top + band].float() * c["mul"] + c["add"]
        return out


def views(hflip: float, vflip: float = 0.0, rotate90: bool = False) -> list[tuple[Callable, Callable]]:
    """(view, its inverse) of each test-time view of a square tile: as it is, and as training also showed tiles
    (mirrored, upside down, each quarter turn); the inverse turns a prediction of the view back onto the tile."""
    same: Callable = lambda x: x  # noqa: E731
    out = [(same, same)]
    if hflip > 0:
        out.append((partial(torch.flip, dims=(-1,)), partial(torch.flip, dims=(-1,))))
    if vflip > 0:
        out.append((partial(torch.flip, dims=(-2,)), partial(torch.flip, dims=(-2,))))
    if rotate90:
        out += [(partial(turn, k=k), partial(turn, k=4 - k)) for k in (1, 2, 3)]
    return out
