"""Image classification (or regression) with a timm CNN.

Data path: every image is decoded once into a uint8 cache (`kit.data.images`); loaders gather rows of it,
pinned, to the GPU, where crops, flips and normalisation happen (`kit.data.augment`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import arrays, images, layouts, tables
from kit.data.augment import ImageTransform, crop_area, flip_probability, views
from kit.data.loaders import DeviceLoader, ImageRows, host_loader
from kit.errors import KitError
from kit.pipelines import base
from kit.runtime import hub, paths, runs
from kit.runtime.session import Session
from kit.train import cv, metrics, targets, topk
from kit.train.objectives import Classification, MultiLabel, Regression, SoftLabels, moments
from kit.train.targets import Target

MAX_BAD_SHARE = 0.01  # stop when more than this share of a split's images cannot be decoded


@dataclass
class ImageData:
    ids: np.ndarray  # training ids, one per row of train_cache
    y: np.ndarray  # encoded targets, one per id
    usable: np.ndarray  # rows of train_cache that decoded: what folds split
    target: Target
    sample: pd.DataFrame
    train_cache: images.ImageCache | images.ImageFiles | None  # None in predict mode
    test_cache: images.ImageCache | images.ImageFiles  # one row per sample submission row
    recipe: dict  # what prediction needs from the training data (recipe_of); the training run's in predict mode
    identity: str = ""  # what decides training: ids, labels, the image files (kit.runtime.runs)
    groups: np.ndarray | None = None  # [data] group_column's value of each id
    assigned: np.ndarray | None = None  # [data] fold_column's value of each id


class CnnPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self._pretrained_failed = False
        self._weights: Path | None = None
        self._takes_image_size: bool | None = None

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> ImageData:
        """Read and check the training labels (by layout: kit.data.layouts) and the sample submission, then
        decode all images once (in predict mode, only the sample submission and the test images)."""
        s, spec = self.session, self.session.spec
        if s.trained is not None:
            return self._load_test(s.trained.recipe)
        sample, table, target, (groups, assigned), train, test = self._read()
        train_cache, test_cache = self._decode({"train": train, "test": test})
        images.check_bad(train_cache, train.names, "train", "are left out of training", MAX_BAD_SHARE, s.log)
        images.check_bad(test_cache, test.names, "test", "are predicted with the training prior", MAX_BAD_SHARE, s.log)
        y = targets.encode(target, table if target.by_column else table[spec.target_column])
        ids = table[spec.id_column].to_numpy(dtype=str)
        usable = np.array([i for i in range(len(ids)) if i not in train_cache.bad], dtype=np.int64)
        identity = runs.digest(ids, y, usable, np.array(target.columns), train.stamps())
        flip, why = flip_probability(self.p.hflip, train_cache.read, usable, y[usable] if target.classification else None)
        recipe = {**self.recipe_of(target, y[usable], flip), **self.input_of(train.form, train_cache, usable),
                  # rows of many classes keep their likeliest, out of fold and in the test alike (kit.train.topk)
                  "kept": topk.kept(target.record.likeliest, target.outputs, spec.metric, max(len(usable), test_cache.count))}
        data = ImageData(ids, y, usable, target, sample, train_cache, test_cache, recipe, identity, groups, assigned)
        s.log(self.describe(data))
        if self.p.hflip == "auto":
            s.log(f"hflip auto     {flip:g}: {why}")
        if target.multilabel and (self.p.mixup or self.p.cutmix):
            s.warn("mixup and cutmix mix one class per image; they are off for this multi-label target")
        return data

    def check_data(self) -> None:
        self._read()

    def _read(self) -> tuple[pd.DataFrame, pd.DataFrame, Target, tuple, layouts.Source, layouts.Source]:
        """The sample submission, the training rows, their target, their fold keys and both splits' images,
        read and checked (each image file found, none decoded)."""
        s, spec = self.session, self.session.spec
        if not spec.id_column:
            raise KitError("[data] id_column is empty; the cnn template finds each test image by the sample "
                           "submission's id: name that column")
        sample, sample_path = base.read_sample(s)
        target_columns = base.sample_targets(sample, spec, sample_path)
        table, where = layouts.training_table(spec, s.data_dir, sample, s.log)
        table = self.label_columns(table, target_columns, where)
        target = targets.multi(spec.metric, table, target_columns, spec.target_column, where, spec.identity_columns,
                               spec.target_range)
        if target is None or target.record.spaced:  # a row without labels is left out, not trained as "none"
            tables.require_columns(table, [spec.target_column], s.data_dir / spec.train)
            table = table[table[spec.target_column].notna()]  # the index keeps each row's line for messages
        if target is None:
            labels = where if spec.layout == "folders" else f"{where}, column '{spec.target_column}'"
            target = targets.infer(spec.metric, table[spec.target_column], target_columns, labels, spec.target_range)
        groups, assigned = base.fold_keys(spec, table, s.data_dir / spec.train)
        others = [spec.id_column, spec.target_column, *(target.sources if target.by_column else ()),
                  *(c for c in (spec.group_column, spec.fold_column) if c)]
        pixels = layouts.pixel_columns(table, others, where) if spec.layout == "pixels" else None
        train = layouts.training_source(spec, s.data_dir, table, where, pixels, s.log)
        test = layouts.test_source(spec, s.data_dir, sample, sample_path, pixels, log=s.log)
        if train.form.channels != test.form.channels:
            raise KitError(f"the test images have {test.form.channels} channels and the training images "
                           f"{train.form.channels}; they must be alike")
        return sample, table, target, (groups, assigned), train, test

    def label_columns(self, table: pd.DataFrame, target_columns: list[str], where: str) -> pd.DataFrame:
        """The training table as its labels are read: here as it is (audio's spreads lists into label columns)."""
        return table

    def _load_test(self, recipe: dict) -> ImageData:
        """Predict mode: the sample submission and the test images, read as the training run read its own;
        the target columns must be those the model was trained for."""
        s, spec = self.session, self.session.spec
        sample, sample_path, target = base.trained_sample(s)
        test = layouts.test_source(spec, s.data_dir, sample, sample_path, rows_of=lambda ids: base.rows_of_the_test(
            sample, ids, spec.id_column, spec.test, s.log), log=s.log)
        sample = test.sample if test.sample is not None else sample
        if test.form.channels != recipe.get("channels", 3):
            raise KitError(f"the test images have {test.form.channels} channels and the model was trained on "
                           f"{recipe.get('channels', 3)}; predict with this competition's model")
        (test_cache,) = self._decode({"test": test})
        images.check_bad(test_cache, test.names, "test", "are predicted with the training prior", MAX_BAD_SHARE, s.log)
        none = np.zeros(0, np.int64)
        data = ImageData(none.astype(str), none, none, target, sample, None, test_cache, recipe)
        s.log(self.describe(data))
        return data

    def recipe_of(self, target: Target, y: np.ndarray, hflip: float) -> dict:
        """What prediction needs from the training labels `y` (kit.runtime.trained): the target, the prior, the
        flips and turns training makes (which decide the prediction's views), the regression target's scale
        (of each column, for several)."""
        return {"target": base.target_record(target), "prior": targets.prior(target, y, self.session.spec.metric),
                "hflip": hflip, "vflip": self.p.vflip, "rotate90": self.p.rotate90,
                **dict(zip(("y_mean", "y_std"), moments(y, self.session.spec.metric)))}

    def input_of(self, form, cache, rows: np.ndarray) -> dict:
        """What prediction needs to know of the images: their channels, and for arrays (anything but RGB
        bytes) the per-channel mean and std of the training images, which normalise them instead of the
        pretrained model's statistics."""
        if form.photo:
            return {"channels": 3}
        mean, std = arrays.channel_stats(cache.read, rows)
        return {"channels": form.channels, "mean": mean, "std": std}

    def augmentation(self, data: ImageData) -> tuple[float, float, bool]:
        """(hflip, vflip, rotate90): the flips and turns training makes, which prediction's views follow (a
        checkpoint older than vflip and rotate90 made neither, whatever this notebook's cell says)."""
        r = data.recipe
        return r["hflip"], r.get("vflip", 0.0), r.get("rotate90", False)

    def _decode(self, splits: dict[str, layouts.Source]) -> list:
        """Each split's images decoded once into the uint8 cache (pixel rows resized once), or streamed where
        the disk has no room."""
        s = self.session
        side, workers, cache_dir = images.cache_side(self.p.image_size), s.hardware.cpu_count, paths.scratch_dir()
        need = sum(images.bytes_to_build(src.paths, side, cache_dir, src.form) if src.paths is not None
                   else images.pixel_bytes_to_build(src.pixels, side, cache_dir) for src in splits.values())
        refusal = images.cache_refusal(need, cache_dir) if need else ""
        if refusal:
            s.warn(f"no decoded-image cache: {refusal}; streaming from the image files (or pixel rows) instead (each "
                   "epoch decodes them again, so lower image_size or free space for speed)")
            return [images.streaming(src.paths, side, workers, src.form) if src.paths is not None
                    else images.PixelImages(src.pixels, side) for src in splits.values()]
        return [images.build_cache(src.paths, side, cache_dir, workers, f"decode {name}", s.log, src.form)
                if src.paths is not None
                else images.pixel_cache(src.pixels, side, cache_dir, f"resize {name}", s.log) for name, src in splits.items()]

    def describe(self, data: ImageData) -> str:
        t = data.target
        line = f"train          {len(data.usable)} images"
        if data.train_cache is None:
            line = "train          none here (predict mode)"
        elif t.classification:
            counts = np.bincount(data.y[data.usable], minlength=t.outputs)
            line += f", {t.outputs} classes ({counts.min()} to {counts.max()} images per class)"
        elif t.multilabel:
            counts = (data.y[data.usable] > 0.5).sum(0)
            per = (data.y[data.usable] > 0.5).sum(1)
            line += (f", {t.outputs} labels ({counts.min()} to {counts.max()} images per label, {per.mean():.2g} labels "
                     "per image)")
        else:
            line += f", target mean {data.y.mean():.4g}, std {data.y.std():.4g}"
        columns = f"{', '.join(t.columns[:4])}{' ...' if len(t.columns) > 4 else ''}"
        return f"{line}\ntest           {data.test_cache.count} images\nsubmission     {t.kind}: {columns}"

    def show_samples(self, data: ImageData, n: int = 12):
        """A grid of training images with their labels, saved as samples.png (and shown in a notebook)."""
        import matplotlib.pyplot as plt

        predict = data.train_cache is None  # predict mode: test images, titled by their ids
        pool = np.arange(data.test_cache.count) if predict else data.usable
        rows = pool[np.linspace(0, len(pool) - 1, min(n, len(pool))).astype(int)]
        pictures = (data.test_cache if predict else data.train_cache).read(rows)
        cols = min(6, len(rows))
        lines = (len(rows) + cols - 1) // cols
        fig, axes = plt.subplots(lines, cols, figsize=(2.2 * cols, 2.4 * lines), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, r, picture in zip(axes.flat, rows, pictures):
            if picture.shape[-1] == 3 and picture.dtype == np.uint8:
                ax.imshow(picture)
            else:  # an array: its first channel, each image scaled to its own range
                ax.imshow(picture[..., 0].astype(np.float32), cmap="viridis")
            if predict:
                label = data.sample[self.session.spec.id_column].iloc[r]
            else:
                label = sample_label(data.target, data.y[r])
            text, size = sample_title(str(label))
            ax.set_title(text, fontsize=size)
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: ImageData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds over the usable training rows: [data] fold_column's, or grouped by group_column, stratified by
        class (by label for multi-label) where they can be."""
        t, rows = data.target, data.usable
        keys = {k: None if v is None else v[rows] for k, v in (("groups", data.groups), ("assigned", data.assigned))}
        folds = cv.make_folds(len(rows), self.p.folds, self.p.seed, classes=data.y[rows] if t.classification else None,
                              labels=data.y[rows] if t.multilabel else None, **keys)
        return [(rows[tr], rows[v]) for tr, v in folds]

    def validation_rows(self, data: ImageData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, targets) of validation rows `rows`: one per image, in their order (the loader keeps it)."""
        return data.ids[rows], data.y[rows]

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: ImageData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        """The timm model with one output per class (or one value), on the device; `pretrained=False` for
        models whose weights come from a fold checkpoint next. (`fit_rows`: nothing to fit from them here.)"""
        import timm

        s, p = self.session, self.p
        kwargs = dict(num_classes=data.target.outputs, in_chans=data.recipe.get("channels", 3))
        if self.takes_image_size():  # ViT, DeiT, Swin: position embeddings (and windows) resized to image_size
            kwargs["img_size"] = p.image_size
        if pretrained and p.weights_path:
            weights = paths.find_weights(p.weights_path)
            if self._weights is None:
                s.log(f"pretrained weights: {weights}")
                self._weights = weights
            model = timm.create_model(p.model_name, pretrained=True, pretrained_cfg_overlay=dict(file=str(weights)), **kwargs)
        elif pretrained and p.pretrained and not self._pretrained_failed:
            try:
                if not hub.fetchable(p.model_name):
                    raise KitError("offline, and no local copy")
                model = timm.create_model(p.model_name, pretrained=True, **kwargs)
            except Exception as e:  # the hub's download fails in many types: offline, DNS, HTTP, cache
                self._pretrained_failed = True
                s.warn(f"pretrained weights for {p.model_name} could not be loaded ({str(e).splitlines()[0][:120]}); "
                       "training from random init. With the internet off, attach the weights and set weights_path")
                model = timm.create_model(p.model_name, pretrained=False, **kwargs)
        else:
            model = timm.create_model(p.model_name, pretrained=False, **kwargs)
        memory_format = torch.channels_last if s.setup.channels_last else torch.preserve_format
        return model.to(s.device, memory_format=memory_format)

    def takes_image_size(self) -> bool:
        """Whether the timm model is built for one input size (`img_size`: Vision Transformers, Swin), asked once
        of a model built on the meta device (no memory, no weights); set-up says so."""
        if self._takes_image_size is None:
            import timm

            try:
                with torch.device("meta"):
                    timm.create_model(self.p.model_name, pretrained=False, num_classes=1, img_size=self.p.image_size)
                self._takes_image_size = True
            except TypeError:  # a model of any input size (CNNs): no img_size in its constructor
                self._takes_image_size = False
            if self._takes_image_size:
                self.session.log(f"image size     {self.p.model_name} is built for {self.p.image_size} px (img_size); timm "
                                 "resizes its position embeddings, pretrained ones too")
        return self._takes_image_size

    def normalization(self, data: ImageData | None = None) -> tuple[tuple[float, ...], tuple[float, ...], float]:
        """(mean, std, unit): the mean and std the model's pretrained weights expect (ImageNet's when timm names
        none) on RGB bytes (unit 255); arrays' own per-channel statistics, in their units (unit 1)."""
        import timm

        if data is not None and "mean" in data.recipe:
            return tuple(data.recipe["mean"]), tuple(data.recipe["std"]), 1.0
        cfg = timm.models.get_pretrained_cfg(self.p.model_name)
        mean = tuple(cfg.mean) if cfg and cfg.mean else (0.485, 0.456, 0.406)
        std = tuple(cfg.std) if cfg and cfg.std else (0.229, 0.224, 0.225)
        return mean, std, 255.0

    def objective(self, data: ImageData):
        if data.target.record.soft:  # a distribution a row: KL divergence on log-softmax
            return SoftLabels()
        if data.target.classification:  # many classes, a metric of the likeliest: rows keep those (the recipe's)
            return Classification(keep=data.recipe.get("kept", 0))
        if data.target.multilabel:
            # a threshold is chosen on the validation rows: they average the test-time views as the test set does
            thresholded = self.session.spec.metric in metrics.THRESHOLDED
            return MultiLabel(views=tuple(v for _, v in self.prediction_views(data)) if thresholded else ())
        return Regression(data.recipe["y_mean"], data.recipe["y_std"], self.session.spec.metric,  # per column
                          limits=data.target.limits)

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: ImageData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None) -> DeviceLoader:
        """Device batches of `rows`; images come in the dtype of `precision` (the session's unless given; an
        `InForce` is followed as it switches)."""
        s = self.session
        cache = data.test_cache if test else data.train_cache
        dataset = ImageRows(cache, rows, None if test else data.y[rows])
        loader = host_loader(dataset, batch_size, shuffle=train, workers=s.setup.workers if workers is None else workers,
                             pin=s.device.type == "cuda", seed=seed, drop_last=train, shard=shard, repeat=train)
        mean, std, unit = self.normalization(data)
        hflip, vflip, rotate90 = self.augmentation(data)
        scale = (crop_area(self.p.image_size, self.p.crop_scale), 1.0)
        transform = ImageTransform(self.p.image_size, mean, std, train=train, scale=scale,
                                   hflip=hflip, vflip=vflip, rotate90=rotate90, seed=seed, precision=precision or s.precision,
                                   channels_last=s.setup.channels_last, unit=unit)
        return DeviceLoader(loader, s.device, TransformImages(transform, self.mixer(data) if train else None),
                            prefetch=s.setup.prefetch)

    def mixer(self, data: ImageData):
        """timm's Mixup/CutMix on the device, with soft targets; None when both are off or nothing mixes (the audio
        template's parameters have no cutmix: mixup only)."""
        cutmix = getattr(self.p, "cutmix", 0.0)
        if not (self.p.mixup or cutmix) or not data.target.classification:
            return None
        from timm.data import Mixup

        return Mixup(mixup_alpha=self.p.mixup, cutmix_alpha=cutmix, label_smoothing=0.0, num_classes=data.target.outputs)

    def trial_rows(self, data: ImageData) -> np.ndarray:
        """Training rows a batch-size trial may draw from."""
        return data.usable

    def predict_rows(self, data: ImageData) -> int:
        """Rows a fold model predicts: the test images, once per view (the time budget's reserve)."""
        return data.test_cache.count * len(self.prediction_views(data))

    def prediction_views(self, data: ImageData) -> list:
        """The views of the test images prediction averages: with tta, those training showed; else the plain one."""
        return views(*self.augmentation(data)) if self.p.tta else views(0.0)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: ImageData, precision, batch_size: int) -> np.ndarray | topk.TopK:
        """(test rows, outputs) float32: probabilities or values, averaged over `prediction_views` (with tta, the
        flips and turns training made: a model that never saw mirrored images is not asked about them); of many
        classes, each row's likeliest (kit.train.topk)."""
        objective = self.objective(data)
        shown = self.prediction_views(data)
        keep = data.recipe.get("kept", 0)  # the training run's: its test rows kept as its out-of-fold rows

        def forward(model: nn.Module, batch) -> torch.Tensor | topk.TopK:
            probs = sum(objective.predict(model(view(batch["image"]))) for _, view in shown) / len(shown)
            return topk.of(probs, keep) if keep else probs  # many classes: each row's likeliest, reduced on the device

        rows = np.arange(data.test_cache.count)
        batches = self.batches(data, rows, train=False, batch_size=batch_size, test=True, precision=precision)
        pred = topk.join([p for _, p in base.predictions(model, batches, precision, forward)])
        topk.set_rows(pred, sorted(data.test_cache.bad), base.prior(data))
        return pred


