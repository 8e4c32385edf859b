"""Tiles: a canvas cut into overlapping tiles and blended back is the canvas again; training windows stay inside."""
import numpy as np
import pytest
import torch

from kit.data import tiles


@pytest.mark.parametrize("length, tile, overlap, expected", [(32, 32, 0.25, [0]), (100, 32, 0.25, [0, 24, 48, 68]),
                                                             (64, 32, 0.0, [0, 32]), (65, 32, 0.5, [0, 16, 32, 33])])
def test_starts_cover_the_side_and_end_flush(length, tile, overlap, expected):
    assert tiles.starts(length, tile, overlap) == expected


@pytest.mark.parametrize("h, w, overlap", [(32, 32, 0.25), (45, 100, 0.25), (70, 33, 0.5), (64, 96, 0.0)])
def test_tiles_reassemble_the_canvas_exactly(h, w, overlap):
    x = torch.randint(0, 256, (2, 3, h, w)).float()
    calls = []

    def identity(t):
        calls.append(len(t))
        return t

    out = tiles.blend(identity, x, 32, overlap, chunk=5)
    assert torch.equal(out.round(), x)  # every pixel's weighted mean of equal values is the value
    assert torch.allclose(out, x, atol=1e-4)
    assert max(calls) <= 5 and sum(calls) == 2 * len(tiles.grid(h, w, 32, overlap))


def test_blending_weighs_tile_centres_over_edges():
    x = torch.zeros(1, 1, 32, 48)
    seen = iter([torch.zeros(1, 1, 32, 32), torch.ones(1, 1, 32, 32)])  # the left tile says 0, the right one 1
    out = tiles.blend(lambda t: next(seen), x, 32, 0.5, chunk=1)
    assert out[0, 0, :, :16].eq(0).all() and out[0, 0, :, 32:].eq(1).all()  # where one tile alone covers
    middle = out[0, 0, 16, 16:32]
    assert middle[0] < 0.1 and middle[-1] > 0.9 and torch.all(middle[1:] >= middle[:-1])  # the nearer centre weighs more


def test_training_tiles_lie_inside_the_image():
    draws = np.random.default_rng(0).random((500, 2))
    at = tiles.places(np.tile([50, 40], (500, 1)), 32, draws)
    assert at[:, 0].min() == 0 and at[:, 0].max() == 18 and at[:, 1].min() == 0 and at[:, 1].max() == 8
    assert tiles.places(np.array([[20, 40]]), 32, np.array([[0.99, 0.5]]))[0, 0] == 0  # smaller than a tile: at the top


def test_a_canvas_is_predicted_a_steps_tiles_at_a_time():
    """Validation and prediction send whole canvases; the model sees the batch's `step` tiles a pass (a gigapixel
    canvas' thousands of tiles went through it in one pass), and the blend is the same as all at once."""
    from kit.data.mask_augment import views
    from kit.train.segmentation import Segmentation

    seen = []

    class Model(torch.nn.Module):
        def forward(self, x):
            seen.append(len(x))
            return x[:, :1] * 0.01

    objective = Segmentation("binary", 32, 0.5, views(0.5))
    x = torch.rand(1, 5, 80, 96)
    batch = {"image": x, "target": torch.zeros(1, 1, 80, 96), "step": torch.tensor([3])}
    with torch.no_grad():
        stepped = objective(Model(), batch)["output"]
        assert max(seen) == 3 and sum(seen) == 2 * len(tiles.grid(80, 96, 32, 0.5))  # two views a tile
        whole = objective(Model(), {**batch, "step": torch.tensor([0])})["output"]
    assert torch.allclose(stepped, whole)
