"""Augmentation and normalisation on the batch's device, for uint8 image batches from the cache.

Random-resized-crop, flips and quarter turns are one affine resampling (`affine_grid` + `grid_sample`) of
the whole batch. The random parameters come from a CPU generator, so a CPU run and a GPU run with the same
seed see the same crops.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

KEPT_SIDE = 112  # pixels: what a training crop keeps of an image's side, at least (half of 224)
MIN_AREA = 0.25  # the smallest share of the image a crop keeps, at any size


def crop_area(image_size: int, crop_scale: float | str = "auto") -> float:
    """The smallest share of the image a training crop covers. "auto": MIN_AREA (a milder crop than ImageNet's
    0.08, for fine-tuning on small datasets) where that keeps KEPT_SIDE pixels of side, else as much as does:
    all of it at 112 px and below. On small images a quarter of the area has too little left to recognise
    (1,400 digits at 64 px, flipped, 8 epochs: 0.919 accuracy with crops of a quarter, 0.960 with 0.6)."""
    if crop_scale != "auto":
        return float(crop_scale)
    return min(1.0, max(MIN_AREA, (KEPT_SIDE / image_size) ** 2))


HFLIP = 0.5  # the flip probability where mirrored images keep their labels
ASYMMETRIC = 0.1  # mirror asymmetry above which the classes look different mirrored: no flips
PER_CLASS, SAMPLE, SIDE = 64, 1024, 32  # images per class and in all that the check reads, at 32 px


def mirror_asymmetry(read, rows: np.ndarray, labels: np.ndarray | None) -> float:
    """How different each class's mean image is from its mirror image, as a share of the mean image's own
    structure: about 0 where the class's images are as often mirrored as not (photos of animals, objects,
    satellites), large where mirroring changes what they show (digits, letters, text). The sampling noise
    of a mean image is asymmetric too; it is estimated from the difference of two half-means and taken out.
    `read(rows)` gives uint8 (n, S, S, 3) images; `labels` the class of each row (None: one class)."""
    labels = np.zeros(len(rows), np.int64) if labels is None else np.asarray(labels)
    signal = structure = 0.0
    for c in np.unique(labels):
        members = rows[labels == c][:PER_CLASS]
        if len(members) < 8:  # too few for a mean image to say anything
            continue
        gray = torch.from_numpy(read(members)).float().mean(-1, keepdim=True).permute(0, 3, 1, 2)
        x = F.interpolate(gray, size=(SIDE, SIDE), mode="area")[:, 0].double()  # (n, 32, 32)
        mean, halves = x.mean(0), (x[0::2].mean(0), x[1::2].mean(0))
        noise = 0.5 * float(((halves[0] - halves[1]) ** 2).sum())
        signal += max(float(((mean - mean.flip(-1)) ** 2).sum()) - noise, 0.0)
        structure += float(((mean - mean.mean()) ** 2).sum())
    return signal / structure if structure > 0 else 0.0


def flip_probability(hflip: float | str, read, rows: np.ndarray, labels: np.ndarray | None) -> tuple[float, str]:
    """(probability of a mirrored training image, why): `hflip` as given, or for "auto" HFLIP unless the
    classes' mean images differ from their mirror images (`mirror_asymmetry` above ASYMMETRIC)."""
    if hflip != "auto":
        return float(hflip), "as set"
    if labels is not None:  # mirror_asymmetry reads PER_CLASS images of a class: SAMPLE in all
        kept = np.isin(labels, np.unique(labels)[: max(1, SAMPLE // PER_CLASS)])
        rows, labels = rows[kept], labels[kept]
    asymmetry = mirror_asymmetry(read, rows, labels)
    if asymmetry > ASYMMETRIC:
        return 0.0, f"the images look different mirrored (asymmetry {asymmetry:.2f}), so no flips; set hflip to flip anyway"
    return HFLIP, f"the images look alike mirrored (asymmetry {asymmetry:.2f})"


class ImageTransform:
    """uint8 (B, S, S, 3) -> normalised float (B, 3, size, size) (channels_last unless asked not to), where the
    batch lives; or any channel count (arrays: kit.data.arrays), uint8 or float16."""

    def __init__(
        self,
        size: int,
        mean: tuple[float, ...],
        std: tuple[float, ...],
        train: bool,
        scale: tuple[float, float] = (0.25, 1.0),  # share of the cached square a training crop covers
        ratio: tuple[float, float] = (3 / 4, 4 / 3),
        hflip: float = 0.5,
        vflip: float = 0.0,
        rotate90: bool = False,
        seed: int = 0,
        precision=None,  # the precision in force (its `.dtype`, read at every call): half the bytes into the model
        channels_last: bool = True,
        unit: float = 255.0,  # the images' value of 1.0 in mean and std's units: 255 for bytes, 1 for arrays' own stats
    ):
        self.size, self.train, self.scale, self.ratio = size, train, scale, ratio
        self.hflip, self.vflip, self.rotate90 = hflip, vflip, rotate90
        self.precision = precision
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        # x / unit then (x - mean) / std, folded into one multiply-add
        self.constants = OnDevice(mul=torch.tensor([1 / (unit * s) for s in std]).view(1, -1, 1, 1),
                                  add=torch.tensor([-m / s for m, s in zip(mean, std)]).view(1, -1, 1, 1))
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        x = images.permute(0, 3, 1, 2).float()  # (B, C, S, S), channels_last strides, no copy
        if self.train:
            theta = to_device(crop_flip_theta(x.shape[0], self.generator, self.scale, self.ratio, self.hflip,
                                              self.vflip, self.rotate90), x.device)
            grid = F.affine_grid(theta, [x.shape[0], x.shape[1], self.size, self.size], align_corners=False)
            x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        else:
            x = center_crop(x, self.size)
        c = self.constants(x.device)
        x = x * c["mul"] + c["add"]
        dtype = self.precision.dtype if self.precision is not None else torch.float32
        return x.to(dtype).contiguous(memory_format=self.memory_format)


class OnDevice:
    """Host tensors copied to each device once, the first time a batch there needs them: a copy per batch was a
    host wait per batch (a copy from pageable memory blocks until the device has taken it)."""

    def __init__(self, **tensors: torch.Tensor):
        self.host, self.copies = tensors, {}

    def __call__(self, device: torch.device) -> dict[str, torch.Tensor]:
        if device not in self.copies:
            self.copies[device] = {k: v.to(device) for k, v in self.host.items()}
        return self.copies[device]


def to_device(params: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A batch's host-drawn parameters on `device` without the host waiting: from page-locked memory the copy is
    queued, and the caching host allocator keeps the pinned block until the copy has run."""
    if device.type == "cpu":
        return params
    return params.pin_memory().to(device, non_blocking=True)


# rotation matrices of 0, 90, 180 and 270 degrees: exact zeros and ones, so a turned pixel grid lands on itself
QUARTER_TURNS = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]],
                              [[-1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [-1.0, 0.0]]])


def crop_flip_theta(
    n: int, generator: torch.Generator, scale: tuple[float, float], ratio: tuple[float, float], hflip: float,
    vflip: float = 0.0, rotate90: bool = False,
) -> torch.Tensor:
    """(n, 2, 3) affine maps, output -> input in [-1, 1] coordinates, for random crops covering `scale` of
    the area with width/height in `ratio`, flipped left-right with probability `hflip`, upside down with
    probability `vflip`, and turned a random number of quarter turns if `rotate90`. The new draws come after
    the old and only when asked for, so a seed gives the crops and flips it gave before they existed."""
    area = torch.empty(n).uniform_(scale[0], scale[1], generator=generator)
    aspect = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]), generator=generator).exp()
    w = (area * aspect).sqrt().clamp(max=1.0)  # crop width as a share of the source width
    h = (area / aspect).sqrt().clamp(max=1.0)
    cx = (torch.rand(n, generator=generator) * 2 - 1) * (1 - w)
    cy = (torch.rand(n, generator=generator) * 2 - 1) * (1 - h)
    flip = torch.where(torch.rand(n, generator=generator) < hflip, -1.0, 1.0)
    if vflip > 0:
        h = h * torch.where(torch.rand(n, generator=generator) < vflip, -1.0, 1.0)
    zero = torch.zeros(n)
    theta = torch.stack([torch.stack([w * flip, zero, cx], 1), torch.stack([zero, h, cy], 1)], 1)
    if rotate90:  # turn the (square) output first, then map it onto the crop
        theta[:, :, :2] = theta[:, :, :2] @ QUARTER_TURNS[torch.randint(0, 4, (n,), generator=generator)]
    return theta


def center_crop(x: torch.Tensor, size: int) -> torch.Tensor:
    """The centre `size x size` of (B, C, H, W); resized when the source is smaller than `size`."""
    h, w = x.shape[-2:]
    if h < size or w < size:
        return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
    top, left = (h - size) // 2, (w - size) // 2
    return x[..., top : top + size, left : left + size]


def views(hflip: float, vflip: float = 0.0, rotate90: bool = False) -> list[tuple[str, Callable]]:
    """The views of a test batch that prediction averages with tta: the batch as it is, and as training also
    showed its images: mirrored, upside down, each quarter turn (a model that never saw a view is not asked
    about it). The images are square, so a turn keeps the shape."""
    out: list[tuple[str, Callable]] = [("plain", lambda x: x)]
    if hflip > 0:
        out.append(("hflip", partial(torch.flip, dims=(-1,))))
    if vflip > 0:
        out.append(("vflip", partial(torch.flip, dims=(-2,))))
    if rotate90:
        out += [(f"rot{90 * k}", partial(turn, k=k)) for k in (1, 2, 3)]
    return out


def turn(x: torch.Tensor, k: int) -> torch.Tensor:
    """`k` quarter turns of a (B, C, S, S) batch, in its memory format: rot90's odd turns of a channels_last
    batch have strides that are neither layout, which cuDNN would copy at every convolution."""
    layout = torch.channels_last if x.is_contiguous(memory_format=torch.channels_last) else torch.contiguous_format
    return torch.rot90(x, k, dims=(-2, -1)).contiguous(memory_format=layout)
