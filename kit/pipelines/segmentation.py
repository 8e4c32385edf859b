"""Segmentation (and image-to-image) with segmentation_models_pytorch on timm or smp encoders.

Data path: images and masks decoded once onto uint8 canvases (kit.data.canvas); training reads random tiles of
them (kit.data.tiles), moved as uint8 to the GPU, where the image and its mask are cropped, flipped and turned
alike (kit.data.mask_augment); validation and prediction cover each canvas with overlapping tiles, each tile
averaged over its test-time views, and blend them (kit.train.segmentation). The cut that turns probabilities
into masks (each class's threshold and smallest kept component) is chosen on the out-of-fold rows (`cut`), and
the masks are written as the sample submission asks: run-length codes per image or per image and class, or one
row per pixel (kit.data.masks).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import masks as layouts
from kit.data import tissue
from kit.data.canvas import Canvas, CanvasRows
from kit.data.loaders import DeviceLoader, host_loader
from kit.data.mask_augment import PairTransform, lookup, views
from kit.errors import KitError
from kit.models import segmentation as models
from kit.pipelines import base, segmentation_data
from kit.runtime import hub, paths, runs
from kit.runtime.session import Session
from kit.train import cv, mask_metrics
from kit.train.segmentation import Segmentation
from kit.train.targets import Target

MAX_BAD_SHARE = 0.01  # stop when more than this share of a split's images cannot be decoded
FLOAT16_FROM = 2**30  # test predictions larger than this (bytes, in float32) are held in float16


@dataclass
class SegmentationData:
    ids: np.ndarray  # training image ids, one per row of `train`
    usable: np.ndarray  # rows of `train` that decoded: what folds split
    strata: np.ndarray  # each row's stratum: empty, or how much of it the masks cover (binary), its largest class
    target: Target  # kind "rle", "pixels" or "files"; columns: the sample's filled column; classes: the class names
    sample: pd.DataFrame
    train: Canvas | None  # None in predict mode
    test: Canvas  # one row per test image the sample names, in its order (output.ids)
    output: layouts.Output
    recipe: dict  # what prediction needs (the training run's in predict mode): kind, outputs, lookup, views, prior
    identity: str = ""
    groups: np.ndarray | None = None
    assigned: np.ndarray | None = None


class SegmentationPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self._pretrained_failed = False
        self._weights: Path | None = None
        self._tissue: dict[str, tuple[dict[int, np.ndarray], np.ndarray, float]] = {}

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> SegmentationData:
        """Read the training masks' source and the sample submission, check they agree, then decode every image
        and mask once (in predict mode, the sample submission and the test images only)."""
        s, spec = self.session, self.session.spec
        if not spec.id_column:
            raise KitError("[data] id_column is empty; the segmentation template finds each test image by the sample "
                           "submission's ids: name that column")
        sample, sample_path, output = segmentation_data.read_output(s)
        if s.trained is not None:
            return self._load_test(s.trained.recipe, sample, output)
        found = layouts.training(spec, s.data_dir, s.log)
        train, test = segmentation_data.decode(s, found, output, self.p.image_size, spec.metric == "rmse")
        kind, outputs = segmentation_data.kind_of(spec.metric, found, train, self.p.classes)
        target = segmentation_data.target_of(kind, outputs, found, output, sample_path)
        usable = np.array([i for i in range(train.count) if i not in train.bad], dtype=np.int64)
        table = lookup(kind, train.values, outputs)
        strata, shares = segmentation_data.survey(kind, train, table, usable, outputs)
        groups, assigned = (base.fold_keys(spec, found.table, s.data_dir / spec.train) if found.table is not None
                            else (None, None))
        recipe = {"target": base.target_record(target), "kind": kind, "outputs": outputs, "lookup": table.tolist(),
                  "hflip": self.p.hflip, "vflip": self.p.vflip, "rotate90": self.p.rotate90,
                  "prior": segmentation_data.prior(kind, shares, outputs), "bias": segmentation_data.head_bias(kind, shares),
                  "channels": train.channels, "layers": list(spec.layers)}
        ids = np.array(found.ids)
        identity = runs.digest(ids, usable, np.array(target.classes, dtype=str), np.array([train.path.stem]))
        data = SegmentationData(ids, usable, strata, target, sample, train, test, output, recipe, identity, groups, assigned)
        s.log(segmentation_data.describe(data))
        return data

    def check_data(self) -> None:
        """The sample submission's output, the training images and their masks found and matched (none decoded),
        and the fold keys: what load reads before it decodes."""
        s, spec = self.session, self.session.spec
        if not spec.id_column:
            raise KitError("[data] id_column is empty; the segmentation template finds each test image by the sample "
                           "submission's ids: name that column")
        segmentation_data.read_output(s)
        found = layouts.training(spec, s.data_dir, s.log)
        if found.table is not None:
            base.fold_keys(spec, found.table, s.data_dir / spec.train)

    def _load_test(self, recipe: dict, sample: pd.DataFrame, output: layouts.Output) -> SegmentationData:
        """Predict mode: the sample submission and the test images, read as the training run read its own."""
        s = self.session
        target = Target(**recipe["target"])
        if output.layout == "class" and not set(output.classes) <= set(target.classes):
            raise KitError(f"the sample submission's classes {list(output.classes)[:4]} are not the model's "
                           f"{list(target.classes)[:4]}; predict with this competition's model")
        trained_layers = recipe.get("layers", list(s.spec.layers))
        if list(s.spec.layers) != trained_layers:
            raise KitError(f"[data] layers = {list(s.spec.layers)}, and the model was trained on layers "
                           f"{trained_layers}; predict with the training run's [data] layers")
        test = segmentation_data.decode_test(s, output, self.p.image_size)
        if test.channels != recipe.get("channels", 3):
            raise KitError(f"the test images are read as {test.channels} channels and the model was trained on "
                           f"{recipe.get('channels', 3)}; predict with the training run's [data] layers")
        none = np.zeros(0, np.int64)
        data = SegmentationData(none.astype(str), none, none, target, sample, None, test, output, recipe)
        s.log(segmentation_data.describe(data))
        return data

    def show_samples(self, data: SegmentationData, n: int = 12):
        """A grid of training images with their masks drawn over them (a page beside its clean one), saved as
        samples.png; predict mode: test images alone."""
        predict = data.train is None
        source = data.test if predict else data.train
        rows = segmentation_data.shown(source, np.arange(data.test.count) if predict else data.usable, n)
        pictures, raw = source.thumbnails(rows)  # not whole canvases: a gigapixel slide's would be gigabytes
        target = self.transform(data, train=False).target
        shown = None if raw is None else [target(torch.from_numpy(m[None]))[0].numpy() for m in raw]
        titles = [str(i) for i in np.asarray(data.output.ids if predict else data.ids)[rows]]
        return segmentation_data.grid(self.session.output_dir / "samples.png", pictures, shown, data.recipe["kind"], titles)

    def split(self, data: SegmentationData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds of whole images: [data] fold_column's, or grouped by group_column, stratified by the masks' cover."""
        rows = data.usable
        keys = {k: None if v is None else v[rows] for k, v in (("groups", data.groups), ("assigned", data.assigned))}
        folds = cv.make_folds(len(rows), self.p.folds, self.p.seed, classes=data.strata[rows] if len(rows) else None, **keys)
        return [(rows[tr], rows[v]) for tr, v in folds]

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: SegmentationData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        """The smp model with one output channel per class (or per page channel), on the device; the encoder's
        pretrained weights from `weights_path`, else the hub where it can be reached."""
        s, p = self.session, self.p
        args = (p.model_name, p.encoder, data.recipe["outputs"], data.recipe.get("channels", 3))
        if pretrained and p.weights_path:
            weights = paths.find_weights(p.weights_path)
            if self._weights is None:
                s.log(f"pretrained weights: {weights}")
                self._weights = weights
            model = models.create(*args, weights=weights)
        elif pretrained and p.pretrained and not self._pretrained_failed:
            try:
                if models.timm_name(p.encoder) and not hub.fetchable(models.timm_name(p.encoder)):
                    raise KitError("offline, and no local copy")
                model = models.create(*args, pretrained=True)
            except Exception as e:  # the hub's download fails in many types: offline, DNS, HTTP, cache
                self._pretrained_failed = True
                s.warn(f"pretrained weights for {p.encoder} could not be loaded ({str(e).splitlines()[0][:120]}); training "
                       "from random init. With the internet off, attach the weights and set weights_path")
                model = models.create(*args)
        else:
            model = models.create(*args)
        models.set_head_bias(model, data.recipe.get("bias"))
        memory_format = torch.channels_last if s.setup.channels_last else torch.preserve_format
        return model.to(s.device, memory_format=memory_format)

    def views(self, data: SegmentationData) -> list:
        r = data.recipe
        return views(r["hflip"], r["vflip"], r["rotate90"]) if self.p.tta else views(0.0)

    def objective(self, data: SegmentationData) -> Segmentation:
        return Segmentation(data.recipe["kind"], self.p.image_size, self.p.tile_overlap, self.views(data),
                            self.p.dice_weight, self.p.postprocess)

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: SegmentationData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        """Training: batches of `batch_size` random tiles, each image's as many as cover it. Otherwise whole
        canvases, as many as hold about `batch_size` tiles, with each image's own size."""
        s, size = self.session, self.p.image_size
        source = data.test if test else data.train
        kept, keep, share = self.tissue(source, "test" if test else "train")
        step = batch_size  # tiles a forward pass: a gigapixel canvas' thousands are predicted a batch at a time
        if train:
            rows = np.repeat(rows, max(1, round(segmentation_data.epoch_repeats(source, size) * share)))
        else:
            batch_size = max(1, batch_size // segmentation_data.tiles_per_canvas(source, size, self.p.tile_overlap))
        dataset = CanvasRows(source, rows, size if train else 0, kept if train else None, None if train else keep,
                             step)
        loader = host_loader(dataset, batch_size, shuffle=train, workers=s.setup.workers if workers is None else workers,
                             pin=s.device.type == "cuda", seed=seed, drop_last=train, shard=shard, repeat=train)
        return DeviceLoader(loader, s.device, self.transform(data, train, seed, precision or s.precision),
                            prefetch=s.setup.prefetch)

    def tissue(self, canvas: Canvas, split: str) -> tuple[dict[int, np.ndarray] | None, np.ndarray | None, float]:
        """Tissue filtering (`tissue_min`, kit.data.tissue) of a canvas, read once and logged: each row's training tile
        places, each row's prediction tiles kept, and the share of training places kept. Off: (None, None, 1.0)."""
        cut, size, name = self.p.tissue_min, self.p.image_size, canvas.path.stem
        if not cut:
            return None, None, 1.0
        if name not in self._tissue:
            image, _ = canvas.arrays()
            kept, keep, places = {}, [], 0
            for r in range(canvas.count):
                found = tissue.tissue_map(image[r])
                kept[r], every = tissue.kept_places(found, canvas.sizes[r], size, cut)
                places += every
                keep.append(tissue.grid_keep(found, canvas.height, canvas.width, size, self.p.tile_overlap, cut))
            keep, share = np.stack(keep), sum(map(len, kept.values())) / max(places, 1)
            drawn = f"training tiles drawn from {share:.0%} of their places; " if split == "train" else ""
            self.session.log(f"tissue ({split}): {drawn}predicting {int(keep.sum())} of {keep.size} tiles "
                             f"({keep.mean():.0%}) with tissue_min {cut}, the rest empty")
            self._tissue[name] = kept, keep, share
        return self._tissue[name]

    def transform(self, data: SegmentationData, train: bool, seed: int = 0, precision=None) -> PairTransform:
        """The device-side step of a batch: its target read from the mask bytes; for training, crops, flips and turns
        alike on the image and its mask."""
        r, (mean, std) = data.recipe, models.normalization(self.p.encoder, data.recipe.get("channels", 3))
        return PairTransform(r["kind"], np.array(r["lookup"]), r["outputs"], mean, std, train, self.p.image_size,
                             (self.p.crop_scale, 1.0), r["hflip"], r["vflip"], r["rotate90"], seed, precision,
                             self.session.setup.channels_last)

    def trial_rows(self, data: SegmentationData) -> np.ndarray:
        return data.usable

    def predict_rows(self, data: SegmentationData) -> int:
        """Test images (each a canvas of tiles and views, as a validation row is)."""
        return data.test.count

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: SegmentationData, precision, batch_size: int) -> np.ndarray:
        """(test images, outputs, H, W) probabilities (or a page's values) on the test canvases, in float16 where
        float32 would pass FLOAT16_FROM bytes."""
        objective = self.objective(data)
        t = data.test
        dtype = np.float16 if t.count * data.recipe["outputs"] * t.height * t.width * 4 > FLOAT16_FROM else np.float32
        batches = self.batches(data, np.arange(t.count), train=False, batch_size=batch_size, test=True, precision=precision)
        return np.concatenate([p.astype(dtype) for _, p in base.predictions(model, batches, precision, objective.infer_batch)])

    def judge(self, data: SegmentationData, rows: dict, metric: str) -> base.Judged:
        """The out-of-fold score at the cut chosen on these rows, and predicting empty masks' (or the training pages'
        mean value's)."""
        return segmentation_data.judge(metric, data, rows)

    def cut(self, data: SegmentationData, pred: np.ndarray, oof: list[dict]) -> np.ndarray:
        """The submission's masks (test images, classes, H, W) from the ensemble's probabilities, each class cut where
        the out-of-fold rows of the folds that predicted score best (a page's values, clipped to [0, 1], as they are;
        the prior's rows, where no fold predicted, as they are)."""
        if pred.ndim != 4 or data.recipe["kind"] == "image":
            return np.clip(pred, 0.0, 1.0) if pred.ndim == 4 else pred
        cuts = segmentation_data.choose_cuts(self.session, data, oof)
        out = np.zeros((len(pred), len(cuts), *pred.shape[2:]), bool)
        for i, (h, w) in enumerate(data.test.sizes):
            out[i, :, :h, :w] = mask_metrics.apply(pred[i, :, :h, :w].astype(np.float32), cuts)
        return out

    def submission(self, data: SegmentationData, pred: np.ndarray) -> pd.DataFrame:
        """The sample's rows filled from the masks (or values) of `cut`; rows of the prior (no fold predicted):
        empty masks, or the training pages' mean value."""
        sub = data.sample.copy()
        sub[data.output.column] = segmentation_data.fill(data, pred, self.session.output_dir,
                                                         segmentation_data.reader_of(self.session))
        if data.output.layout == "files":
            self.session.log(f"wrote {len(sub)} mask files under {self.session.output_dir}, as the sample names them "
                             f"(such as {sub[data.output.column].iloc[0]})")
        if pred.ndim == 4 and data.recipe["kind"] != "image":
            segmentation_data.grid(self.session.output_dir / "predictions.png", *segmentation_data.shown_test(data, pred))
        return sub[list(data.sample.columns)]
