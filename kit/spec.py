"""What a competition's data looks like: the config's [competition] and [data], as the kernel receives them.

The build passes these to the notebook as one flat dict parameter, `competition`; the runtime turns it back
into a `Spec` with `Spec.from_dict`, so the same checks run on a laptop and inside the kernel.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kit import fields, templates
from kit.errors import KitError
from kit.fields import setting
from kit.metric_records import greater_is_better, metric_misfit, metric_name, metric_record

LAYOUTS = ("files", "folders", "names", "pixels", "arrays", "coco")  # cnn: where the images are (Data.layout)


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
    """`ext` as a mask's name ends after its image's id: "png" is ".png"; "_mask.gif" stays a suffix, and
    "/human_pixel_masks.npy" is a file in the image's own folder (a record read by `bands`)."""
    return image_extension(ext) if ext and not ext.startswith(("_", "-", "/")) else ext


def band_choice(text: str) -> str:
    """`[data] bands`: "" (images are files), "ash", or three GOES-16 band numbers 1 to 16 ("11 14 15",
    "8,11,15"), kept as "11 14 15"."""
    text = text.strip()
    if text in ("", "ash"):
        return text
    parts = text.replace(",", " ").split()
    if len(parts) != 3 or not all(p.isdigit() and 1 <= int(p) <= 16 for p in parts):
        raise ValueError("is not \"ash\" nor three band numbers from 1 to 16 (such as \"11 14 15\")")
    return " ".join(str(int(p)) for p in parts)


def slice_offsets(offsets: tuple[int, ...]) -> tuple[int, ...]:
    """`[data] slices`: () or one or three whole offsets, 0 among them (the slice itself)."""
    if offsets and (len(offsets) not in (1, 3) or 0 not in offsets or not all(isinstance(k, int) for k in offsets)):
        raise ValueError("must be one or three whole offsets holding 0, the slice itself (such as [-2, 0, 2]), or []")
    return tuple(offsets)


