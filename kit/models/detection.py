"""The detection template's model: torchvision's Faster R-CNN on a timm backbone (`features_only`) with torchvision's
FeaturePyramidNetwork, written against torchvision's public API (BackboneWithFPN's shape, a timm body).

Faster R-CNN is the default (docs/architecture.md says why): its two stages learn boxes from few images faster than
the one-stage heads (RetinaNet's and FCOS's focal losses start from a prior that needs many steps to leave), and
vinbigdata's and siim's winners ran two-stage detectors beside YOLO. kit sizes the images itself (the image cache),
so the model's own transform (GeneralizedRCNNTransform) does not resize again: `Sized` keeps its normalisation (the
backbone's mean and std, applied once here) and its padding to a multiple of 32, and leaves the size alone.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import timm
import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.transform import GeneralizedRCNNTransform
from torchvision.ops import FeaturePyramidNetwork, MultiScaleRoIAlign
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

FPN_CHANNELS = 128
HEAD = 256  # the box head's width (torchvision's 1024 is 6 M weights on 128 FPN channels, for 15 classes)
LEVELS = 3  # the backbone's last three feature maps (strides 8, 16, 32), and a max-pooled fourth


class TimmFpn(nn.Module):
    """A timm model's last LEVELS feature maps through an FPN: an OrderedDict of (B, FPN_CHANNELS, h, w) maps, as
    torchvision's detectors read a backbone."""

    def __init__(self, body: nn.Module, out_channels: int = FPN_CHANNELS):
        super().__init__()
        self.body = body
        self.fpn = FeaturePyramidNetwork(body.feature_info.channels()[-LEVELS:], out_channels, LastLevelMaxPool())
        self.out_channels = out_channels

    def forward(self, x: torch.Tensor) -> OrderedDict:
        features = self.body(x)[-LEVELS:]
        return self.fpn(OrderedDict((str(k), f) for k, f in enumerate(features)))


class Sized(GeneralizedRCNNTransform):
    """The detector's transform without its resize: the images come at the size kit cached them."""

    def resize(self, image, target=None):
        return image, target


def backbone(name: str, pretrained: bool = False, weights: Path | None = None) -> nn.Module:
    kwargs = {"features_only": True}
    if weights is not None:
        return timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(weights)), **kwargs)
    return timm.create_model(name, pretrained=pretrained, **kwargs)


def normalization(name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean and std the backbone's pretrained weights expect (ImageNet's where timm names none)."""
    cfg = timm.models.get_pretrained_cfg(name) if timm.models.is_model(name) else None
    mean = getattr(cfg, "mean", None) or (0.485, 0.456, 0.406)
    std = getattr(cfg, "std", None) or (0.229, 0.224, 0.225)
    return tuple(mean), tuple(std)


def create(name: str, classes: int, image_size: int, max_detections: int = 100, pretrained: bool = False,
           weights: Path | None = None, body: nn.Module | None = None) -> FasterRCNN:
    """Faster R-CNN with `classes` object classes (torchvision's labels 1..classes, 0 the background) on images of
    `image_size` px, keeping at most `max_detections` boxes an image (all of them above a confidence of 0.01: the
    score threshold is the pipeline's, applied after test-time views and folds are fused)."""
    features = TimmFpn(body if body is not None else backbone(name, pretrained, weights))
    strides = features.body.feature_info.reduction()[-LEVELS:] + [features.body.feature_info.reduction()[-1] * 2]
    sizes = tuple((2 * s, 4 * s) for s in strides)  # two anchor sides a level: 16 to 256 px on strides 8 to 64
    anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))
    head = TwoMLPHead(FPN_CHANNELS * 7 * 7, HEAD)
    pool = MultiScaleRoIAlign([str(k) for k in range(LEVELS)], 7, 2)
    mean, std = normalization(name)
    area = image_size * image_size
    proposals = max(64, min(2000, area // 16))  # torchvision's 2000 from 512 px up, fewer on small images
    rois = max(32, min(512, area // 128))  # the regions an image trains the box head on (512 from 256 px up)
    model = FasterRCNN(features, rpn_anchor_generator=anchors, box_roi_pool=pool, box_head=head,
                       box_predictor=FastRCNNPredictor(HEAD, classes + 1),
                       min_size=image_size, max_size=image_size, image_mean=list(mean), image_std=list(std),
                       box_detections_per_img=max_detections, box_score_thresh=0.01,
                       rpn_pre_nms_top_n_train=proposals, rpn_post_nms_top_n_train=proposals,
                       rpn_pre_nms_top_n_test=proposals // 2, rpn_post_nms_top_n_test=proposals // 2,
                       box_batch_size_per_image=rois)
    model.transform = Sized(image_size, image_size, list(mean), list(std), size_divisible=32)
    return model
