"""A slab of a fragment's layers as the channels (vesuvius: `[data] layers` of any count, kit.data.layers; read onto
a canvas of as many channels in tests/unit/test_tiffs.py): the encoder's first convolution as wide (a local file of
RGB weights adapted as timm adapts its own), the inputs normalised in each, and the plan's canvases counted so."""
import numpy as np
import pytest
import torch

from kit.data import canvas
from kit.models import segmentation as models


@pytest.mark.parametrize("encoder", ["resnet18", "tu-test_efficientnet"])
def test_an_encoders_rgb_weights_file_loads_into_a_slab_wide_first_convolution(tmp_path, encoder):
    torch.manual_seed(0)
    rgb = models.create("Unet", encoder, 1)
    state = rgb.encoder.state_dict() if not encoder.startswith("tu-") else rgb.encoder.model.state_dict()
    torch.save(state, tmp_path / "weights.pth")
    wide = models.create("Unet", encoder, 1, in_channels=5, weights=tmp_path / "weights.pth")
    [(name, first)] = [(k, v) for k, v in state.items() if v.ndim == 4 and v.shape[1] == 3][:1]
    loaded = dict(wide.encoder.named_parameters())[name if not encoder.startswith("tu-") else f"model.{name}"]
    assert loaded.shape[1] == 5
    # timm's rule: the RGB weights repeated over the channels, scaled by 3 / 5
    assert torch.allclose(loaded.detach(), first.repeat(1, 2, 1, 1)[:, :5] * 3 / 5)
    assert wide(torch.zeros(1, 5, 64, 64)).shape == (1, 1, 64, 64)


def test_a_slabs_inputs_are_normalised_by_the_rgb_averages_in_each_channel():
    mean, std = models.normalization("resnet18")
    mean5, std5 = models.normalization("resnet18", 5)
    assert len(mean5) == len(std5) == 5
    assert mean5[0] == pytest.approx(sum(mean) / 3) and std5[4] == pytest.approx(sum(std) / 3)
    assert models.normalization("resnet18", 3) == (mean, std)


def test_the_plan_counts_each_layer_of_the_slab_on_the_canvases():
    from dataclasses import replace

    from kit import config
    from kit.params import SegmentationParams
    from kit.pipelines import footprints
    from kit.run import footprint
    from kit.runtime.resources import KAGGLE_T4X2

    cfg = config.load("vesuvius-challenge-ink-detection")
    sizes = footprint.completed(cfg.sizes, cfg.spec)
    pixels = sizes.height * sizes.width

    def canvases(layers):
        spec = replace(cfg.spec, layers=tuple(layers))
        needs = footprints.Segmentation.needs(footprint.completed(cfg.sizes, spec), SegmentationParams(), spec, KAGGLE_T4X2)
        [need] = [n for n in needs if n.what == "image and mask canvases"]
        return need.amount

    assert canvases((29, 32, 35)) == pixels * (2 * (3 + 1) + 3)
    assert canvases(range(24, 40)) == pixels * (2 * (16 + 1) + 16)


def test_predict_mode_refuses_test_images_of_other_channels_than_its_training_runs(monkeypatch):
    from types import SimpleNamespace

    from kit.errors import KitError
    from kit.pipelines import segmentation, segmentation_data

    decoded = []
    test = canvas.Canvas(None, 1, 16, 16, np.array([[16, 16]]), channels=3)  # read with three layers
    monkeypatch.setattr(segmentation_data, "decode_test", lambda *a: decoded.append(1) or test)
    pipeline = segmentation.SegmentationPipeline.__new__(segmentation.SegmentationPipeline)
    pipeline.p = SimpleNamespace(image_size=16)
    pipeline.session = SimpleNamespace(log=print, spec=SimpleNamespace(layers=(30, 31, 32)))
    recipe = {"target": {"kind": "rle", "columns": ["Predicted"], "classes": []}, "channels": 16,
              "layers": list(range(24, 40))}
    output = SimpleNamespace(layout="image")
    with pytest.raises(KitError, match=r"\[data\] layers = \[30, 31, 32\], and the model was trained on layers \[24, "):
        pipeline._load_test(recipe, None, output)
    assert not decoded  # refused before any layer is read
    del recipe["layers"]  # a run from before layers were kept: its channels still checked
    with pytest.raises(KitError, match="read as 3 channels and the model was trained on 16; predict with the training"):
        pipeline._load_test(recipe, None, output)


def test_a_band_records_reader_still_makes_three_channel_canvases(tmp_path):
    """contrails' band reader names its bands in `channels` (a string): the canvas takes `image_channels` alone."""
    from kit.data.bands import Bands

    record = tmp_path / "r1"
    record.mkdir()
    for band in range(8, 17):
        np.save(record / f"band_{band:02d}.npy", np.full((6, 6, 8), 250.0 + band, np.float32))
    reader = Bands("ash", 4)
    built = canvas.build([str(record)], None, np.array([reader.header(str(record))[:2]]), (8, 8), tmp_path / "cache", 1,
                         log=lambda _: None, reader=reader)
    assert built.channels == 3 and built.read(np.array([0]))[0].shape == (1, 8, 8, 3)


def test_make_plan_counts_the_slabs_first_convolution_without_the_data():
    """[sizes] says nothing of channels: the layers do, and the encoder's first convolution takes one a layer."""
    from dataclasses import replace

    from kit import config
    from kit.pipelines import footprints
    from kit.run import footprint

    cfg = config.load("vesuvius-challenge-ink-detection")
    sizes = footprint.completed(cfg.sizes, cfg.spec)
    assert sizes.channels == 16 and cfg.sizes.channels == 3
    p = replace(cfg.checked, encoder="resnet18")  # its stem: a 7 x 7 convolution to 64 channels
    assert (footprints.Segmentation.parameters(p, sizes) - footprints.Segmentation.parameters(p, cfg.sizes)
            == (16 - 3) * 64 * 7 * 7)
