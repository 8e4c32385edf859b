import math

import pytest
import torch

from kit.data.augment import ImageTransform, center_crop, crop_flip_theta, views

MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def test_eval_transform_is_center_crop_and_normalize():
    x = torch.randint(0, 256, (2, 10, 10, 3), dtype=torch.uint8)
    out = ImageTransform(6, MEAN, STD, train=False)(x)
    assert out.shape == (2, 3, 6, 6) and out.is_contiguous(memory_format=torch.channels_last)
    expected = (x.permute(0, 3, 1, 2)[..., 2:8, 2:8].float() / 255 - 0.5) / 0.25
    assert torch.allclose(out, expected, atol=1e-5)


def test_train_transform_same_seed_same_crops():
    x = torch.randint(0, 256, (4, 20, 20, 3), dtype=torch.uint8)
    a = ImageTransform(16, MEAN, STD, train=True, seed=3)(x)
    b = ImageTransform(16, MEAN, STD, train=True, seed=3)(x)
    c = ImageTransform(16, MEAN, STD, train=True, seed=4)(x)
    assert a.shape == (4, 3, 16, 16) and torch.equal(a, b) and not torch.equal(a, c)


def test_full_crop_without_flip_is_identity_and_flip_mirrors():
    x = torch.rand(1, 3, 8, 8)
    g = torch.Generator().manual_seed(0)
    theta = crop_flip_theta(1, g, (1.0, 1.0), (1.0, 1.0), hflip=0.0)
    grid = torch.nn.functional.affine_grid(theta, [1, 3, 8, 8], align_corners=False)
    assert torch.allclose(torch.nn.functional.grid_sample(x, grid, align_corners=False), x, atol=1e-5)
    theta = crop_flip_theta(1, g, (1.0, 1.0), (1.0, 1.0), hflip=1.0)
    grid = torch.nn.functional.affine_grid(theta, [1, 3, 8, 8], align_corners=False)
    assert torch.allclose(torch.nn.functional.grid_sample(x, grid, align_corners=False), x.flip(-1), atol=1e-5)


def test_vflip_turns_the_image_upside_down():
    x = torch.randint(0, 256, (3, 10, 10, 3), dtype=torch.uint8)
    out = ImageTransform(10, MEAN, STD, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), hflip=0.0, vflip=1.0)(x)
    expected = (x.permute(0, 3, 1, 2).flip(-2).float() / 255 - 0.5) / 0.25
    assert torch.allclose(out, expected, atol=1e-4)


def test_rotate90_turns_each_image_by_a_quarter_turn_and_all_four_occur():
    x = torch.randint(0, 256, (64, 8, 8, 3), dtype=torch.uint8)
    out = ImageTransform(8, MEAN, STD, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), hflip=0.0, rotate90=True)(x)
    plain = (x.permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25
    turns = []
    for o, p in zip(out, plain):
        matches = [k for k in range(4) if torch.allclose(o, torch.rot90(p, k, (-2, -1)), atol=1e-4)]
        assert len(matches) == 1
        turns += matches
    assert set(turns) == {0, 1, 2, 3}


def old_crop_flip_theta(n, generator, scale, ratio, hflip):
    """crop_flip_theta as it was before vflip and rotate90: a seed must give the same crops as it did."""
    area = torch.empty(n).uniform_(scale[0], scale[1], generator=generator)
    aspect = torch.empty(n).uniform_(math.log(ratio[0]), math.log(ratio[1]), generator=generator).exp()
    w = (area * aspect).sqrt().clamp(max=1.0)
    h = (area / aspect).sqrt().clamp(max=1.0)
    cx = (torch.rand(n, generator=generator) * 2 - 1) * (1 - w)
    cy = (torch.rand(n, generator=generator) * 2 - 1) * (1 - h)
    flip = torch.where(torch.rand(n, generator=generator) < hflip, -1.0, 1.0)
    zero = torch.zeros(n)
    return torch.stack([torch.stack([w * flip, zero, cx], 1), torch.stack([zero, h, cy], 1)], 1)


def test_a_seed_gives_the_crops_it_gave_before_vflip_and_rotate90():
    new = crop_flip_theta(256, torch.Generator().manual_seed(7), (0.25, 1.0), (3 / 4, 4 / 3), 0.5, vflip=0.0, rotate90=False)
    old = old_crop_flip_theta(256, torch.Generator().manual_seed(7), (0.25, 1.0), (3 / 4, 4 / 3), 0.5)
    assert torch.equal(new.view(torch.int32), old.view(torch.int32))  # bit for bit, signed zeros too
    turned = crop_flip_theta(256, torch.Generator().manual_seed(7), (0.25, 1.0), (3 / 4, 4 / 3), 0.5, vflip=0.5, rotate90=True)
    assert torch.equal(turned[:, :, 2], old[:, :, 2])  # the new draws come last: the crops' centres stay


@pytest.mark.parametrize("hflip, vflip, rotate90, names", [
    (0.5, 0.0, False, ["plain", "hflip"]),
    (0.0, 0.0, False, ["plain"]),
    (0.5, 0.5, True, ["plain", "hflip", "vflip", "rot90", "rot180", "rot270"]),
    (0.0, 0.0, True, ["plain", "rot90", "rot180", "rot270"]),
])
def test_prediction_views_are_those_training_showed(hflip, vflip, rotate90, names):
    x = torch.rand(2, 3, 5, 5)
    shown = views(hflip, vflip, rotate90)
    assert [name for name, _ in shown] == names
    expected = {"plain": x, "hflip": x.flip(-1), "vflip": x.flip(-2), "rot90": torch.rot90(x, 1, (-2, -1)),
                "rot180": x.flip(-1).flip(-2), "rot270": torch.rot90(x, -1, (-2, -1))}
    for name, view in shown:
        assert torch.equal(view(x), expected[name])


def test_crop_area_within_scale():
    g = torch.Generator().manual_seed(0)
    theta = crop_flip_theta(1000, g, (0.25, 1.0), (0.75, 4 / 3), 0.5)
    area = theta[:, 0, 0].abs() * theta[:, 1, 1]
    assert area.min() >= 0.25 - 1e-6 and area.max() <= 1.0 + 1e-6
    assert (theta[:, 0, 0] < 0).float().mean().item() == pytest.approx(0.5, abs=0.05)


def test_center_crop_upsamples_small_sources():
    assert center_crop(torch.rand(1, 3, 4, 4), 6).shape == (1, 3, 6, 6)


def test_quarter_turned_views_keep_the_batchs_memory_format():
    from kit.data.augment import views

    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).view(2, 3, 4, 4)
    for layout in (torch.channels_last, torch.contiguous_format):
        batch = x.contiguous(memory_format=layout)
        for name, view in views(0.0, 0.0, True)[1:]:
            out = view(batch)
            assert out.is_contiguous(memory_format=layout), (name, layout)
            assert torch.equal(out, torch.rot90(x, int(name[3:]) // 90, dims=(-2, -1)))
