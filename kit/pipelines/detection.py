"""Object detection: torchvision's Faster R-CNN on a timm backbone with an FPN (kit.models.detection).

Data path: the training table's boxes read into one record per image (kit.data.boxes; images without boxes kept as
negatives), several readers' boxes on one image fused (weighted box fusion at `fusion_iou`: vinbigdata's three
radiologists a image); every image (DICOM windowed to uint8 by kit.data.dicom, or a picture) decoded once at
`image_size` x `image_size` into the image cache, its boxes scaled by its own factors. Training batches move as uint8
to the GPU, where a random scale and crop and a flip move the boxes with the pixels (kit.data.box_augment). Validation
predicts as the test set is predicted (the image and its mirror, fused) and scores the metric on the original pixels
(kit.train.detection); the test set's boxes are fused over views, then over folds (`fold_sum`, `fold_mean`), and
written in the sample's string format (kit.data.box_strings). A sample of study rows beside its image rows
([data] study_table, siim-covid19's) has each study written as its classes, derived from its images' boxes
(kit.pipelines.detection_study).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import box_strings
from kit.data.box_augment import BoxTransform
from kit.data.canvas import Canvas, CanvasRows
from kit.data.loaders import DeviceLoader, host_loader
from kit.errors import KitError
from kit.models import detection as models
from kit.pipelines import base, detection_data, detection_points, detection_study
from kit.runtime import hub, paths, runs
from kit.runtime.session import Session
from kit.train import box_kinds, cv, metrics
from kit.train.detection import Detection, fuse_views, pack
from kit.train.targets import Target


@dataclass
class DetectionData:
    ids: np.ndarray  # training image ids
    usable: np.ndarray  # rows that decoded: what folds split
    strata: np.ndarray  # each row's stratum: 0 no box, else 1 + its commonest class
    boxes: np.ndarray  # (N, G, 4) float32 corners in the cached pixels
    labels: np.ndarray  # (N, G) int64, -1 padding
    target: Target
    sample: pd.DataFrame
    train: Canvas | None  # None in predict mode
    test: Canvas  # the sample's images, in its order
    recipe: dict  # target, classes, nothing, side, truth_width, prior
    identity: str = ""
    groups: np.ndarray | None = None
    images: np.ndarray | None = None  # the sample's rows that are test images, in `test`'s order (None: every row)
    studies: detection_study.StudyRows | None = None  # the sample's study rows, with [data] study_table
    test_studies: tuple[str, ...] = ()  # each test image's study (its folder), with study rows


class DetectionPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self._pretrained_failed = False
        self._points = False  # set by load: the target is points, whose folds fuse on one fold's confidence scale

    # -- data -------------------------------------------------------------------------------------------
    def _sample(self):
        s = self.session
        if not s.spec.id_column:
            raise KitError("[data] id_column is empty; the detection template finds each test image by the sample "
                           "submission's ids: name that column")
        sample, path = base.read_sample(s)
        columns = base.sample_targets(sample, s.spec, path)
        if len(columns) != 1:
            raise KitError(f"{path.name}: the detection template fills one column of box strings, and it has "
                           f"{len(columns)} ({', '.join(columns[:4])}); name it in [data] submission_columns")
        return sample, columns[0]

    def load(self) -> DetectionData:
        s, p = self.session, self.p
        if p.image_size % 32:
            raise KitError(f"image_size = {p.image_size}: the detector's feature maps need a multiple of 32")
        sample, column = self._sample()
        study_classes, names, suffix = ({}, (), "")
        if s.trained is not None and s.trained.recipe.get("study"):
            names, suffix = tuple(s.trained.recipe["study"]["names"]), s.trained.recipe["study"]["suffix"]
        elif s.trained is None and s.spec.study_table:
            study_classes, names, suffix = detection_study.read_table(s)
        studies = detection_study.split_sample(sample, s.spec.id_column, suffix) if names else None
        images = studies.images if studies is not None else np.arange(len(sample))
        test_files = detection_data.image_paths(s, s.spec.test_images,
                                                sample[s.spec.id_column].astype(str).to_numpy()[images])
        test_studies = tuple(detection_study.study_of(test_files, s.data_dir / s.spec.test_images)) if names else ()
        if studies is not None and len(studies.rows):
            detection_study.check(studies, list(test_studies), s.spec.study_table)
        if s.trained is not None:
            recipe = s.trained.recipe
            test = detection_data.decode(s, test_files, p.image_size, "test")
            none = np.zeros(0, np.int64)
            data = DetectionData(none.astype(str), none, none, np.zeros((0, 1, 4), np.float32), np.zeros((0, 1), np.int64),
                                 Target(**recipe["target"]), sample, None, test, recipe, images=images, studies=studies,
                                 test_studies=test_studies)
            s.log(self.describe(data))
            self._points = data.target.kind == box_kinds.POINTS.name
            return data
        labels, table_path = detection_data.read_labels(s)
        records = detection_data.fused(labels, p.fusion_iou)
        ids = np.array([r.image_id for r in records])
        train = detection_data.decode(s, detection_data.image_paths(s, s.spec.train_images, ids), p.image_size, "train")
        test = detection_data.decode(s, test_files, p.image_size, "test")
        boxes, box_labels, width = detection_data.padded(records, train.sizes, p.image_size)
        nothing, empty = detection_data.nothing_class(sample.iloc[images], column, labels.classes)
        named = nothing >= 0 and not empty.split()[0].isdigit()  # the sample writes class names ("none 1 0 0 1 1")
        kind = box_kinds.NAMED.name if named else box_kinds.NOTHING.name if nothing >= 0 else box_kinds.BOXES.name
        if nothing < 0 and detection_points.is_points(sample.iloc[images], column):
            kind, named = box_kinds.POINTS.name, False  # kuzushiji's `name x y` centres
        if nothing >= 0 and nothing < len(labels.classes):
            raise KitError(f"the sample writes class {nothing} for an image without findings, and the training boxes "
                           f"hold it as a finding (classes 0 to {len(labels.classes) - 1})")
        classes = labels.classes + tuple(str(k) for k in range(len(labels.classes), max(nothing, 0)))  # those none drew
        target = Target(kind, (column,), classes + ((empty.split()[0],) if named else ()))
        usable = np.array([i for i in range(len(ids)) if i not in train.bad], dtype=np.int64)
        strata = np.array([0 if not len(r.labels) else 1 + int(np.bincount(r.labels).argmax()) for r in records])
        groups = np.array([r.group for r in records]) if any(r.group for r in records) else None
        recipe = {"target": base.target_record(target), "classes": len(classes), "nothing": nothing,
                  "side": p.image_size, "truth_width": width + 1, "prior": [0.0]}
        if names:
            recipe["study"] = {"names": list(names), "suffix": suffix,
                               "table": detection_study.count_table(records, study_classes, len(names))}
        identity = runs.digest(ids, usable, boxes, box_labels, np.array(classes, dtype=str))
        data = DetectionData(ids, usable, strata, boxes, box_labels, target, sample, train, test, recipe, identity, groups,
                             images, studies, test_studies)
        s.log(self.describe(data))
        self._points = kind == box_kinds.POINTS.name
        return data

    def check_data(self) -> None:
        s = self.session
        sample, _ = self._sample()
        detection_data.read_labels(s)
        if s.spec.study_table:
            detection_study.read_table(s)
        detection_data.image_paths(s, s.spec.train_images, [])
        detection_data.image_paths(s, s.spec.test_images, [])

    def describe(self, data: DetectionData) -> str:
        lines = []
        if data.train is not None:
            n = (data.labels[data.usable] >= 0).sum(1)
            lines.append(f"train          {len(data.usable)} images, {int(n.sum())} boxes of {data.recipe['classes']} "
                         f"classes (readers' boxes fused at IoU {self.p.fusion_iou}), {(n == 0).mean():.0%} without a box")
        lines.append(f"test           {data.test.count} images, cached at {self.p.image_size} x {self.p.image_size} px")
        if data.studies is not None:
            lines.append(f"studies        {len(data.studies.rows)} study rows ('{data.studies.suffix}'), each its classes "
                         f"({', '.join(data.recipe['study']['names'])}) from its images' boxes")
        empty = box_kinds.nothing_string(data.target)
        if data.target.kind == box_kinds.POINTS.name:
            lines.append(f"submission     points ('name x y', each box's centre) in '{data.target.columns[0]}'; an "
                         "image without points empty")
        else:
            lines.append(f"submission     box strings in '{data.target.columns[0]}'; an image without boxes "
                         f"{repr(empty) if empty else 'empty'}")
        return "\n".join(lines)

    def show_samples(self, data: DetectionData, n: int = 12):
        import matplotlib.pyplot as plt

        predict = data.train is None
        source, pool = (data.test, np.arange(data.test.count)) if predict else (data.train, data.usable)
        rows = pool[np.linspace(0, len(pool) - 1, min(n, len(pool))).astype(int)] if len(pool) else pool
        pictures, _ = source.read(rows)
        cols = max(1, min(6, len(rows)))
        fig, axes = plt.subplots(max(1, -(-len(rows) // cols)), cols, figsize=(2.2 * cols, 2.3), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, row, picture in zip(axes.flat, rows, pictures):
            ax.imshow(picture)
            if not predict:
                for (x0, y0, x1, y1), k in zip(data.boxes[row], data.labels[row]):
                    if k >= 0:
                        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, color="red", lw=1))
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: DetectionData) -> list[tuple[np.ndarray, np.ndarray]]:
        rows = data.usable
        groups = None if data.groups is None else data.groups[rows]
        folds = cv.make_folds(len(rows), self.p.folds, self.p.seed, classes=data.strata[rows] if len(rows) else None,
                              groups=groups)
        return [(rows[tr], rows[v]) for tr, v in folds]

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: DetectionData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        s, p = self.session, self.p
        args = (p.model_name, data.recipe["classes"], p.image_size, p.max_detections)
        if pretrained and p.weights_path:
            model = models.create(*args, weights=paths.find_weights(p.weights_path))
        elif pretrained and p.pretrained and not self._pretrained_failed:
            try:
                if not hub.fetchable(p.model_name):
                    raise KitError("offline, and no local copy")
                model = models.create(*args, pretrained=True)
            except Exception as e:  # the hub's download fails in many types: offline, DNS, HTTP, cache
                self._pretrained_failed = True
                s.warn(f"pretrained weights for {p.model_name} could not be loaded ({str(e).splitlines()[0][:120]}); "
                       "training from random init. With the internet off, attach the weights and set weights_path")
                model = models.create(*args)
        else:
            model = models.create(*args)
        return model.to(s.device)

    def objective(self, data: DetectionData) -> Detection:
        r = data.recipe
        objective = Detection(r["side"], r["nothing"], self.p.tta, self.p.fusion_iou, self.p.max_detections,
                              r["truth_width"])
        if data.target.kind == box_kinds.POINTS.name:  # each epoch judged as the points will be written: at its cut
            objective.score_rows = detection_points.epoch_score
        return objective

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: DetectionData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        s = self.session
        source = data.test if test else data.train
        dataset = BoxRows(source, rows, None if test else (data.boxes, data.labels), data.recipe["side"])
        loader = host_loader(dataset, batch_size, shuffle=train, workers=s.setup.workers if workers is None else workers,
                             pin=s.device.type == "cuda", seed=seed, drop_last=train, shard=shard, repeat=train)
        transform = BoxTransform(train, self.p.image_size, self.p.crop_scale, self.p.hflip, seed)
        return DeviceLoader(loader, s.device, transform, prefetch=s.setup.prefetch)

    def trial_rows(self, data: DetectionData) -> np.ndarray:
        return data.usable

    def predict_rows(self, data: DetectionData) -> int:
        return data.test.count * (2 if self.p.tta else 1)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: DetectionData, precision, batch_size: int) -> np.ndarray:
        """(test images, max_detections, 6) packed boxes in the cached pixels, views fused."""
        objective = self.objective(data)
        t = data.test
        batches = self.batches(data, np.arange(t.count), train=False, batch_size=batch_size, test=True)
        parts = [pred for _, pred in base.predictions(model, batches, precision, lambda m, b: objective.infer(m, b["image"]))]
        return np.concatenate(parts) if parts else pack([], self.p.max_detections)

    def fold_sum(self, total, pred):
        """The folds' boxes side by side (fused by `fold_mean`)."""
        return pred if total is None else np.concatenate([total, pred], axis=1)

    def fold_mean(self, total, n: int):
        """Each image's boxes of `n` folds fused into one set (weighted box fusion, a box one fold of n found at
        1/n of its confidence). Points fuse at their folds' mean confidence, unscaled: their cut is chosen on the
        out-of-fold rows, one fold's confidences, and a character three folds of five found at 0.6 would otherwise
        fall to 0.36, under a cut it passes."""
        if total is None or n == 1 or total.ndim != 3:
            return total
        rows = []
        for image in total:
            found = image[image[:, 5] >= 0]
            view = {"boxes": found[:, :4], "scores": found[:, 4], "labels": found[:, 5].astype(np.int64)}
            rows.append(fuse_views([view, {k: v[:0] for k, v in view.items()}], self.p.fusion_iou,
                                   self.p.max_detections, sources=1 if self._points else n))
        return pack(rows, self.p.max_detections)

    def judge(self, data: DetectionData, rows: dict, metric: str) -> base.Judged:
        """The out-of-fold score, and the score of writing every image as one without boxes; points are scored at
        the confidence cut that scores them best (kit.pipelines.detection_points)."""
        at = None
        if data.target.kind == box_kinds.POINTS.name:
            at, score = detection_points.choose(rows["pred"], rows["target"], metric)
        else:
            score = metrics.score(metric, rows["pred"], rows["target"])
        empty = np.zeros_like(rows["pred"][:, :1])
        empty[..., 5] = -1
        if data.recipe["nothing"] >= 0:
            empty[:, 0] = [0, 0, 1, 1, 1, data.recipe["nothing"]]
        return base.Judged(score, metrics.score(metric, empty, rows["target"]), "an image without boxes everywhere",
                           cut="" if at is None else f"the out-of-fold point cut {at:.3f}")

    def cut(self, data: DetectionData, pred, oof: list[dict]):
        """Points: the detections below the out-of-fold confidence cut dropped (none where no fold's rows are)."""
        if data.target.kind != box_kinds.POINTS.name or pred.ndim != 3 or not oof:
            return pred
        rows = metrics.join_rows(oof)
        at, score = detection_points.choose(rows["pred"], rows["target"], self.session.spec.metric)
        kept = detection_points.above(pred, at)
        self.session.log(f"point cut      {at:.3f}: out-of-fold {self.session.spec.metric} {score:.4f}; "
                         f"{int((kept[..., 5] >= 0).sum())} of {int((pred[..., 5] >= 0).sum())} test detections written")
        return kept

    def submission(self, data: DetectionData, pred: np.ndarray) -> pd.DataFrame:
        """Each test image's boxes above score_threshold in its own pixels, `label conf x_min y_min x_max y_max`;
        the nothing-found class beside them where the sample writes one; rows of the prior: an image without boxes."""
        sub = data.sample.copy()
        column, target = data.target.columns[0], data.target
        sub[column] = sub[column].astype(object)  # a sample of blank cells is read as floats, which refuse strings
        study = data.recipe.get("study")
        if data.studies is not None and len(data.studies.rows):  # a study's classes; the prior where nothing predicts
            probs = (detection_study.probabilities(pred, list(data.test_studies), data.studies.ids, study["table"],
                                                   data.recipe["nothing"]) if pred.ndim == 3
                     else np.asarray(study["table"])[-1:].repeat(len(data.studies.rows), 0))
            sub.iloc[data.studies.rows, sub.columns.get_loc(column)] = detection_study.cells(tuple(study["names"]), probs)
        images = data.images if data.images is not None else np.arange(len(sub))
        if pred.ndim != 3:
            sub.iloc[images, sub.columns.get_loc(column)] = box_kinds.nothing_string(target)
            return sub[list(data.sample.columns)]
        if target.kind == box_kinds.POINTS.name:
            sub.iloc[images, sub.columns.get_loc(column)] = detection_points.cells(
                pred, data.test.sizes, data.recipe["side"], target.classes, self.p.score_threshold)
            return sub[list(data.sample.columns)]
        names = target.classes if target.kind == box_kinds.NAMED.name else None  # else class ids
        cells = []
        for i, image in enumerate(pred):
            h, w = data.test.sizes[i]
            if h == 0:  # an image that could not be read (named and left out at decoding): nothing found in it
                cells.append(box_kinds.nothing_string(target))
                continue
            side = data.recipe["side"]
            found = image[(image[:, 5] >= 0) & (image[:, 4] >= self.p.score_threshold)]
            boxes = found[:, :4] * np.array([w / side, h / side, w / side, h / side], np.float32)
            boxes = np.clip(boxes, 0, [w, h, w, h])
            labels, scores = found[:, 5].astype(np.int64).tolist(), found[:, 4]
            if data.recipe["nothing"] >= 0:
                conf = 1.0 - float(scores.max(initial=0.0))
                boxes = np.concatenate([boxes, np.array([[0, 0, 1, 1]], np.float32)])
                labels, scores = labels + [data.recipe["nothing"]], np.append(scores, conf)
            labels = [names[k] for k in labels] if names else labels
            cells.append(box_strings.detections_string(labels, scores, boxes, box_kinds.nothing_string(target)))
        sub.iloc[images, sub.columns.get_loc(column)] = cells
        return sub[list(data.sample.columns)]


class BoxRows(CanvasRows):
    """A canvas's rows with their padded boxes, and each image's factors back to its own pixels ("scale")."""

    def __init__(self, canvas: Canvas, rows: np.ndarray, boxes: tuple[np.ndarray, np.ndarray] | None, side: int):
        super().__init__(canvas, rows)
        self.boxes, self.side = boxes, side

    def __getitems__(self, items: list[int]) -> dict[str, torch.Tensor]:
        rows = self.rows[np.asarray(items, dtype=np.int64)]
        pictures, _ = self.canvas.read(rows)
        sizes = self.canvas.sizes[rows].astype(np.float32)
        scale = np.stack([sizes[:, 1], sizes[:, 0]], 1) / self.side
        batch = {"image": torch.from_numpy(np.ascontiguousarray(pictures)), "row": torch.from_numpy(rows),
                 "scale": torch.from_numpy(scale)}
        if self.boxes is not None:
            batch["boxes"] = torch.from_numpy(self.boxes[0][rows])
            batch["labels"] = torch.from_numpy(self.boxes[1][rows])
        return batch

