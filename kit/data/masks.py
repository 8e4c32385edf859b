"""Where a segmentation competition keeps its masks, and what its sample submission asks for.

Training masks come as a mask image per training image (`[data] train_masks`: a folder of files named as the
images, or with `mask_ext` in place of `image_ext`), or as run-length codes in the training table's
`target_column` (kit.data.rle): one row per image (TGS's `id,rle_mask`), or one per image and class, the id
`<image>_<class>` (Severstal's `ImageId_ClassId`, whose ids end in their image's extension). Without a training
table, the training images are the files of `train_images` that have a mask (denoising-dirty-documents:
`train/` and `train_cleaned/`).

The sample submission's rows say what is written (`Output`): one per test image (a run-length code, TGS's), one
per image and class (`<image>_<class>`), or one per pixel (`<image>_<row>_<col>`, 1-indexed, as
denoising-dirty-documents' melted pages).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from kit.data import archives, rle, scans, tables
from kit.data.canvas import Masks
from kit.errors import KitError
from kit.runtime import run_folder
from kit.spec import Spec

PIXEL = re.compile(r"(.+)_(\d+)_(\d+)")
# a sample cell naming a file of one of these asks for a mask file there; the format PIL writes it in
FILE_FORMATS = {".png": "PNG", ".tif": "TIFF", ".tiff": "TIFF", ".bmp": "BMP"}
# the pictures kit writes at the output folder's top (pipelines' samples.png, predictions.png; kit.run.plots'): a
# mask file the sample names must not take their place
KIT_FILES = ("samples.png", "predictions.png", "history.png", "importance.png")


@dataclass(frozen=True)
class Training:
    ids: list[str]  # one image per row
    paths: list[str]
    masks: Masks
    classes: tuple[str, ...] = ()  # a table of one row per image and class: the classes its ids name, in channel order
    table: pd.DataFrame | None = None  # one row per image, as the training table has it (group and fold columns)
    where: str = ""


@dataclass(frozen=True)
class Output:
    layout: str  # "image", "class", "pixels" or "files": a row per image, per image and class, per pixel; a mask file per image
    column: str  # the sample's column the model fills
    ids: list[str]  # the test images, in the order the sample first names them
    paths: list[str]
    image: np.ndarray  # (rows,) each sample row's image, an index into ids
    klass: np.ndarray  # (rows,) "class": each row's class, an index into classes
    pixel: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))  # "pixels": (rows, 2) 0-based row, col
    classes: tuple[str, ...] = ()  # "class": the class names the rows' ids end in
    order: str = "column"  # "image", "class": the codes' pixel order (kit.data.rle)
    empty: str = ""  # "image", "class": an empty mask's code, "-" where the sample writes it so (contrails')


def empty_code(spec: Spec, sample: pd.Series) -> str:
    """An empty mask's code: [data] empty_mask where set (checked as a code), else as the sample writes one."""
    if spec.empty_mask:
        rle.numbers(spec.empty_mask, "[data] empty_mask")
        return spec.empty_mask
    return rle.empty_code(sample)


def class_order(names) -> tuple[str, ...]:
    """Class names sorted as numbers where they all are ("1" to "4"), else as text."""
    unique = sorted(set(map(str, names)))
    return tuple(sorted(unique, key=int) if all(n.isdigit() for n in unique) else unique)


class _Files:
    """Which names have a file `<name><ext>` in a folder (each asked once); with `records`, a folder of that name
    (a record of band arrays, [data] bands; a fragment of layers, [data] layers)."""

    def __init__(self, folder: Path, ext: str, records: bool = False):
        self.folder, self.ext, self.known, self.records = folder, ext, {}, records

    def path(self, name: str) -> str:
        return str(self.folder / f"{name}{self.ext}")

    def __call__(self, name: str) -> bool:
        if name not in self.known:
            path = Path(self.path(name))
            self.known[name] = path.is_dir() if self.records else path.is_file()
        return self.known[name]


