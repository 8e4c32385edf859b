"""A gigapixel image (a vesuvius fragment's slab of layers, a hubmap slide) costs its own bytes in host memory while it
is decoded onto its canvas, and a thumbnail's when it is shown: no canvas-sized copy beside it, no whole canvas read
for a picture 176 px wide."""
import tracemalloc

import numpy as np
import pytest

from kit.data import canvas
from kit.data.canvas import Canvas


@pytest.mark.parametrize("h, w, height, width", [(10, 12, 10, 12), (10, 12, 16, 16), (3, 2, 11, 9), (7, 5, 7, 20)])
def test_an_image_is_mirrored_onto_its_canvas_as_np_pad_mirrors_it(monkeypatch, h, w, height, width):
    monkeypatch.setattr(canvas, "PAD_ROWS", 3)  # bands of rows smaller than the image and its margins
    array = np.random.default_rng(0).integers(0, 255, (h, w, 2), dtype=np.uint8)
    out = np.zeros((height, width, 2), np.uint8)
    canvas.pad_into(out, array)
    assert np.array_equal(out, np.pad(array, ((0, height - h), (0, width - w), (0, 0)), mode="symmetric"))


class Big:
    """A reader of one large image (as kit.data.layers' and kit.data.tiffs' readers are)."""

    image_channels = 3

    def __init__(self, h, w):
        self.h, self.w = h, w

    def header(self, path):
        return self.h, self.w, 3

    def read(self, path):
        return np.full((self.h, self.w, 3), 7, np.uint8)


def test_decoding_an_image_onto_its_canvas_holds_no_canvas_sized_copy(tmp_path):
    h, w, canvas_size = 1500, 1000, (2000, 1600)  # the largest image sets the canvas; this one is smaller
    picture, whole = h * w * 3, canvas_size[0] * canvas_size[1] * 3
    tracemalloc.start()
    try:
        built = canvas.build(["a"], None, np.array([[h, w]]), canvas_size, tmp_path, workers=1, log=lambda _: None,
                             reader=Big(h, w))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < picture + whole / 2, (peak, picture, whole)  # np.pad's copy of the canvas was `whole` more
    image, _ = built.arrays()
    assert image[0, :h, :w].min() == 7 and image[0].min() == 7  # the margins mirror it


def test_thumbnails_read_every_kth_pixel_of_each_image_at_its_own_size(tmp_path):
    sizes = np.array([[1300, 700], [200, 100]])
    path = tmp_path / "c.u8"
    pixels = np.random.default_rng(1).integers(0, 255, (2, 1300, 700, 5), dtype=np.uint8)
    pixels.tofile(path)
    masks = (pixels[..., :2] > 128).astype(np.uint8)
    masks.tofile(path.with_suffix(".masks.u8"))
    c = Canvas(path, 2, 1300, 700, sizes, mask_channels=2, channels=5)
    pictures, shown = c.thumbnails(np.array([0, 1]), side=512)
    assert canvas.stride(1300, 700, 512) == 3 and canvas.stride(200, 100, 512) == 1
    assert np.array_equal(pictures[0], pixels[0, ::3, ::3]) and pictures[0].shape == (434, 234, 5)
    assert np.array_equal(pictures[1], pixels[1, :200, :100]) and np.array_equal(shown[1], masks[1, :200, :100])
