"""`make quality`'s segmentation row: kit's default recipe against the plain smp loop a competitor writes.

  salt   TGS's layout (kit.smoke.segmentation: 28 px grey seismic-like texture, salt a brighter smoother blob,
         a third of the images empty), 480 training images and 160 held out, whose masks only this file knows

Both train smp's Unet on timm's test_efficientnet from random init (`tu-test_efficientnet`), 32 px inputs, the
same epochs and peak learning rate. kit runs the built notebook (`kit run`, 2 folds, only the model's size and
the data-size settings given): BCE + Dice, flips, EMA, flip TTA, the threshold and the smallest kept component
chosen out of fold. The plain loop: every training image resized to 32 px, AdamW, a cosine schedule over all
steps, BCE, batch 16, no augmentation; predictions resized back and cut at 0.5. Both predict the held-out
images, scored by TGS's metric (map_iou: mean precision over IoU 0.5 to 0.95 per image, an empty prediction
of an empty mask scoring 1), the submission's run-length codes decoded as the grader decodes them.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from kit import config
from kit.data import rle
from kit.smoke import segmentation as smoke_segmentation
from kit.train import mask_metrics

COMP = "tgs-salt-identification-challenge"
ENCODER, SIZE, EPOCHS, LR, BATCH = "tu-test_efficientnet", 32, 20, 3e-3, 16
SIZES = dict(train=480, test=160, side=28)


def map_iou(masks: dict[str, np.ndarray], answers: dict[str, tuple[np.ndarray, np.ndarray]]) -> float:
    """The held-out images' mean map_iou; `masks` holds a bool mask per id."""
    scores = [mask_metrics.per_pair("map_iou", masks[i].sum(), (masks[i] & truth).sum(), truth.sum(), truth.size)
              for i, (_, truth) in answers.items()]
    return float(np.mean(scores))


def plain_smp(drawn: smoke_segmentation.Drawn, loop: Callable) -> dict[str, np.ndarray]:
    """smp's Unet on the same encoder, trained by `loop` (quality.plain_loop) as a competitor writes it first;
    a 0.5 cut of each test image."""
    import segmentation_models_pytorch as smp

    def tensors(split):
        ids = list(getattr(drawn, split))
        x = torch.tensor(np.stack([getattr(drawn, split)[i][0] for i in ids]), dtype=torch.float32)[:, None] / 255
        y = torch.tensor(np.stack([getattr(drawn, split)[i][1] for i in ids]), dtype=torch.float32)[:, None]
        grow = lambda t: F.interpolate(t, size=(SIZE, SIZE), mode="bilinear", align_corners=False)  # noqa: E731
        return ids, grow((x - 0.5) / 0.25).expand(-1, 3, -1, -1).contiguous(), (grow(y) > 0.5).float()

    _, x, y = tensors("train")
    torch.manual_seed(0)
    model = smp.Unet(ENCODER, encoder_weights=None, in_channels=3, classes=1)
    loop(model, torch.optim.AdamW(model.parameters(), lr=LR), len(x),
               lambda idx: F.binary_cross_entropy_with_logits(model(x[idx]), y[idx]), EPOCHS, BATCH)
    ids, x, _ = tensors("test")
    with torch.no_grad():
        logits = torch.cat([model(b) for b in x.split(64)])
    side = SIZES["side"]
    prob = F.interpolate(logits.sigmoid(), size=(side, side), mode="bilinear", align_corners=False)[:, 0].numpy()
    return {i: p > 0.5 for i, p in zip(ids, prob)}


def rows(work: Path, run_kit: Callable, make_row: Callable, loop: Callable) -> list:
    """One row: kit's score, the plain loop's, and their seconds. `run_kit`, `make_row` and `loop` are
    quality.py's."""
    spec = config.load(COMP).spec
    data = work / "salt"
    drawn = smoke_segmentation.make_dataset(spec, data, seed=1, **SIZES)
    params = dict(encoder=ENCODER, pretrained=False, image_size=SIZE, epochs=EPOCHS, lr=LR, batch_size=BATCH, folds=2,
                  device="cpu")
    sub, kit_s = run_kit(COMP, data, work / "kit-segmentation", params)
    side = SIZES["side"]
    codes = dict(zip(sub[spec.id_column].astype(str), sub[spec.target_column].fillna("")))
    kit_masks = {i: rle.decode(codes[i], side, side, f"kit's submission, id {i}") for i in drawn.test}
    started = time.time()
    plain_masks = plain_smp(drawn, loop)
    return [make_row("salt 28 px (TGS layout)", "segmentation", "map_iou", map_iou(kit_masks, drawn.test),
                     map_iou(plain_masks, drawn.test), kit_s, time.time() - started)]
