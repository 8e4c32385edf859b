"""`make quality`'s detection row: kit's detection template against the plain torchvision detection loop a competitor
writes.

  shapes   64 px grey images, each with 1 to 3 objects of three classes (a filled square, a disc, a ring; 12 to 26
           px, a little noise), 128 training images and 64 held out, whose boxes only this file knows

Both train torchvision's Faster R-CNN on timm's test_resnet (`features_only`, random init) through an FPN on its
last three feature maps, at 64 px, of the same sizes (an FPN of 128 channels, a box head of 256), for the same
epochs at the same peak learning rate. kit runs the built notebook (`kit run` on vinbigdata's config, the shapes
written in its layout: 12-bit DICOM files, a row a box; folds = 1 (a fifth held out to choose the epoch: with 2
folds each model trained on half the images for half the steps and lost, docs/benchmarks.md), the template's
defaults: box-aware flips and scales, the best epoch by the config's coco_map40). The plain
loop, as a competitor writes it from torchvision's detection tutorial: the timm body and torchvision's
FeaturePyramidNetwork, one anchor size a level (16 to 128 px) at three aspect ratios, torchvision's heads at those
widths, 128 proposals an image (torchvision's 2,000, with 512 of them sampled, are for 800 px photographs: a minute
a step on a CPU), images at their size, AdamW, a cosine schedule over all steps, batch 16, no augmentation, the last
epoch; every box it keeps (score above torchvision's 0.05) ranked by its score. Scored by mAP at IoU 0.5
(kit.train.box_metrics' voc_map: siim-covid19's grader's average precision, each class's mean).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import box_strings
from kit.data.boxes import ImageBoxes
from kit.train import box_metrics

BACKBONE, SIZE, EPOCHS, LR, BATCH = "test_resnet.r160_in1k", 64, 6, 2e-3, 16
COMP = "vinbigdata-chest-xray-abnormalities-detection"  # the config whose layout the shapes are written in
TRAIN, TEST, CLASSES = 128, 64, ("square", "disc", "ring")
FPN, HEAD, ROIS = 128, 256, 128  # the template's FPN and box-head widths; proposals an image (64 px: a few objects)


def shape(k: int, side: int) -> np.ndarray:
    """Class k's mask in a side x side square: a filled square, a disc, a ring."""
    yy, xx = (np.mgrid[0:side, 0:side] + 0.5 - side / 2) / (side / 2)
    r = np.hypot(xx, yy)
    return [np.ones((side, side), bool), r <= 1.0, (r <= 1.0) & (r >= 0.55)][k]


def make_shapes(seed: int = 0, n: int = TRAIN + TEST) -> tuple[np.ndarray, list[ImageBoxes]]:
    """n (64, 64) uint8 images and their boxes (corners in pixels, class ids): 1 to 3 objects an image, placed
    without overlapping, each a shade brighter than the noisy ground."""
    rng = np.random.default_rng(seed)
    images = np.empty((n, SIZE, SIZE), np.uint8)
    truth = []
    for i in range(n):
        pixels = np.full((SIZE, SIZE), 70.0) + rng.normal(0, 12, (SIZE, SIZE))
        taken = np.zeros((SIZE, SIZE), bool)
        boxes, labels = [], []
        for _ in range(int(rng.integers(1, 4))):
            for _try in range(20):
                side = int(rng.integers(12, 27))
                x, y = (int(v) for v in rng.integers(0, SIZE - side, 2))
                if not taken[y:y + side, x:x + side].any():
                    break
            else:
                continue
            k = int(rng.integers(len(CLASSES)))
            taken[y:y + side, x:x + side] = True
            pixels[y:y + side, x:x + side][shape(k, side)] += rng.uniform(110, 160)
            boxes.append([x, y, x + side, y + side])
            labels.append(k)
        images[i] = np.clip(pixels, 0, 255).astype(np.uint8)
        truth.append(ImageBoxes(f"s{i:04d}", np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int64)))
    return images, truth


class TimmWithFpn(nn.Module):
    """A timm body's last three feature maps through torchvision's FPN (and its max-pooled fourth level)."""

    def __init__(self, name: str, channels: int = 256):
        super().__init__()
        import timm
        from torchvision.ops import FeaturePyramidNetwork
        from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

        self.body = timm.create_model(name, pretrained=False, features_only=True, out_indices=(-3, -2, -1))
        self.fpn = FeaturePyramidNetwork(self.body.feature_info.channels(), channels, LastLevelMaxPool())
        self.out_channels = channels

    def forward(self, x: torch.Tensor) -> OrderedDict:
        return self.fpn(OrderedDict((str(k), f) for k, f in enumerate(self.body(x))))


