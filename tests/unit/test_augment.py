import pytest
import torch

from kit.data.augment import ImageTransform, center_crop, crop_flip_theta

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


def test_crop_area_within_scale():
    g = torch.Generator().manual_seed(0)
    theta = crop_flip_theta(1000, g, (0.25, 1.0), (0.75, 4 / 3), 0.5)
    area = theta[:, 0, 0].abs() * theta[:, 1, 1]
    assert area.min() >= 0.25 - 1e-6 and area.max() <= 1.0 + 1e-6
    assert (theta[:, 0, 0] < 0).float().mean().item() == pytest.approx(0.5, abs=0.05)


def test_center_crop_upsamples_small_sources():
    assert center_crop(torch.rand(1, 3, 4, 4), 6).shape == (1, 3, 6, 6)
