"""Gigapixel TIFFs read a region at a time (kit.data.tiffs): every layout hubmap ships (tiled and compressed, a
pyramid, channel-first pages with leading axes of one, strips) read the same pixels; a reduced read from the pyramid
or by block means; one line for a file that is not one image; a reduced mask's
full-resolution code built a band at a time, and a full-resolution code read at the reduced size (kit.data.stitch)."""
import numpy as np
import pandas as pd
import pytest

from kit.data import rle, stitch, tiffs
from kit.errors import KitError

tifffile = pytest.importorskip("tifffile")

IMAGE = (np.arange(100 * 130 * 3) % 251).astype(np.uint8).reshape(100, 130, 3)


def write(path, kind: str):
    if kind == "tiled":
        tifffile.imwrite(path, IMAGE, tile=(32, 32), compression="zlib")
    elif kind == "pyramid":
        with tifffile.TiffWriter(path) as w:
            w.write(IMAGE, tile=(32, 32), subifds=1, compression="zlib")
            w.write(IMAGE[::2, ::2] // 2, tile=(32, 32), subfiletype=1)  # a level kit must read, not recompute
    elif kind == "channel_first":
        tifffile.imwrite(path, IMAGE.transpose(2, 0, 1)[None, None], photometric="minisblack")
    elif kind == "strips":
        tifffile.imwrite(path, IMAGE, rowsperstrip=7)
    return path


@pytest.mark.parametrize("kind", ["tiled", "pyramid", "channel_first", "strips"])
def test_every_layout_reads_as_height_width_channels(tmp_path, kind):
    with tiffs.Tiff(write(tmp_path / "a.tiff", kind)) as image:
        assert (image.height, image.width, image.channels) == (100, 130, 3)
        assert np.array_equal(image.region(10, 20, 50, 70), IMAGE[10:60, 20:90])
        past = image.region(90, 120, 20, 20)  # past the edge: zeros
        assert np.array_equal(past[:10, :10], IMAGE[90:, 120:]) and not past[10:].any() and not past[:, 10:].any()


def test_a_reduced_read_takes_the_pyramid_level_else_block_means(tmp_path):
    with tiffs.Tiff(write(tmp_path / "p.tiff", "pyramid")) as image:
        assert [lv.factor for lv in image.levels] == [1, 2]
        assert np.array_equal(image.region(0, 0, 50, 65, reduce=2), IMAGE[::2, ::2] // 2)
    with tiffs.Tiff(write(tmp_path / "t.tiff", "tiled")) as image:
        small = image.reduced(2)  # no pyramid: the mean of each 2 x 2 block
        expected = IMAGE.reshape(50, 2, 65, 2, 3).mean((1, 3)).round()
        assert small.shape == (50, 65, 3) and np.array_equal(small, expected.astype(np.uint8))
        assert image.reduced(3).shape == (34, 44, 3)


@pytest.mark.parametrize("shape, axes", [((2, 3, 8, 9), "QSYX"), ((8, 9, 6), "YXS"), ((8, 9), "QQ")])
def test_a_tiff_that_is_not_one_image_is_one_line(shape, axes):
    with pytest.raises(KitError, match="is not one image|has no height and width") as e:
        tiffs.layout(shape, axes, "train/a.tiff")
    assert "\n" not in str(e.value) and "train/a.tiff" in str(e.value)


def test_a_file_that_is_not_a_tiff_is_one_line(tmp_path):
    (tmp_path / "a.tiff").write_bytes(b"not a tiff at all")
    with pytest.raises(KitError, match="not a readable TIFF"):
        tiffs.Tiff(tmp_path / "a.tiff")
    with pytest.raises(KitError, match="no such TIFF"):
        tiffs.Tiff(tmp_path / "missing.tiff")


@pytest.mark.parametrize("reduce", [1, 3, 4])
@pytest.mark.parametrize("order", ["column", "row"])
def test_the_full_resolution_code_is_built_a_band_at_a_time(monkeypatch, reduce, order):
    rng = np.random.default_rng(reduce)
    height, width = 37, 53
    small = rng.random((-(-height // reduce), -(-width // reduce))) < 0.4
    small[:, 2] = True  # a run down a whole column: it crosses the bands' edges
    full = np.repeat(np.repeat(small, reduce, 0), reduce, 1)[:height, :width]
    monkeypatch.setattr(stitch, "BAND_BYTES", height * 2 * reduce)  # bands of a few columns
    assert stitch.encode_reduced(small, reduce, height, width, order) == rle.encode(full, order)
    assert stitch.encode_reduced(np.zeros_like(small), reduce, height, width, order) == ""
    with pytest.raises(KitError, match="is not a 37 x 53 image's"):
        stitch.encode_reduced(small[1:], reduce, height, width, order)


def fragment(folder, layers=range(6), shape=(20, 24)):
    (folder / "surface_volume").mkdir(parents=True)
    for k in layers:
        tifffile.imwrite(folder / "surface_volume" / f"{k:02d}.tif", np.full(shape, 257 * (10 + k), np.uint16))
    return str(folder)


def test_a_fragments_layers_are_its_channels_at_a_reduced_size(tmp_path):
    from kit.data.layers import Layers

    folder = fragment(tmp_path / "1")
    reader = Layers((1, 3, 5), reduce=2)
    assert reader.header(folder) == (10, 12, 3) and reader.full_size(folder) == (20, 24)
    assert reader.read(folder)[0, 0].tolist() == [11, 13, 15]  # 16-bit / 257
    assert Layers((3,)).read(folder)[0, 0].tolist() == [13, 13, 13]


def test_a_slab_of_layers_is_a_canvas_of_as_many_channels_in_its_order(tmp_path):
    from kit.data import canvas
    from kit.data.layers import Layers

    folder = fragment(tmp_path / "1")  # layers 0 to 5
    reader = Layers((5, 4, 3, 2, 1), reduce=2)
    assert reader.header(folder) == (10, 12, 5)
    assert reader.read(folder)[0, 0].tolist() == [15, 14, 13, 12, 11]
    built = canvas.build([folder], None, np.array([[10, 12]]), (16, 16), tmp_path / "cache", 1, log=lambda _: None,
                         reader=reader)
    assert built.channels == 5 and built.path.stat().st_size == 16 * 16 * 5
    pictures, _ = built.tiles(np.array([0]), np.array([[0, 0]]), 8)
    assert pictures.shape == (1, 8, 8, 5) and pictures[0, 0, 0].tolist() == [15, 14, 13, 12, 11]
    three = canvas.build([folder], None, np.array([[10, 12]]), (16, 16), tmp_path / "cache", 1, log=lambda _: None,
                         reader=Layers((1, 3, 5), reduce=2))
    assert three.channels == 3 and three.path != built.path  # the slab stamps its own cache


def test_a_missing_or_misfit_layer_is_one_line(tmp_path):
    from kit.data.layers import Layers

    with pytest.raises(KitError, match=r"surface_volume/07.tif: no such layer file; \[data\] layers = \[1, 4, 7\]"):
        Layers((1, 4, 7)).read(fragment(tmp_path / "1"))
    folder = fragment(tmp_path / "2", layers=(0, 1))
    tifffile.imwrite(tmp_path / "2" / "surface_volume" / "02.tif", np.zeros((20, 25), np.uint16))
    with pytest.raises(KitError, match="02.tif: 20 x 25 px, where layer 0 is 20 x 24"):
        Layers((0, 1, 2)).header(folder)
    tifffile.imwrite(tmp_path / "2" / "surface_volume" / "02.tif", np.zeros((20, 24, 3), np.uint8), photometric="rgb")
    with pytest.raises(KitError, match="02.tif: a layer is one grey image, and this one has 3 channels"):
        Layers((0, 1, 2)).header(folder)


def test_a_full_resolution_code_is_read_at_the_reduced_size(monkeypatch):
    rng = np.random.default_rng(3)
    full = rng.random((37, 53)) < 0.4
    for order in ("column", "row"):
        assert np.array_equal(stitch.decode_reduced(rle.encode(full, order), 37, 53, 4, "x", order), full[::4, ::4])
    with pytest.raises(KitError, match="train.csv row 2: run-length code runs past the image's end"):
        stitch.decode_reduced("1 5000", 37, 53, 4, "train.csv row 2")


def test_a_fragments_area_is_its_mask_png_at_the_reduced_size(tmp_path):
    from PIL import Image

    from kit.data.layers import Layers

    folder = fragment(tmp_path / "1")
    assert Layers((0,), 2).area(folder) is None  # no mask.png: ink anywhere
    area = np.zeros((20, 24), np.uint8)
    area[4:12, 6:20] = 255
    Image.fromarray(area).save(tmp_path / "1" / "mask.png")
    assert np.array_equal(Layers((0,), 2).area(folder), area[::2, ::2] > 0)
    Image.fromarray(area[:, :20]).save(tmp_path / "1" / "mask.png")
    with pytest.raises(KitError, match="mask.png: 20 x 20 px, where the fragment's layers are 20 x 24"):
        Layers((0,), 2).area(folder)


@pytest.mark.parametrize("predicted", ["nothing", "no ink"])
def test_an_empty_ink_mask_is_written_as_vesuvius_grader_reads_one(tmp_path, predicted):
    """Its grader refuses a blank cell (read back as NaN, not text): a fragment without ink, predicted or the prior's
    where no fold trained, is written as [data] empty_mask's one pixel, which it accepts."""
    from kit import config, smoke
    from kit.pipelines import create_pipeline
    from kit.pipelines.segmentation_data import fill
    from kit.run import start
    from kit.smoke.gallery import graders

    cfg = config.load("vesuvius-challenge-ink-detection")
    folder = tmp_path / cfg.spec.slug
    smoke.make_dataset(cfg.spec, folder, seed=0)
    session = start("segmentation", {**cfg.parameters(smoke=True), "data_dir": str(folder),
                                     "output_dir": str(tmp_path / "out")})
    data = create_pipeline(session).load()
    count = len(data.output.ids)
    pred = (np.zeros((count, 1)) if predicted == "nothing"
            else np.zeros((count, 1, *data.test.sizes.max(0)), dtype=bool))
    codes = fill(data, pred, tmp_path)
    assert codes == ["1 1"] * len(data.sample)
    path = tmp_path / "submission.csv"
    pd.DataFrame({"Id": data.sample["Id"], "Predicted": codes}).to_csv(path, index=False)
    graders.check("vesuvius-challenge-ink-detection", path, folder / "sample_submission.csv")


def test_a_slab_costs_its_bytes_and_one_layer_while_it_is_read(tmp_path, monkeypatch):
    """Each 16-bit layer is scaled to bytes in place: no float or three-channel copy of it (at vesuvius' largest
    fragment a layer is 282 MB, and as_bytes' repeat made 420 MB more)."""
    import tracemalloc

    from kit.data import tiffs
    from kit.data.layers import Layers

    monkeypatch.setattr(tiffs, "BLOCK_ROWS", 32)  # a block's copies a small part of the layer, as at real size
    folder = tmp_path / "1" / "surface_volume"
    folder.mkdir(parents=True)
    for k in range(4):  # strips of 16 rows, as a scanner's layers come
        tifffile.imwrite(folder / f"{k:02d}.tif", np.full((600, 500), 257 * (10 + k), np.uint16), rowsperstrip=16)
    folder = str(folder.parent)
    reader = Layers((0, 1, 2, 3))
    tracemalloc.start()
    try:
        slab = reader.read(folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    layer = 600 * 500 * 2
    assert slab.nbytes == 4 * layer / 2 and peak < slab.nbytes + 1.5 * layer, (peak, slab.nbytes, layer)
    assert slab[0, 0].tolist() == [10, 11, 12, 13]