class _Slices:
    """Which ids name a slice of a scan under a folder (kit.data.scans), found by walking it once."""

    def __init__(self, folder: Path):
        self.folder, self.found, self.ext = folder, scans.index(folder), ""

    def path(self, name: str) -> str:
        return self.found.get(name, str(self.folder / name))

    def __call__(self, name: str) -> bool:
        return name in self.found


def _images(spec: Spec, folder: Path) -> _Files | _Slices:
    return _Slices(folder) if spec.slices else _Files(folder, spec.image_ext, bool(spec.bands or spec.layers))


def _by_column(spec: Spec, table: pd.DataFrame, path: Path) -> tuple[pd.Series, pd.Series] | None:
    """(image, class) of each row from the id and [data] class_column, where it is set."""
    if not spec.class_column:
        return None
    tables.require_columns(table, [spec.class_column], path, "[data] class_column")
    return table[spec.id_column].astype(str).reset_index(drop=True), table[spec.class_column].astype(str).reset_index(drop=True)


def image_and_class(ids: pd.Series, exists: Callable[[str], bool]) -> tuple[pd.Series, pd.Series] | None:
    """(image, class) of each `<image>_<class>` id, where every id's image exists and none is an image itself."""
    parts = ids.str.rsplit("_", n=1, expand=True)
    if parts.shape[1] != 2 or parts[1].isna().any() or exists(ids.iloc[0]):
        return None
    if not all(exists(name) for name in parts[0].unique()):
        return None
    return parts[0], parts[1]


def training(spec: Spec, data_dir: Path, log: Callable[[str], None]) -> Training:
    """The training images and the source of their masks, checked: every listed image has a mask."""
    folder = archives.find_folder(data_dir, spec.train_images, "train_images", log=log)
    images = _images(spec, folder)
    if not spec.train:
        if not spec.train_masks:
            raise KitError("[data] train and train_masks are both empty: name the training table of run-length codes "
                           "(train) or the folder of masks (train_masks)")
        ext = spec.image_ext
        ids = sorted(p.name[: len(p.name) - len(ext)] for p in folder.iterdir()
                     if (p.is_dir() if spec.bands or spec.layers else p.is_file()) and p.name.endswith(ext))
        found = _mask_files(spec, data_dir, log)
        kept = [i for i in ids if found(i)]
        if not kept:
            raise KitError(f"none of the {len(ids)} images in {folder} has a mask in {found.folder} (as <name>"
                           f"{found.ext}); check [data] train_masks and mask_ext")
        if len(kept) < len(ids):
            log(f"train          {len(ids) - len(kept)} images of {folder.name} have no mask in {found.folder.name} "
                "and are left out")
        return Training(kept, [images.path(i) for i in kept], Masks(paths=tuple(found.path(i) for i in kept)),
                        where=str(folder))
    path = archives.find_file(data_dir, spec.train, "training table", log=log)
    table = tables.read_table(path, spec.id_column)
    tables.require_columns(table, [spec.id_column], path)
    table = table.assign(**{spec.id_column: table[spec.id_column].astype(str)})
    where = path.name
    if spec.train_masks:
        tables.require_unique(table, spec.id_column, path)
        ids = table[spec.id_column].tolist()
        found = _mask_files(spec, data_dir, log)
        _require_files(ids, images, "image", folder, "train_images and image_ext")
        _require_files(ids, found, "mask", found.folder, "train_masks and mask_ext")
        return Training(ids, [images.path(i) for i in ids], Masks(paths=tuple(found.path(i) for i in ids)),
                        table=table.reset_index(drop=True), where=where)
    tables.require_columns(table, [spec.target_column], path, "[data] target_column (the run-length codes)")
    split = _by_column(spec, table, path) or image_and_class(table[spec.id_column], images)
    if split is None:  # one row per image
        tables.require_unique(table, spec.id_column, path)
        ids = table[spec.id_column].tolist()
        _require_files(ids, images, "image", folder, "train_images and image_ext")
        codes = tuple(((0, code),) for code in table[spec.target_column].tolist())
        names = tuple(f"{where} row {r + 2} ({i})" for r, i in enumerate(ids))
        return Training(ids, [images.path(i) for i in ids], Masks(codes=codes, names=names, order=spec.rle_order),
                        table=table.reset_index(drop=True), where=where)
    image, klass = split
    if spec.class_column:
        _require_files(list(dict.fromkeys(image)), images, "image", folder, "train_images")
    classes = class_order(klass)
    rows = pd.DataFrame({"image": image, "channel": klass.map(classes.index), "code": table[spec.target_column],
                         "line": np.arange(len(table)) + 2})
    ids = list(dict.fromkeys(image))  # in the table's order
    grouped = {i: g for i, g in rows.groupby("image", sort=False)}
    codes = tuple(tuple(zip(grouped[i]["channel"].tolist(), grouped[i]["code"].tolist())) for i in ids)
    names = tuple(f"{where} row {grouped[i]['line'].iloc[0]} ({i})" for i in ids)
    first = table.groupby(image.to_numpy(), sort=False).head(1).reset_index(drop=True)  # group and fold columns
    if spec.slices:  # a scan's case and day, for group_column: a case's slices stay in one fold
        named = pd.DataFrame([scans.parts(i, where)[:2] for i in first[spec.id_column].astype(str)], columns=["case", "day"])
        first = first.assign(**{c: named[c] for c in named if c not in first})
    log(f"train          {where}: one row per image and class ({len(classes)} classes: {', '.join(classes[:6])})")
    masks = Masks(codes=codes, channels=len(classes), names=names, order=spec.rle_order)
    return Training(ids, [images.path(i) for i in ids], masks, classes, first, where)


