"""Augmentation and normalisation on the batch's device, for uint8 image batches from the cache.

Random-resized-crop and horizontal flip are one affine resampling (`affine_grid` + `grid_sample`) of the
whole batch. The random parameters come from a CPU generator, so a CPU run and a GPU run with the same seed
see the same crops.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


class ImageTransform:
    """uint8 (B, S, S, 3) -> normalised float (B, 3, size, size) (channels_last unless asked not to), where the
    batch lives."""

    def __init__(
        self,
        size: int,
        mean: tuple[float, float, float],
        std: tuple[float, float, float],
        train: bool,
        scale: tuple[float, float] = (0.25, 1.0),  # share of the cached square a training crop covers
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        hflip: float = 0.5,
        seed: int = 0,
        precision=None,  # the precision in force (its `.dtype`, read at every call): half the bytes into the model
        channels_last: bool = True,
    ):
        self.size, self.train, self.scale, self.ratio, self.hflip = size, train, scale, ratio, hflip
        self.precision = precision
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        # x / 255 then (x - mean) / std, folded into one multiply-add
        self.mul = torch.tensor([1 / (255 * s) for s in std]).view(1, 3, 1, 1)
        self.add = torch.tensor([-m / s for m, s in zip(mean, std)]).view(1, 3, 1, 1)
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float()  # (B, 3, S, S), channels_last strides, no copy
        if self.train:
            theta = crop_flip_theta(x.shape[0], self.generator, self.scale, self.ratio, self.hflip).to(x.device)
            grid = F.affine_grid(theta, [x.shape[0], 3, self.size, self.size], align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        else:
            x = center_crop(x, self.size)
        x = x * self.mul.to(x.device) + self.add.to(x.device)
        dtype = self.precision.dtype if self.precision is not None else torch.float32
        return x.to(dtype).contiguous(memory_format=self.memory_format)


def crop_flip_theta(
    n: int, generator: torch.Generator, scale: tuple[float, float], ratio: tuple[float, float], hflip: float
) -> torch.Tensor:
    """(n, 2, 3) affine maps, output -> input in [-1, 1] coordinates, for random crops covering `scale` of
    the area with width/height in `ratio`, flipped left-right with probability `hflip`."""
    area = torch.empty(n).uniform_(scale[0], scale[1], generator=generator)
    aspect = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]), generator=generator).exp()
    w = (area * aspect).sqrt().clamp(max=1.0)  # crop width as a share of the source width
    h = (area / aspect).sqrt().clamp(max=1.0)
    cx = (torch.rand(n, generator=generator) * 2 - 1) * (1 - w)
    cy = (torch.rand(n, generator=generator) * 2 - 1) * (1 - h)
    flip = torch.where(torch.rand(n, generator=generator) < hflip, -1.0, 1.0)
    zero = torch.zeros(n)
    return torch.stack([torch.stack([w * flip, zero, cx], 1), torch.stack([zero, h, cy], 1)], 1)


def center_crop(x: torch.Tensor, size: int) -> torch.Tensor:
    """The centre `size x size` of (B, C, H, W); resized when the source is smaller than `size`."""
    h, w = x.shape[-2:]
    if h < size or w < size:
        return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    top, left = (h - size) // 2, (w - size) // 2
    return x[..., top : top + size, left : left + size]


def hflip(x: torch.Tensor) -> torch.Tensor:
    return x.flip(-1)
