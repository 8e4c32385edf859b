"""The detection template's device step of a batch: uint8 images (B, S, S, 3) as float (B, 3, S, S) in 0..1 (the
detector normalises them), and for training a random scale and crop and a horizontal flip, each image's boxes moved
with its pixels.

Boxes travel padded: (B, G, 4) float32 corners in the cached image's pixels, (B, G) int64 labels, -1 for no box. A
crop zooms a window of `scale` x the side (a random share in [crop_scale, 1]) at a random place back to the full side
(one affine grid for the batch); each box is cut to the window and kept where at least `min_visible` of its area is
left in it (and it is a pixel wide and high), else dropped (label -1): a finding cut in half still teaches the
detector, a sliver of one does not.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from kit.data.batch import Batch

MIN_VISIBLE = 0.4  # the share of a box's area a crop must keep for the box to stay a target
MIN_SIDE = 1.0  # pixels: a box thinner than this after the crop is dropped


def geometry(n: int, side: int, crop_scale: float, hflip: float, generator: torch.Generator, device) -> tuple:
    """Each image's window (x0, y0, width): a square of side x a share in [crop_scale, 1] at a random place, and
    whether it is mirrored."""
    scale = crop_scale + (1.0 - crop_scale) * torch.rand(n, generator=generator)
    width = scale * side
    x0 = (side - width) * torch.rand(n, generator=generator)
    y0 = (side - width) * torch.rand(n, generator=generator)
    flip = torch.rand(n, generator=generator) < hflip
    return x0.to(device), y0.to(device), width.to(device), flip.to(device)


def warp(images: torch.Tensor, x0, y0, width, flip) -> torch.Tensor:
    """(B, 3, S, S) images: each one's window zoomed to the full side, mirrored where `flip`."""
    n, _, h, w = images.shape
    a = width / w
    theta = torch.zeros(n, 2, 3, device=images.device, dtype=torch.float32)
    theta[:, 0, 0] = torch.where(flip, -a, a)
    theta[:, 0, 2] = (2 * x0 + width) / w - 1
    theta[:, 1, 1] = width / h
    theta[:, 1, 2] = (2 * y0 + width) / h - 1
    grid = F.affine_grid(theta, (n, 3, h, w), align_corners=False)
    return F.grid_sample(images.float(), grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def move_boxes(boxes: torch.Tensor, labels: torch.Tensor, side: int, x0, y0, width, flip,
               min_visible: float = MIN_VISIBLE) -> tuple[torch.Tensor, torch.Tensor]:
    """Boxes (B, G, 4) and labels (B, G) after each image's window and flip: cut to the window, scaled to the full
    side, mirrored; those keeping less than `min_visible` of their area (or thinner than MIN_SIDE) get label -1."""
    zoom = (side / width)[:, None, None]
    origin = torch.stack([x0, y0, x0, y0], 1)[:, None, :]
    moved = (boxes - origin) * zoom
    clipped = moved.clamp(0, side)
    area = (moved[..., 2] - moved[..., 0]).clamp(min=0) * (moved[..., 3] - moved[..., 1]).clamp(min=0)
    kept_w, kept_h = clipped[..., 2] - clipped[..., 0], clipped[..., 3] - clipped[..., 1]
    visible = kept_w.clamp(min=0) * kept_h.clamp(min=0) / area.clamp(min=1e-6)
    keep = (labels >= 0) & (visible >= min_visible) & (kept_w >= MIN_SIDE) & (kept_h >= MIN_SIDE)
    mirrored = torch.stack([side - clipped[..., 2], clipped[..., 1], side - clipped[..., 0], clipped[..., 3]], -1)
    out = torch.where(flip[:, None, None], mirrored, clipped)
    return torch.where(keep[..., None], out, torch.zeros_like(out)), torch.where(keep, labels, torch.full_like(labels, -1))


class BoxTransform:
    """The device step: images to float channels first; training, the random window and flip on images and boxes."""

    def __init__(self, train: bool, side: int, crop_scale: float = 0.6, hflip: float = 0.5, seed: int = 0,
                 min_visible: float = MIN_VISIBLE):
        self.train, self.side, self.crop_scale, self.hflip, self.min_visible = train, side, crop_scale, hflip, min_visible
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, batch: Batch) -> Batch:
        images = batch["image"].permute(0, 3, 1, 2).float().div_(255.0)
        out = {**batch, "image": images}
        if not self.train or "boxes" not in batch:
            return out
        geo = geometry(len(images), self.side, self.crop_scale, self.hflip, self.generator, images.device)
        out["image"] = warp(images, *geo)
        out["boxes"], out["labels"] = move_boxes(batch["boxes"], batch["labels"], self.side, *geo, self.min_visible)
        return out