class TransformImages:
    """The device-side step of a batch: its `key` input made the model's "image" by `transform` (images augmented
    and normalised; the audio template's int16 windows made log-mel images), then mixed if asked."""

    def __init__(self, transform: Callable[[torch.Tensor], torch.Tensor], mixer=None, key: str = "image"):
        self.transform, self.mixer, self.key = transform, mixer, key

    def __call__(self, batch):
        batch = {k: v for k, v in batch.items() if k != self.key} | {"image": self.transform(batch[self.key])}
        if self.mixer is not None and len(batch["image"]) % 2 == 0:  # timm mixes pairs: an odd last batch stays
            batch["image"], batch["target"] = self.mixer(batch["image"], batch["target"])
        return batch


def sample_label(target: Target, y) -> str:
    """A training image's label as the grid titles it: its class, its labels, or its value."""
    if target.classification:
        return str(target.classes[y])
    if target.multilabel:  # an image may carry none of the labels the submission scores (RANZCR's)
        return " ".join(str(c) for c, on in zip(target.classes, y) if on > 0.5) or "(no label)"
    return " ".join(f"{v:.3g}" for v in np.atleast_1d(y))  # one value, or one per value column


def sample_title(label: str, width: int = 24) -> tuple[str, float]:
    """The whole `label` for a cell of the sample grid, and its font size: longer than `width` characters (what
    8 points fit), it breaks after the `_`, `-` or space that evens its two lines best (mid-word if it has
    none), and the font shrinks (to 5 points at least) if the longer line still does not fit."""
    if len(label) > width:
        cuts = [i + 1 for i, ch in enumerate(label[:-1]) if ch in "_- "] or [len(label) // 2]
        cut = min(cuts, key=lambda i: max(i, len(label) - i))
        label = label[:cut].rstrip() + "\n" + label[cut:]
    longest = max(1, *(len(line) for line in label.split("\n")))
    return label, max(5.0, 8.0 * min(1.0, width / longest))