def _mask_files(spec: Spec, data_dir: Path, log: Callable[[str], None]) -> _Files:
    return _Files(archives.find_folder(data_dir, spec.train_masks, "train_masks", log=log), spec.mask_ext or spec.image_ext)


def _require_files(ids: list[str], exists: _Files, what: str, folder: Path, keys: str) -> None:
    missing = [i for i in ids if not exists(i)]
    if missing:
        raise KitError(f"{len(missing)} of {len(ids)} training {what}s are not in {folder} (such as "
                       f"{Path(exists.path(missing[0])).name}); check [data] {keys}")


def output(spec: Spec, data_dir: Path, sample: pd.DataFrame, sample_path: Path, column: str,
           log: Callable[[str], None]) -> Output:
    """What the sample submission's rows name: its layout, the test images in its order, and for each row its
    image (and class, or pixel)."""
    folder = archives.find_folder(data_dir, spec.test_images, "test_images", log=log)
    images = _images(spec, folder)
    ids = sample[spec.id_column].astype(str)
    first = ids.iloc[0]
    pixel = PIXEL.fullmatch(first)
    if spec.class_column:
        layout, (image, klass) = "class", _by_column(spec, sample, sample_path)
    elif images(first):
        layout, image = "image", ids
        if names_files(sample[column]):
            layout = "files"
            _check_file_names(sample[column], sample_path, column)
    elif pixel and images(pixel.group(1)):
        layout = "pixels"
        parts = ids.str.extract(PIXEL.pattern)
        if parts.isna().any().any():
            bad = ids[parts.isna().any(axis=1)].iloc[0]
            raise KitError(f"{sample_path.name}: id '{bad}' is not <image>_<row>_<col> as the others are")
        image = parts[0]
    else:
        split = image_and_class(ids, images)
        if split is None:
            raise KitError(f"{sample_path.name}: id '{first}' names no image in {folder} (as {first}{spec.image_ext}, "
                           f"<image>_<class> or <image>_<row>_<col>); check [data] test_images and image_ext")
        layout, (image, klass) = "class", split
    names = list(dict.fromkeys(image))
    missing = [n for n in names if not images(n)]
    if missing:
        raise KitError(f"{sample_path.name}: {len(missing)} of its {len(names)} test images are not in {folder} (such as "
                       f"{missing[0]}{spec.image_ext}); check [data] test_images")
    index = pd.Series(np.arange(len(names)), index=names)
    rows = index[image.to_numpy()].to_numpy()
    if layout == "pixels":
        at = parts[[1, 2]].to_numpy(np.int64) - 1
        return Output(layout, column, names, [images.path(n) for n in names], rows, np.zeros(len(rows), np.int64), at)
    if layout == "class":
        classes = class_order(klass)
        return Output(layout, column, names, [images.path(n) for n in names], rows,
                      klass.map(classes.index).to_numpy(np.int64), classes=classes, order=spec.rle_order,
                      empty=empty_code(spec, sample[column]))
    return Output(layout, column, names, [images.path(n) for n in names], rows, np.zeros(len(rows), np.int64),
                  order=spec.rle_order, empty=empty_code(spec, sample[column]))


