"""The detection template's box-aware augmentation: the boxes move with the pixels (a filled rectangle drawn in the
image is still bounded by its box after the crop, zoom and flip), and boxes that leave the window are dropped."""
import torch

from kit.data.box_augment import BoxTransform, move_boxes


def _bounds(mask: torch.Tensor) -> tuple[int, int, int, int]:
    ys, xs = torch.nonzero(mask, as_tuple=True)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def test_a_drawn_rectangle_stays_inside_its_moved_box():
    side, n = 64, 16
    images = torch.zeros(n, side, side, 3, dtype=torch.uint8)
    images[:, 20:40, 10:30] = 255  # the rectangle x 10..30, y 20..40
    boxes = torch.tensor([[10.0, 20.0, 30.0, 40.0]]).expand(n, 1, 4).clone()
    labels = torch.zeros(n, 1, dtype=torch.int64)
    out = BoxTransform(True, side, crop_scale=0.5, hflip=0.5, seed=3, min_visible=0.0)(
        {"image": images, "boxes": boxes, "labels": labels})
    assert out["image"].shape == (n, 3, side, side)
    checked = 0
    for k in range(n):
        mask = out["image"][k, 0] > 0.5
        if out["labels"][k, 0] < 0:
            assert mask.sum() < 4  # dropped: (nearly) nothing of the rectangle is left in the window
            continue
        x0, y0, x1, y1 = _bounds(mask)
        bx0, by0, bx1, by1 = out["boxes"][k, 0].tolist()
        assert bx0 - 1.5 <= x0 and by0 - 1.5 <= y0 and x1 <= bx1 + 1.5 and y1 <= by1 + 1.5, (k, (x0, y0, x1, y1), out["boxes"][k])
        assert abs(bx0 - x0) < 2.5 and abs(bx1 - x1) < 2.5 and abs(by0 - y0) < 2.5 and abs(by1 - y1) < 2.5  # tight too
        checked += 1
    flips = out["boxes"][:, 0, 0] > 32  # mirrored ones moved to the right half
    assert checked >= n // 2 and flips.any()


def test_boxes_leaving_the_window_are_dropped_and_those_kept_enough_stay():
    side = 100
    boxes = torch.tensor([[[0.0, 0.0, 20.0, 20.0], [40.0, 40.0, 60.0, 60.0], [45.0, 0.0, 65.0, 20.0]]])
    labels = torch.tensor([[1, 2, 3]])
    x0, y0, width = torch.tensor([50.0]), torch.tensor([0.0]), torch.tensor([50.0])  # the top right quarter
    moved, kept = move_boxes(boxes, labels, side, x0, y0, width, torch.tensor([False]), min_visible=0.5)
    assert kept.tolist() == [[-1, -1, 3]]  # outside; a quarter inside; three quarters inside
    assert torch.allclose(moved[0, 2], torch.tensor([0.0, 0.0, 30.0, 40.0]))
