"""What a competition's data looks like: the config's [competition] and [data], as the kernel receives them.

The build passes these to the notebook as one flat dict parameter, `competition`; the runtime turns it back
into a `Spec` with `Spec.from_dict`, so the same checks run on a laptop and inside the kernel.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kit import fields, templates
from kit.errors import KitError
from kit.fields import setting

# "map@k" is a family: map@5 is the mean average precision of each row's 5 labels, best first
METRICS = ("log_loss", "accuracy", "mae", "rmse", "auc", "f1_samples", "f2_samples", "qwk", "pearson", "macro_f1", "f1_micro",
           "map@k", "spearman", "rmsle", "weighted_auc", "bias_auc", "dice", "iou", "map_iou")
GREATER_IS_BETTER = {"log_loss": False, "accuracy": True, "mae": False, "rmse": False, "auc": True, "f1_samples": True,
                     "f2_samples": True, "qwk": True, "pearson": True, "macro_f1": True, "f1_micro": True, "map@k": True,
                     "spearman": True, "rmsle": False, "weighted_auc": True, "bias_auc": True, "dice": True, "iou": True,
                     "map_iou": True}
MASK_METRICS = ("dice", "iou", "map_iou")  # they score masks: the segmentation template's, with rmse for image to image
LAYOUTS = ("files", "folders", "names", "pixels", "arrays", "coco")  # cnn: where the images are (Data.layout)


def metric_family(metric: str) -> str:
    """The metric's name without its k: "map@5" -> "map@k"."""
    return "map@k" if re.fullmatch(r"map@[1-9][0-9]*", metric) else metric


def top_k(metric: str) -> int:
    """How many labels a row's prediction lists: the k of map@k, else 1."""
    return int(metric.split("@")[1]) if metric_family(metric) == "map@k" else 1


def greater_is_better(metric: str) -> bool:
    return GREATER_IS_BETTER[metric_family(metric)]


def metric_misfit(template: str, metric: str) -> str:
    """Why `template` cannot be scored by `metric`, or "" where it can: mask metrics score masks only, and masks
    are scored by them (or per pixel by rmse, image to image)."""
    if template == "segmentation" and metric not in (*MASK_METRICS, "rmse"):
        return (f"metric {metric} does not score masks: the segmentation template takes {', '.join(MASK_METRICS)}, or "
                "rmse for image to image")
    if template != "segmentation" and metric in MASK_METRICS:
        return f"metric {metric} scores masks, which only the segmentation template predicts"
    return ""


def metric_name(metric: str) -> str:
    """`metric` if kit knows it, else ValueError listing what it knows."""
    if metric_family(metric) in METRICS and metric != "map@k":
        return metric
    known = ", ".join(m if m != "map@k" else "map@k (such as map@5)" for m in METRICS)
    raise ValueError(f"is not a metric kit knows ({known})")


def value_range(bounds: tuple[float, ...]) -> tuple[float, ...]:
    """[low, high], low below high, or () for the training targets' range."""
    if bounds and (len(bounds) != 2 or not bounds[0] < bounds[1]):
        raise ValueError("must be [low, high] with low below high (or [] for the training targets' range)")
    return bounds


def image_extension(ext: str) -> str:
    """`ext` with its dot: "png" means ".png". Empty is allowed, for ids that already end in their extension."""
    if "/" in ext or "\\" in ext:
        raise ValueError("holds a folder; put folders in train_images and test_images, and only the extension "
                         "(such as \".jpg\") in image_ext")
    return ext if not ext or ext.startswith(".") else f".{ext}"


def mask_extension(ext: str) -> str:
    """`ext` as a mask's name ends after its image's id: "png" is ".png"; "_mask.gif" stays a suffix."""
    return image_extension(ext) if ext and not ext.startswith(("_", "-")) else ext


@dataclass(frozen=True)
class Competition:
    slug: str = ""  # Kaggle competition slug: the kernel's competition_sources and its /kaggle/input folder
    template: str = setting("cnn", choices=templates.names)  # called: a template registered later counts
    metric: str = setting("log_loss", normalize=metric_name)