def layer_numbers(layers: tuple[int, ...]) -> tuple[int, ...]:
    """`[data] layers`: () or whole layer numbers from 0, each once: one (read as three alike channels), three (RGB's
    place), or a slab of any other count, each layer a channel."""
    if layers and (not all(isinstance(k, int) and k >= 0 for k in layers) or len(set(layers)) != len(layers)):
        raise ValueError("must be whole layer numbers of the surface volume, each once (three such as [29, 32, 35], or "
                         "a slab such as [24, 25, ..., 39], each layer a channel), or []")
    return tuple(layers)


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
    # segmentation: the code an empty mask is written as where its grader refuses a blank cell (vesuvius': "1 1", a
    # pixel); "" = as the sample writes one ("-" where it does, contrails'), else blank
    empty_mask: str = ""
    # segmentation: each image is a record's folder of band_XX.npy arrays (height, width, time steps), read as
    # three channels (kit.data.bands): "ash" (contrails' false colour of bands 11, 14, 15) or three band numbers
    # ("11 14 15"); "" = images are files
    bands: str = setting("", normalize=band_choice)
    band_frame: int = 4  # segmentation bands: the time step read (0-based; contrails' labelled step is the fifth)
    # segmentation: each image is an MRI slice found by its id <case>_<day>_slice_<N> under
    # <case>/<case>_<day>/scans/ (a 16-bit PNG, kit.data.scans), read 2.5-D: the slices at these offsets in its scan
    # as the three channels ([-2, 0, 2]; [0] the slice alone); () = images are files named by their ids
    slices: tuple[int, ...] = setting((), normalize=slice_offsets)
    # segmentation: images are gigapixel TIFFs (or `layers` folders) read a region at a time at 1/reduce (kit.data.tiffs),
    # masks so too, predictions coded at the full size; 0 = read whole. layers: each image is a fragment's folder of
    # surface_volume/NN.tif layers (vesuvius, kit.data.layers), each of these a channel; () = image files
    reduce: int = setting(0, minimum=0, maximum=64)
    layers: tuple[int, ...] = setting((), normalize=layer_numbers)
    # segmentation: the tables' column naming each row's class (uw-madison's `class`: a row per image and class
    # whose id is the image's alone); "" = classes, if any, end the ids (<image>_<class>)
    class_column: str = ""
    # the sample names an id on several rows (hms': a row per test window of a recording), each given its id's
    # prediction; false = its ids are unique, and a repeat is refused
    sample_repeats: bool = False
    # detection: a table of each study's class, one 0/1 column a class (siim-covid19's train_study_level.csv, ids
    # <study>_study): the sample's rows whose ids end as its ids do are studies, written as their classes'
    # probabilities ("negative 0.6 0 0 1 1 ..."), the rest images; a study is its images' first folder under
    # test_images, and a training image's the image table's StudyInstanceUID. "" = every sample row is an image
    study_table: str = ""
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
    # sequences: rows that count in loss and metric, a pandas query such as "u_out == 0"; tabular: rows that count in
    # the metric (the out-of-fold score, a confidence's fit), such as osic's "rows_after < 3"
    score_mask: str = ""
    text_columns: tuple[str, ...] = ()  # text: the columns whose texts the model reads (several: joined by the separator)
    # spans: the training table's column of each answer's first character in its context (chaii's answer_start);
    # "" = each answer is found in its context (its first place)
    answer_start_column: str = ""
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
    # tabular: a table whose rows each row points at, joined onto the training and test rows (champs' structures.csv:
    # an atom's element and coordinates by molecule and index); "" joins none (kit.data.joins)
    join_table: str = ""
    join_keys: tuple[str, ...] = ()  # tabular: join_table's key columns; all but the last are matched by their names
    # tabular: the rows' columns holding join_table's last key, one join each: join k's columns come in as <column>_<k>
    join_on: tuple[str, ...] = ()
    join_columns: tuple[str, ...] = ()  # tabular: join_table's columns brought in; () = every one but the keys
    # tabular: join_table's coordinates; with two joins, each row gains "distance" between its joined rows (and the
    # coordinates themselves are not brought in unless join_columns names them)
    join_distance: tuple[str, ...] = ()
    score_groups: str = ""  # group_log_mae: the column whose groups the metric scores apart (champs' coupling type)
    # tabular: the sample's ids, split at their last "_", into these columns make the test rows (osic's Patient_Week:
    # Patient, Weeks), where the test table holds each group's first row and the sample a row per id
    id_parts: tuple[str, ...] = ()
    # tabular: each row reads its group's first row as base_<column>s (the test rows: the test table's): the group's
    # column, and the column that orders its rows (which gains <baseline_order>_since_base)
    baseline_key: str = ""
    baseline_order: str = ""
    # tabular: folders of one series file a row, <id_column's value>.csv (volcano's train/ and test/ of 10-sensor
    # segments), each read once into a row of features joined onto its table's row (kit.data.signal_features); with
    # test_series and no [data] test, the test rows are the sample's ids
    train_series: str = ""
    test_series: str = ""
    # tabular: the series files' columns the features are read from; () = every column of the first training file
    series_columns: tuple[str, ...] = ()
    # audio: train holds ragged lines, `id,label,label...` after a header (a bare id: no label; `id,?`: a test row),
    # as mlsp-2013-birds' rec_labels_test_hidden.txt; the sample is then melted (Id = recording * 100 + label)
    label_lists: bool = False
    # audio label_lists: a table of each id (first column) and its clip's file name without image_ext (second):
    # train_images/<name><image_ext>, for training and test recordings alike; "" = the id is the name
    clip_table: str = ""
    # audio label_lists: a table of each id (first column) and its fold (`fold`), whose fold 1 rows are the test
    # recordings (mlsp-2013-birds' CVfolds_2.txt): checked against the `?` lines; "" = the `?` lines alone
    split_table: str = ""
    # audio files: target_column holds each row's labels joined by this (freesound's "Bark,Dog"), read as one 0/1
    # column per class of the sample submission; "" = one label (or the label columns) per row
    label_separator: str = ""
    # audio files: a second training table read as train is, its clips in extra_images (freesound's noisy set):
    # trained on with the loss weight [params] noisy_weight (0 leaves it out), never validated; "" = none
    extra_train: str = ""
    extra_images: str = ""


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
        if sum(map(bool, (spec.bands, spec.slices, spec.layers))) > 1:
            raise KitError(f"{where}: more than one of bands, slices and layers is set; an image is a record of bands, a "
                           "scan's slice or a fragment's layers")
        if spec.identity_columns and spec.metric != "bias_auc":
            raise KitError(f"{where}: identity_columns are read by metric bias_auc only; remove them or set that metric")
        grouped = metric_record(spec.metric).grouped
        if grouped != bool(spec.score_groups):
            raise KitError(f"{where}: metric {spec.metric} needs score_groups, the column whose groups it scores apart"
                           if grouped else f"{where}: score_groups is read by a grouped metric only (group_log_mae); "
                           "remove it or set that metric")
        if bool(spec.baseline_key) != bool(spec.baseline_order):
            raise KitError(f"{where}: baseline_key and baseline_order go together (the group's column, the column "
                           "that orders its rows); set both or neither")
        if bool(spec.join_table) != bool(spec.join_keys and spec.join_on):
            raise KitError(f"{where}: a join needs join_table, join_keys and join_on together; set all three or none")
        if bool(spec.train_series) != bool(spec.test_series):
            raise KitError(f"{where}: train_series and test_series go together (the training rows' and the test rows' "
                           "folders of series files); set both or neither")
        if spec.series_columns and not spec.train_series:
            raise KitError(f"{where}: series_columns names the columns of series files: set train_series and "
                           "test_series too, or remove it")
        if spec.join_distance and len(spec.join_on) != 2:
            raise KitError(f"{where}: join_distance is the distance between two joined rows: join_on must name two columns")
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
