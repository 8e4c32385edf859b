"""A fragment's surface volume as an image (segmentation: vesuvius-challenge-ink-detection): a fragment is a folder
holding surface_volume/00.tif to 64.tif, one 16-bit TIFF a layer of the papyrus' depth, and `[data] layers` names
the layers read as the channels (the middle of the volume holds the ink: three such as 29, 32, 35, or a slab such
as 24 to 39, each layer a channel; one layer is read as three alike channels), each read at 1/`reduce` a block at a
time (kit.data.tiffs) and scaled to bytes; ink is written inside the fragment's area (mask.png) only. A layer file
that is missing, of another size than the fragment's first, or not one grey image is one line naming it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from kit.data.tiffs import Tiff, as_bytes
from kit.errors import KitError

VOLUME = "surface_volume"  # the layers' folder inside a fragment's
AREA = "mask.png"  # the fragment's area inside its folder: ink is predicted there only


@dataclass(frozen=True)
class Layers:
    """How a fragment folder becomes an (h, w, channels) uint8 image: `layers` (each a channel, or one repeated in
    three) at 1/`reduce` of the fragment's resolution."""

    layers: tuple[int, ...]
    reduce: int = 1

    @property
    def image_channels(self) -> int:
        return 3 if len(self.layers) == 1 else len(self.layers)

    def path(self, folder: str, layer: int) -> Path:
        found = sorted((Path(folder) / VOLUME).glob(f"{layer:02d}.tif*"))
        if not found:
            raise KitError(f"{Path(folder) / VOLUME / f'{layer:02d}.tif'}: no such layer file; [data] layers = "
                           f"{list(self.layers)} reads {VOLUME}/NN.tif for each of them in every fragment's folder")
        return found[0]

    def full_size(self, folder: str) -> tuple[int, int]:
        sizes = {}
        for layer in dict.fromkeys(self.layers):
            with Tiff(self.path(folder, layer)) as image:
                if image.channels != 1:
                    raise KitError(f"{image.path}: a layer is one grey image, and this one has {image.channels} channels")
                sizes[layer] = (image.height, image.width)
        first = self.layers[0]
        for layer, size in sizes.items():
            if size != sizes[first]:
                raise KitError(f"{self.path(folder, layer)}: {size[0]} x {size[1]} px, where layer {first} is "
                               f"{sizes[first][0]} x {sizes[first][1]}; a fragment's layers share one size")
        return sizes[first]

    def header(self, folder: str) -> tuple[int, int, int]:
        h, w = self.full_size(folder)
        return -(-h // self.reduce), -(-w // self.reduce), self.image_channels

    def read(self, folder: str) -> np.ndarray:
        h, w, channels = self.header(folder)  # every layer checked before any is read
        out = np.empty((h, w, channels), np.uint8)  # filled a layer at a time: a slab of 16 is 2.3 GB at fragment 2's size
        for k, layer in enumerate(self.layers):
            with Tiff(self.path(folder, layer)) as image:
                plane = image.reduced(self.reduce)[..., 0]
            # a 16-bit layer scaled to bytes in place (as_bytes makes its copies, and three of them), else as images are
            out[..., k] = (np.floor_divide(plane, 257, out=plane) if plane.dtype == np.uint16
                           else as_bytes(plane[..., None])[..., 0])
            del plane  # before the next layer is read
        if len(self.layers) == 1:
            out[..., 1:] = out[..., :1]
        return out

    def area(self, folder: str) -> np.ndarray | None:
        """(h, w) bool at 1/reduce: the fragment's area (its mask.png nonzero, each block's top left pixel, as masks
        are read), or None where the folder has no mask.png."""
        path = Path(folder) / AREA
        if not path.is_file():
            return None
        with Image.open(path) as im:
            area = np.asarray(im.convert("L")) > 0
        if area.shape != self.full_size(folder):
            raise KitError(f"{path}: {area.shape[0]} x {area.shape[1]} px, where the fragment's layers are "
                           f"{self.full_size(folder)[0]} x {self.full_size(folder)[1]}; a fragment's mask has its size")
        return area[::self.reduce, ::self.reduce]