@dataclass(frozen=True)
class Data:
    """File and column names, relative to the competition's input folder."""

    # cnn: files, a table of ids and labels with train_images/<id><image_ext> (or image_path); folders,
    # train_images/<class>/<file> and no table; names, train_images/<file> whose name holds its class
    # (label_pattern); pixels, tables whose rows are images (label + pixel0..pixelN-1, as digit-recognizer's);
    # arrays, tables whose rows hold one list of numbers per channel (array_columns); coco, a COCO-style label
    # file (images, annotations, categories) as train, and the test JSON's images as test (docs/config.md)
    layout: str = setting("files", choices=LAYOUTS)
    train: str = "train.csv"  # cnn: id + label columns (files), label + pixel columns (pixels); sequences: the long table
    test: str = ""  # cnn pixels: the test table of pixel columns; sequences: the test long table
    sample_submission: str = "sample_submission.csv"
    id_column: str = "id"
    target_column: str = "target"
    train_images: str = "train"  # cnn: folder of <id><image_ext>
    test_images: str = "test"
    image_ext: str = setting(".jpg", normalize=image_extension)  # "png" is read as ".png"; "" when ids end in theirs
    # segmentation: the folder of training masks, one file per training image named as it; "" reads run-length
    # codes from the training table's target_column
    train_masks: str = ""
    # segmentation: a mask's name is its image's id + mask_ext (".png", or "_mask.gif" for a suffix); "" = image_ext
    mask_ext: str = setting("", normalize=mask_extension)
    # segmentation: the run-length codes' pixel order, read and written: "column" (down each column, then the next:
    # TGS, Severstal, HuBMAP and MLE-bench's graders) or "row" (along each row: Carvana's)
    rle_order: str = setting("column", choices=("column", "row"))
    # cnn: each training row's image under train_images, from its columns: "{chain}/{image}", "{id[0]}/{id}.npy",
    # "{file_name}" (a path column); "" = "<id><image_ext>" (coco: each image's file_name)
    image_path: str = ""
    test_image_path: str = ""  # cnn: the same for test rows (the sample's columns, or the test table's); "" = image_path
    label_pattern: str = ""  # cnn names: a regular expression whose first group, found in a file's path, is its class
    # cnn folders: the class folders to read, "Cover" or "Cover=0" (folder=class; several folders may share a class);
    # () = every folder in train_images but the test folder
    class_folders: tuple[str, ...] = ()
    category_field: str = ""  # cnn coco: the categories' field the submission names classes by; "" = ids (names if
    # the sample's labels are not numbers)
    array_columns: tuple[str, ...] = ()  # cnn arrays: the columns holding one channel each (a list of side x side numbers)
    sequence_column: str = ""  # sequences: rows with the same value form one sequence
    order_column: str = ""  # sequences: sort key inside a sequence
    # sequences: the feature columns; tabular: the columns the model reads (() reads every column but the id,
    # the targets, group_column, fold_column and drop_columns)
    features: tuple[str, ...] = ()
    drop_columns: tuple[str, ...] = ()  # tabular: columns the model never reads (leaks, ids of another name)
    # sequences: integer-coded features that get an embedding; tabular: the columns read as categories (() infers
    # them: booleans, strings whose values repeat, integer codes of few values)
    categorical: tuple[str, ...] = ()
    task: str = setting("per_step", choices=("per_step", "per_sequence"))
    score_mask: str = ""  # sequences: rows that count in loss and metric, a pandas query such as "u_out == 0"
    text_columns: tuple[str, ...] = ()  # text: the columns whose texts the model reads (several: joined by the separator)
    # the sample submission's columns the model fills, where they cannot be told from the columns copied through
    # (every other column but the id: a blank-headed index, a Date the test table has); () infers them
    submission_columns: tuple[str, ...] = ()
    # regression: predictions are clipped to [low, high]; () clips them to the training targets' range
    target_range: tuple[float, ...] = setting((), normalize=value_range)
    group_column: str = ""  # cnn, text, tabular: rows sharing its value (a patient, a prompt) stay in one fold
    fold_column: str = ""  # cnn, text, tabular: each row's fold, the competitor's own (its distinct values are the folds)
    identity_columns: tuple[str, ...] = ()  # bias_auc: the training table's identity columns (subgroups)
    # sequences: columns holding one list (or string: one character a step) per row, exploded into one row per
    # step; order_column numbers the steps and id_column is made "<sequence>_<step>" where the table lacks it
    step_columns: tuple[str, ...] = ()


DATA_DEFAULTS = Data()


def refuse_unread(template: str, keys: Iterable[str], where: str) -> None:
    """KitError, in one line, for the first of the [data] `keys` that `template` does not read (a cnn config's
    text_columns): as [params] refuses a parameter the template lacks, a key nothing reads is refused, not
    ignored."""
    reads = templates.get(template).data_reads
    for key in keys:
        if key not in reads:
            others = [t.name for t in templates.TEMPLATES.values() if key in t.data_reads]
            raise KitError(f"{where}: {key} is not read by the {template} template (only by {', '.join(others)}); "
                           f"remove it, or set the template that reads it")


@dataclass(frozen=True)
class Spec(Data, Competition):
    """[competition] and [data] in one flat record."""

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], where: str = "competition") -> Spec:
        spec = fields.build(cls, values, where)
        if not spec.slug:
            raise KitError(f"{where}: slug is empty; set it to the Kaggle competition slug")
        if spec.group_column and spec.fold_column:
            raise KitError(f"{where}: group_column and fold_column are both set; the folds come from one of them")
        if spec.metric == "bias_auc" and not spec.identity_columns:
            raise KitError(f"{where}: metric bias_auc needs identity_columns, the training table's columns that mark "
                           "each row's subgroups (such as [\"male\", \"female\", \"black\", \"white\"])")
        if spec.identity_columns and spec.metric != "bias_auc":
            raise KitError(f"{where}: identity_columns are read by metric bias_auc only; remove them or set that metric")
        # the notebook's parameter and a worker's payload hold every key: those at their defaults were not set
        refuse_unread(spec.template, [k for k in fields.names(Data) if getattr(spec, k) != getattr(DATA_DEFAULTS, k)], where)
        misfit = metric_misfit(spec.template, spec.metric)
        if misfit:
            raise KitError(f"{where}: {misfit}; set another metric or template")
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def shown(self) -> dict[str, Any]:
        """`to_dict` without the keys its template never reads, unless they were set: what the notebook's
        parameters cell shows."""
        defaults = Spec().to_dict()
        shown = ("slug", "template", "metric", *templates.get(self.template).data_keys)
        return {k: v for k, v in self.to_dict().items() if k in shown or v != defaults[k]}

    @property
    def greater_is_better(self) -> bool:
        return greater_is_better(self.metric)