def plain_detector(images: np.ndarray, truth: list[ImageBoxes], test: np.ndarray, loop: Callable,
                   epochs: int = EPOCHS) -> list[ImageBoxes]:
    """torchvision's FasterRCNN on TimmWithFpn trained by `loop` (quality.plain_loop); each test image's boxes."""
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
    from torchvision.ops import MultiScaleRoIAlign

    torch.manual_seed(0)
    anchors = AnchorGenerator(((16,), (32,), (64,), (128,)), ((0.5, 1.0, 2.0),) * 4)
    model = FasterRCNN(TimmWithFpn(BACKBONE, FPN), rpn_anchor_generator=anchors,
                       box_roi_pool=MultiScaleRoIAlign(["0", "1", "2"], 7, 2), box_head=TwoMLPHead(FPN * 49, HEAD),
                       box_predictor=FastRCNNPredictor(HEAD, len(CLASSES) + 1), min_size=SIZE, max_size=SIZE,
                       rpn_pre_nms_top_n_train=ROIS, rpn_post_nms_top_n_train=ROIS, rpn_pre_nms_top_n_test=ROIS,
                       rpn_post_nms_top_n_test=ROIS, box_batch_size_per_image=ROIS // 2)
    x = torch.from_numpy(images).float().div(255)[:, None].expand(-1, 3, -1, -1)  # (N, 3, H, W) in [0, 1]
    targets = [{"boxes": torch.from_numpy(t.boxes), "labels": torch.from_numpy(t.labels) + 1} for t in truth]

    def loss_of(idx: torch.Tensor) -> torch.Tensor:
        return sum(model(list(x[idx]), [targets[i] for i in idx.tolist()]).values())

    loop(model, torch.optim.AdamW(model.parameters(), lr=LR), len(x), loss_of, epochs, BATCH)
    found = []
    with torch.no_grad():
        for batch in torch.from_numpy(test).float().div(255)[:, None].expand(-1, 3, -1, -1).split(32):
            found += model(list(batch))
    return [ImageBoxes(f"t{i}", f["boxes"].numpy(), f["labels"].numpy() - 1, f["scores"].numpy())
            for i, f in enumerate(found)]


def map50(pred: list[ImageBoxes], truth: list[ImageBoxes]) -> float:
    return box_metrics.voc_map(pred, truth, 0.5)


def plain_row(loop: Callable) -> tuple[float, float]:
    """The plain loop's mAP@0.5 on the held-out images and its seconds."""
    images, truth = make_shapes()
    started = time.time()
    pred = plain_detector(images[:TRAIN], truth[:TRAIN], images[TRAIN:], loop)
    return map50(pred, truth[TRAIN:]), time.time() - started


def write_layout(folder: Path, images: np.ndarray, truth: list[ImageBoxes]) -> None:
    """The shapes in vinbigdata's layout, which the detection template reads: train.csv one row a box (image_id,
    class_name, class_id, rad_id, corners; one reader), train/ and test/ <image_id>.dicom (12-bit, kit.smoke.gallery's
    DICOM writer), sample_submission.csv image_id and an empty PredictionString (no "nothing" class: each image has
    objects)."""
    from kit.smoke.gallery.detections import write_dicom

    rows = [(t.image_id, CLASSES[k], k, "R1", *b) for t in truth[:TRAIN] for k, b in zip(t.labels.tolist(), t.boxes.tolist())]
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["image_id", "class_name", "class_id", "rad_id", "x_min", "y_min", "x_max", "y_max"]).to_csv(
        folder / "train.csv", index=False)
    for i, t in enumerate(truth):
        write_dicom(images[i].astype(np.uint16) * 16, folder / ("train" if i < TRAIN else "test") / f"{t.image_id}.dicom",
                    monochrome1=False)
    pd.DataFrame({"image_id": [t.image_id for t in truth[TRAIN:]], "PredictionString": ""}).to_csv(
        folder / "sample_submission.csv", index=False)


def read_submission(sub: pd.DataFrame, ids: list[str]) -> list[ImageBoxes]:
    """kit's submission's boxes, in `ids`' order (class ids as the shapes' classes)."""
    cells = dict(zip(sub["image_id"].astype(str), sub["PredictionString"]))
    out = []
    for row, i in enumerate(ids):
        names, conf, corners = box_strings.parse_detections(cells[i], row + 2)
        out.append(ImageBoxes(i, corners, np.array([int(float(n)) for n in names], np.int64), conf.astype(np.float32)))
    return out


def rows(work: Path, run_kit: Callable, make_row: Callable, loop: Callable) -> list:
    """One row: kit's mAP@0.5, the plain loop's, and their seconds. `run_kit`, `make_row` and `loop` are
    quality.py's."""
    images, truth = make_shapes()
    data = work / "shapes"
    write_layout(data, images, truth)
    params = dict(model_name=BACKBONE, pretrained=False, image_size=SIZE, epochs=EPOCHS, lr=LR, batch_size=BATCH,
                  folds=1, device="cpu")
    sub, kit_s = run_kit(COMP, data, work / "kit-detection", params)
    kit_score = map50(read_submission(sub, [t.image_id for t in truth[TRAIN:]]), truth[TRAIN:])
    plain, plain_s = plain_row(loop)
    return [make_row("shapes 64 px", "detection", "voc_map50", kit_score, plain, kit_s, plain_s)]


if __name__ == "__main__":  # the plain arm alone: python bench/detect_quality.py
    import quality

    score, seconds = plain_row(quality.plain_loop)
    print(f"plain torchvision Faster R-CNN: mAP@0.5 {score:.4f} in {seconds:.1f} s")
