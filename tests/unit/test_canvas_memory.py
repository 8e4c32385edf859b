"""A gigapixel image (a vesuvius fragment's slab of layers, a hubmap slide) costs its own bytes in host memory while it
is decoded onto its canvas, and a thumbnail's when it is shown: no canvas-sized copy beside it, no canvas pages in
the process, no whole canvas read for a picture 176 px wide."""
import subprocess
import sys

import numpy as np
import pytest

from kit.data import canvas
from kit.data.canvas import Canvas


@pytest.mark.parametrize("h, w, height, width", [(10, 12, 10, 12), (10, 12, 16, 16), (3, 2, 11, 9), (7, 5, 7, 20)])
def test_an_image_is_mirrored_onto_its_canvas_as_np_pad_mirrors_it(monkeypatch, h, w, height, width):
    monkeypatch.setattr(canvas, "PAD_ROWS", 3)  # bands of rows smaller than the image and its margins
    array = np.random.default_rng(0).integers(0, 255, (h, w, 2), dtype=np.uint8)
    out = np.zeros((height, width, 2), np.uint8)
    for top, band in canvas.mirrored_bands(array, height, width):
        out[top:top + len(band)] = band
    assert np.array_equal(out, np.pad(array, ((0, height - h), (0, width - w), (0, 0)), mode="symmetric"))


DECODE = """
import resource, sys, numpy as np, pathlib
from kit.data import canvas

class Big:  # a reader of one large image, as kit.data.layers' and kit.data.tiffs' are
    image_channels = 3
    def header(self, path):
        return 4000, 5000, 3
    def read(self, path):
        return np.full((4000, 5000, 3), 7, np.uint8)

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
built = canvas.build(["a"], None, np.array([[4000, 5000]]), (5000, 6000), pathlib.Path(sys.argv[1]), workers=1,
                     log=lambda _: None, reader=Big())
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
image, _ = built.arrays()
assert image[0].min() == 7 and image[0].max() == 7  # the margins mirror it
"""


def test_decoding_an_image_onto_its_canvas_holds_the_image_and_no_canvas(tmp_path):
    """The process' peak grows by the decoded image and bands of rows (46 MB here, 6 MB in bands of 64 rows): np.pad's
    copy of the canvas and a memory map's pages of it were held beside it, each the canvas' size (240 MB in all)."""
    grew = int(subprocess.run([sys.executable, "-c", DECODE, str(tmp_path)], check=True, capture_output=True,
                              text=True).stdout)
    picture, whole = 4000 * 5000 * 3, 5000 * 6000 * 3
    assert grew < picture + whole, (grew, picture, whole)


def test_thumbnails_read_every_kth_pixel_of_each_image_at_its_own_size(tmp_path):
    sizes = np.array([[1300, 700], [200, 100]])
    path = tmp_path / "c.u8"
    pixels = np.random.default_rng(1).integers(0, 255, (2, 1300, 700, 5), dtype=np.uint8)
    pixels.tofile(path)
    masks = (pixels[..., :2] > 128).astype(np.uint8)
    masks.tofile(path.with_suffix(".masks.u8"))
    c = Canvas(path, 2, 1300, 700, sizes, mask_channels=2, channels=5)
    pictures, shown = c.thumbnails(np.array([0, 1]), side=512)
    assert canvas.thumbnail_cut(1300, 700, 512) == (slice(0, 1300, 3), slice(0, 700, 3))
    assert np.array_equal(pictures[0], pixels[0, ::3, ::3]) and pictures[0].shape == (434, 234, 5)
    assert np.array_equal(shown[0], masks[0, ::3, ::3])
    assert np.array_equal(pictures[1], pixels[1, :200, :100]) and np.array_equal(shown[1], masks[1, :200, :100])


def test_the_prediction_grid_leaves_out_a_test_image_that_could_not_be_read(tmp_path):
    """A bad test image (up to 1% are predicted empty) is 0 x 0: matplotlib refused its empty thumbnail, and the run
    stopped after its masks were written."""
    from types import SimpleNamespace

    from kit.pipelines import segmentation_data

    sizes = np.array([[0, 0], [40, 30], [50, 50]])
    path = tmp_path / "t.u8"
    np.full((3, 50, 50, 3), 90, np.uint8).tofile(path)
    data = SimpleNamespace(test=Canvas(path, 3, 50, 50, sizes), output=SimpleNamespace(ids=["bad", "b", "c"]))
    masks = np.zeros((3, 2, 50, 50), bool)
    masks[1, 1, :10] = True
    pictures, shown, kind, titles = segmentation_data.shown_test(data, masks)
    assert titles == ["b", "c"] and [p.shape for p in pictures] == [(40, 30, 3), (50, 50, 3)]
    assert shown[0].shape == (2, 40, 30) and shown[0][1, :10].all() and not shown[0][0].any()
    segmentation_data.grid(tmp_path / "predictions.png", pictures, shown, kind, titles)
    assert (tmp_path / "predictions.png").stat().st_size > 0