def names_files(values: pd.Series) -> bool:
    """Whether the sample's cells name files to write (masks/<id>.png), one a row, rather than hold codes: every
    filled cell does (a blank one is refused by the check that follows, not read as a code)."""
    names = values.dropna().astype(str).str.strip()
    names = names[names != ""]
    return len(names) > 0 and bool(names.str.lower().str.endswith(tuple(FILE_FORMATS)).all())


def file_name(name: str) -> str:
    """Where under the output folder the sample's `name` is written: backslashes read as slashes, "." parts
    and the spaces around the name dropped (masks\\a.png, masks/./a.png and "masks/a.png " are masks/a.png)."""
    return "/".join(p for p in str(name).strip().replace("\\", "/").split("/") if p not in ("", "."))


def _check_file_names(values: pd.Series, sample_path: Path, column: str) -> None:
    """The files the sample names lie inside the output folder, clear of kit's own files, each named once."""
    blank = values.isna() | (values.astype(str).str.strip() == "")
    if blank.any():
        raise KitError(f"{sample_path.name}: row {int(np.argmax(blank.to_numpy())) + 2} of '{column}' names no file, where "
                       "the others name a mask file each; name one for every test image")
    for name in values.astype(str):
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (parts and parts[0].endswith(":")):
            raise KitError(f"{sample_path.name}: '{name}' in '{column}' is not a file inside the output folder, where kit "
                           "writes the mask files the sample names; name them relative to it (masks/<id>.png)")
        written = file_name(name)
        if written in KIT_FILES or written.startswith(f"{run_folder.ROOT}/"):
            raise KitError(f"{sample_path.name}: '{name}' in '{column}' is a file kit writes itself in the output folder "
                           f"({', '.join(KIT_FILES)}, {run_folder.ROOT}/); name the masks elsewhere (masks/<id>.png)")
    first: dict[str, str] = {}  # each file written, by the first name for it
    for name in values.astype(str):
        written = file_name(name)
        if written in first:
            what = f"'{name}' is named twice" if first[written] == name else f"'{first[written]}' and '{name}' name one file"
            raise KitError(f"{sample_path.name}: {what} in '{column}'; each test image's mask needs a file of its own")
        first[written] = name


def check_submission(cells: pd.Series, sample: pd.Series, folder: Path | None) -> None:
    """A submission's column of mask file names (kit.pipelines.base.validate): the sample's names, as it has them,
    each a file written in `folder` (the output folder; None: not looked for)."""
    if not cells.astype(str).reset_index(drop=True).equals(sample.astype(str).reset_index(drop=True)):
        raise KitError(f"submission's '{cells.name}' differs from the sample's: it names the mask files written")
    names = cells.astype(str) if folder is not None else []
    absent = [n for n in names if not (folder / file_name(n)).is_file()]
    if absent:
        raise KitError(f"{len(absent)} of the {len(cells)} mask files the submission names are not in {folder} (such as "
                       f"{absent[0]})")
