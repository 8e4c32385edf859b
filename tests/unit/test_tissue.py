"""Tissue filtering (kit.data.tissue, segmentation's tissue_min): which tiles of a slide are glass, where training
draws its tiles, and a prediction that runs the model only on the kept tiles and leaves the rest empty."""
import numpy as np
import torch

from kit.data import tiles, tissue

PINK, GLASS = (225, 150, 190), (242, 242, 242)


def slide(height=64, width=96):
    """White glass with a 32 x 32 px square of pink tissue at the top left."""
    image = np.empty((height, width, 3), np.uint8)
    image[:] = GLASS
    image[:32, :32] = PINK
    return image


def test_tissue_is_coloured_pixels_not_glass_nor_black_padding():
    image = np.array([[PINK, GLASS, (0, 0, 0), (128, 128, 128), (200, 180, 200)]], np.uint8)
    assert tissue.tissue_pixels(image).tolist() == [[True, False, False, False, True]]


def test_prediction_tiles_on_glass_are_dropped_with_exact_fractions():
    image = slide()
    found = tissue.tissue_map(image)
    assert found.shape == (16, 24) and found.sum() == 64  # every 4th pixel: the 8 x 8 samples of the square
    places = tiles.grid(64, 96, 32, 0.25)  # tops 0, 24, 32; lefts 0, 24, 48, 64
    share = dict(zip(places, tissue.fractions(found, np.array(places), 32)))
    assert share[(0, 0)] == 1.0 and share[(0, 24)] == 0.25 and share[(24, 0)] == 0.25 and share[(24, 24)] == 0.0625
    assert share[(32, 0)] == 0.0 and share[(0, 48)] == 0.0
    keep = tissue.grid_keep(found, 64, 96, 32, 0.25, 0.05)
    assert [p for p, k in zip(places, keep) if k] == [(0, 0), (0, 24), (24, 0), (24, 24)]  # 4 of 12
    assert tissue.grid_keep(found, 64, 96, 32, 0.25, 0.1).sum() == 3


def test_training_draws_only_places_with_tissue():
    found = tissue.tissue_map(slide())
    kept, every = tissue.kept_places(found, (64, 96), 32, 0.05)
    assert every == 5 * 9 and len(kept) == 16  # tops 0..32 and lefts 0..64 by 8; those overlapping the square
    rng = np.random.default_rng(0)
    drawn = np.stack([tissue.draw(kept, (64, 96), 32, rng.random(3)) for _ in range(200)])
    assert (drawn >= 0).all() and (drawn[:, 0] <= 32).all() and (drawn[:, 1] <= 64).all()
    assert (tissue.fractions(found, drawn, 32) > 0).all()
    blank = np.zeros((16, 24), bool)  # an image without tissue: every place, not none
    assert len(tissue.kept_places(blank, (64, 96), 32, 0.05)[0]) == 45


def test_blend_predicts_only_kept_tiles_and_leaves_glass_empty():
    x = torch.zeros(2, 3, 64, 96)
    keep = torch.zeros(2, 12, dtype=torch.bool)
    keep[0, 0] = True  # the first canvas: its top-left tile alone; the second: none
    calls = []

    def forward(t):
        calls.append(len(t))
        return torch.full((len(t), 1, 32, 32), 0.7)

    out = tiles.blend(forward, x, 32, 0.25, keep=keep)
    assert out.shape == (2, 1, 64, 96) and sum(calls) == 1
    assert torch.allclose(out[0, 0, :32, :32], torch.tensor(0.7)) and out[0, 0, 32:].eq(0).all()
    assert out[0, 0, :, 32:].eq(0).all() and out[1].eq(0).all()
    whole = tiles.blend(forward, x, 32, 0.25)  # no keep: every tile, as before
    assert torch.allclose(whole, torch.tensor(0.7))
