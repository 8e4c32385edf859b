"""The detection template's part of the resource plan (kit.run.footprint; the others: kit.pipelines.footprints). A
room of its own, so that the other templates' kernels do not import torchvision's detection models and timm with
the plan (3.4 s of a tabular kernel's start)."""
from __future__ import annotations

from kit.models import detection
from kit.params import TrainParams
from kit.pipelines.footprints import cache_need, counted
from kit.runtime.resources import Limits, Need, Sizes
from kit.spec import Spec


class Detection:
    """The image cache at image_size (every image a square), the padded training boxes, and the test set's boxes of
    each fold side by side before they are fused (6 float32 a box, max_detections an image)."""

    @staticmethod
    def sizes(session, data) -> Sizes:
        train = len(data.usable)
        return Sizes(train, data.test.count, data.recipe["classes"], data.target.kind, side=session.params.image_size,
                     row_steps=1)

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        return counted(lambda: detection.create(p.model_name, max(sizes.outputs, 1), p.image_size, p.max_detections))

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        side = s.side or p.image_size
        cache = (s.train_rows + s.test_rows) * side * side * 3
        boxes = s.train_rows * 64 * (16 + 8)  # up to 64 boxes an image, padded
        predictions = s.test_rows * p.max_detections * 6 * 4 * p.folds
        return [cache_need("image cache", cache, limits, f"{side} px, uint8"),
                Need("training boxes", "ram", boxes, note="corners and labels, padded"),
                Need("the folds' test boxes before fusion", "ram", predictions, "prediction")]
