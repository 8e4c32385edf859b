"""Where an image competition keeps its images, by [data] layout, and which training row is which image.

- files: a table of ids and labels, and train_images/<id><image_ext> (dog-breed, Planet), or image_path made
  from the row's columns (hotel-id's "{chain}/{image}", seti's "{id[0]}/{id}.npy");
- folders: train_images/<class>/<file>, no table (plant-seedlings); the class is the folder's name, or the
  class class_folders maps it to (alaska2); the test folder is never a class;
- names: train_images/<file>, no table; the class is label_pattern's first group in the file's path
  (dogs-vs-cats' cat.123.jpg);
- pixels: tables whose rows are square grayscale images, pixel columns in row-major order (digit-recognizer,
  Fashion-MNIST, Kannada-MNIST); the test table's rows are the sample submission's rows in order, unless it
  has the id column;
- arrays: tables (JSON records, usually) whose rows hold a list of side x side numbers per channel
  (statoil's band_1 and band_2), matched to the sample as pixels are;
- coco: a COCO-style label file (kit.data.coco), the images under train_images by their file_name, the test
  images the test JSON's, found by the sample's ids.

Test images are named by the sample submission's ids (files, folders, names: test_images/<id><image_ext>, or
test_image_path), or are the test table's rows (pixels, arrays) or the test JSON's images (coco). Any folder
or table may come archived (kit.data.archives).
"""
from __future__ import annotations

import hashlib
import itertools
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, arrays, coco, image_paths, tables
from kit.data.image_paths import PATH
from kit.errors import KitError
from kit.spec import Spec

SAMPLE_IDS = 20  # ids looked up in an image folder before decoding; all missing means a wrong name, not bad files


@dataclass
class Source:
    """One split's images, in row order: files to decode, or pixel rows (n, side, side) uint8 (or arrays,
    (n, side, side, channels)) to resize."""

    names: list[str]  # each row as messages name it: the file under the data folder, or the table's line
    paths: list[Path] | None = None
    pixels: np.ndarray | None = None
    sample: pd.DataFrame | None = None  # predict mode: the submission's rows, where the test table made them

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def form(self) -> arrays.Form:
        """What each image is once decoded: RGB bytes, or an array's channels (kit.data.arrays)."""
        if self.pixels is not None:
            return arrays.form_of(self.pixels)
        if self.paths and str(self.paths[0]).endswith(".npy"):
            return arrays.probe(self.paths)
        return arrays.Form()

    def stamps(self) -> np.ndarray:
        """What decides the images' content for a run's identity: each file's name and size, or the pixels."""
        if self.pixels is not None:
            return np.array([hashlib.sha256(self.pixels.tobytes()).hexdigest()])
        return np.array([f"{p.name}|{p.stat().st_size if p.exists() else -1}" for p in self.paths])


def training_table(spec: Spec, data_dir: Path, sample: pd.DataFrame | None = None,
                   log: Callable[[str], None] = print) -> tuple[pd.DataFrame, str]:
    """The training rows: id column (made up from row numbers where the table has none) and labels, and the
    name errors give the table. Layouts that find their images themselves (folders, names, coco) add each
    row's image path (PATH). `sample`: the sample submission, whose labels say how coco names classes; `log`
    says what was unpacked."""
    if spec.layout in ("folders", "names"):
        root = image_dir(data_dir, spec.train_images, "train_images", log)
        test = data_dir / spec.test_images if spec.test_images else None
        if spec.layout == "folders":
            table = image_paths.class_folders(root, spec.train_images, spec.class_folders, test, spec.image_ext, log)
        else:
            if not spec.label_pattern:
                raise KitError('layout = "names" needs label_pattern in [data]: a regular expression whose first group is '
                               'the class, such as "^(cat|dog)\\."')
            table = image_paths.named_files(root, spec.train_images, spec.label_pattern, test, spec.image_ext)
        return table.rename(columns={"id": spec.id_column, "label": spec.target_column}), f"{spec.train_images or '.'}/"
    if spec.layout == "coco":
        return coco.training_table(spec, data_dir, sample, log)
    what = "training labels" if spec.layout == "files" else "training table"
    path = archives.find_file(data_dir, spec.train, what, log=log)
    table = tables.read_table(path, spec.id_column)
    # rows found by other means than the id (pixels, arrays, image_path: iwildcam-2019's train.csv names its images
    # in file_name and its id column is not the sample's Id) need no id of their own: they are numbered
    unnamed = spec.layout in ("pixels", "arrays") or (spec.layout == "files" and spec.image_path)
    if unnamed and spec.id_column not in table.columns:
        table.insert(0, spec.id_column, (np.arange(len(table)) + 1).astype(str))
        table.attrs["numbered"] = spec.id_column  # not the file's: errors do not name it
    tables.require_columns(table, [spec.id_column], path)
    tables.require_unique(table, spec.id_column, path)
    return table, path.name


def training_source(spec: Spec, data_dir: Path, table: pd.DataFrame, where: str, columns: list[str] | None = None,
                    log: Callable[[str], None] = print) -> Source:
    """The image of each training row; `columns`: the pixel columns (pixels)."""
    if spec.layout == "pixels":
        return Source([f"{spec.train} line {i + 2}" for i in table.index], pixels=pixel_images(table[columns], where))
    if spec.layout == "arrays":
        return Source([f"{spec.train} row {i + 1}" for i in table.index],
                      pixels=arrays.row_arrays(table, spec.array_columns, where))
    folder = image_dir(data_dir, spec.train_images, "train_images", log)
    if PATH in table.columns and not spec.image_path:  # folders, names, coco: the layout found each image
        found = image_paths.under(folder, spec.train_images, table[PATH].astype(str).tolist())
        if spec.layout == "coco":
            image_paths.check_paths(folder, spec.train_images, found, where, "train_images")
        return Source([shown(spec.train_images, i) for i in table[spec.id_column].astype(str)], paths=[folder / p for p in found])
    ids = table[spec.id_column].to_numpy(dtype=str)
    if spec.image_path:
        found = image_paths.under(folder, spec.train_images, image_paths.formatted(spec.image_path, table, "image_path", where))
        image_paths.check_paths(folder, spec.train_images, found, where, "image_path and train_images")
        return Source([shown(spec.train_images, p) for p in found], paths=[folder / p for p in found])
    check_image_files(folder, spec.train_images, ids, spec.image_ext, where, "train_images")
    return Source([f"{spec.train_images}/{i}{spec.image_ext}" for i in ids], paths=[folder / f"{i}{spec.image_ext}" for i in ids])


def test_source(spec: Spec, data_dir: Path, sample: pd.DataFrame, sample_path: Path, columns: list[str] | None = None,
                rows_of: Callable[[Sequence[str]], pd.DataFrame] | None = None,
                log: Callable[[str], None] = print) -> Source:
    """The image of each sample submission row. `columns`: the training table's pixel columns, which the test
    table must have (None in predict mode, where no training table is read). `rows_of(ids)`: predict mode's
    submission rows from a test table whose rows the sample does not list (a hidden test set's)."""
    ids = sample[spec.id_column].to_numpy(dtype=str)
    if spec.layout in ("pixels", "arrays"):
        return _test_rows_as_images(spec, data_dir, sample, sample_path, columns, rows_of, log)
    folder = image_dir(data_dir, spec.test_images, "test_images", log)
    template = spec.test_image_path or spec.image_path
    key = "test_image_path" if spec.test_image_path else "image_path"
    if spec.layout == "coco" and spec.test and not template:  # the test JSON's images, by the sample's ids
        table, name = coco.test_table(spec, data_dir, log)
        rows = matched(table, ids, name, sample_path.name, spec.id_column)
        found = image_paths.under(folder, spec.test_images, rows[PATH].tolist())
        image_paths.check_paths(folder, spec.test_images, found, name, "test and test_images")
        return Source([shown(spec.test_images, i) for i in ids], paths=[folder / p for p in found])
    if template:
        rows, name = sample, sample_path.name
        if spec.test and not all(f in sample.columns for f in image_paths.template_fields(template, key)):
            path = archives.find_file(data_dir, spec.test, "test table", log=log)  # the template's columns are its
            rows, name = matched(tables.read_table(path, spec.id_column), ids, path.name, sample_path.name, spec.id_column), \
                path.name
        found = image_paths.under(folder, spec.test_images, image_paths.formatted(template, rows, key, name))
        image_paths.check_paths(folder, spec.test_images, found, name, f"{key} and test_images")
        return Source([shown(spec.test_images, p) for p in found], paths=[folder / p for p in found])
    check_image_files(folder, spec.test_images, ids, spec.image_ext, sample_path.name, "test_images")
    return Source([f"{spec.test_images}/{i}{spec.image_ext}" for i in ids],
                  paths=[folder / f"{i}{spec.image_ext}" for i in ids])


def shown(folder: str, path: str) -> str:
    """An image as messages name it: its path under the folder [data] names ("" is the data folder)."""
    return f"{folder}/{path}" if folder else path


def matched(table: pd.DataFrame, ids: np.ndarray, name: str, sample_name: str, id_column: str) -> pd.DataFrame:
    """The rows of `table` with the sample submission's `ids`, in its order."""
    tables.require_columns(table, [id_column], Path(name))
    tables.require_unique(table, id_column, Path(name))
    order = pd.Index(table[id_column].astype(str)).get_indexer(ids)
    if (order < 0).any():
        raise KitError(f"{sample_name}: id '{ids[order < 0][0]}' is not in {name} ({int((order < 0).sum())} such ids)")
    return table.iloc[order]


def _test_rows_as_images(spec: Spec, data_dir: Path, sample: pd.DataFrame, sample_path: Path,
                         columns: list[str] | None, rows_of: Callable[[Sequence[str]], pd.DataFrame] | None,
                         log: Callable[[str], None]) -> Source:
    """pixels, arrays: the test table's rows, in the sample's order."""
    ids = sample[spec.id_column].to_numpy(dtype=str)
    if not spec.test:
        raise KitError(f'layout = "{spec.layout}" needs the test table: set test (such as "test.csv") in [data]')
    path = archives.find_file(data_dir, spec.test, "test table", log=log)
    table = tables.read_table(path, spec.id_column)
    if spec.layout == "pixels":
        found = pixel_columns(table, [spec.id_column, spec.target_column], path.name)  # Fashion-MNIST's test has labels
        if columns is not None and found != columns:
            raise KitError(f"{path.name}: {len(found)} pixel columns ({found[0]} ... {found[-1]}), not the "
                           f"{len(columns)} of {spec.train} ({columns[0]} ... {columns[-1]}); the test images must be the "
                           "training images' size")
    new = None
    if rows_of is not None and not _rows_match(table, spec.id_column, ids):
        new = rows_of(_ids_of_table(table, spec.id_column, ids, path.name, sample_path.name))
    elif spec.id_column in table.columns:  # ids in the table: the sample's rows are found by id
        table = matched(table, ids, path.name, sample_path.name, spec.id_column)
    elif len(table) != len(sample):
        raise KitError(f"{path.name} has {len(table)} rows and {sample_path.name} {len(sample)}: without an "
                       f"'{spec.id_column}' column in {path.name}, its row k is the sample's row k")
    if spec.layout == "arrays":
        return Source([f"{spec.test} row {i + 1}" for i in table.index],
                      pixels=arrays.row_arrays(table, spec.array_columns, path.name), sample=new)
    return Source([f"{spec.test} line {i + 2}" for i in table.index], pixels=pixel_images(table[found], path.name),
                  sample=new)


def _rows_match(table: pd.DataFrame, id_column: str, ids: np.ndarray) -> bool:
    """Whether the sample's ids are the test table's: by its id column, else by count (row k is the sample's k)."""
    if id_column in table.columns:
        return bool((pd.Index(table[id_column].astype(str)).get_indexer(ids) >= 0).all()) and len(table) == len(ids)
    return len(table) == len(ids)


def _ids_of_table(table: pd.DataFrame, id_column: str, ids: np.ndarray, test: str, sample: str) -> list[str]:
    """The test table's ids: its id column, else numbers that go on from the sample's first (ImageId 1, 2, ...)."""
    if id_column in table.columns:
        return table[id_column].astype(str).tolist()
    if len(ids) and str(ids[0]).lstrip("-").isdigit():
        return [str(int(ids[0]) + k) for k in range(len(table))]
    raise KitError(f"{test} has {len(table)} rows and {sample} {len(ids)}, and neither names the rows: add the "
                   f"'{id_column}' column to {test}")


def pixel_columns(table: pd.DataFrame, others: list[str], where: str) -> list[str]:
    """Every column but `others`: the pixels of a square image, row by row."""
    columns = [c for c in table.columns if c not in others]
    side = math.isqrt(len(columns))
    if not columns or side * side != len(columns):
        near = max(side, 1)
        named = [o for o in others if o in table.columns and o != table.attrs.get("numbered")]
        raise KitError(f"{where}: {len(columns)} pixel columns (all but {', '.join(named) or 'none'}) "
                       f"do not make a square image ({near} x {near} is {near * near}, {near + 1} x {near + 1} is "
                       f"{(near + 1) ** 2}); check target_column and id_column in [data]")
    return columns


def pixel_images(values: pd.DataFrame, where: str) -> np.ndarray:
    """(rows, side, side) uint8 from 0..255 pixel values (or 0..1 floats, scaled)."""
    numbers = values.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float32)
    bad = ~np.isfinite(numbers)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        cell = values.iloc[:, col].tolist()[row]
        raise KitError(f"{where}, line {values.index[row] + 2}, column '{values.columns[col]}': {cell!r} is not a "
                       f"pixel value ({int(bad.sum())} such cells); pixels are numbers 0 to 255")
    if all(d.kind == "f" for d in values.dtypes) and numbers.max(initial=0) <= 1.0:
        numbers = numbers * 255  # a table of 0..1 intensities
    if numbers.min(initial=0) < 0 or numbers.max(initial=0) > 255:
        row, col = np.argwhere((numbers < 0) | (numbers > 255))[0]
        cell = values.iloc[:, col].tolist()[row]
        raise KitError(f"{where}, line {values.index[row] + 2}, column '{values.columns[col]}': {cell!r} is "
                       "outside 0 to 255; pixel columns hold 8-bit grayscale values")
    side = math.isqrt(values.shape[1])
    return np.rint(numbers).astype(np.uint8).reshape(len(values), side, side)


def image_dir(data_dir: Path, name: str, key: str, log: Callable[[str], None] = print) -> Path:
    """The folder [data] `key` names, or its archive unpacked (kit.data.archives)."""
    return archives.find_folder(data_dir, name, key, log=log)


def check_image_files(folder: Path, name: str, ids: Sequence[str], ext: str, table: str, key: str) -> None:
    """A KitError when none of the first ids has its image `<folder>/<id><ext>`: then the extension, the
    folder or the id column is wrong, which says more than every image failing to decode. `name` is the
    folder as [data] spells it, `table` the file the ids come from, `key` the [data] key naming the folder."""
    sample = list(ids[:SAMPLE_IDS])
    missing = [i for i in sample if not (folder / f"{i}{ext}").is_file()]
    if not sample or len(missing) < len(sample):
        return
    head = f"no {name}/<id>{ext} for {len(missing)} of the first {len(sample)} ids in {table}"
    if ext and any((folder / i).is_file() for i in sample):
        raise KitError(f'{head}; the ids already end in their extension: set image_ext = "" in [data]')
    with os.scandir(folder) as it:  # a few thousand entries say which extensions the folder holds
        entries = [(e.name, e.is_dir()) for e in itertools.islice(it, 2000)]
    files = sorted(n for n, is_dir in entries if not is_dir)
    suffixes = [s for s, _ in Counter(os.path.splitext(n)[1] for n in files).most_common(3)]
    for suffix in suffixes:
        if suffix != ext and any((folder / f"{i}{suffix}").is_file() for i in sample):
            raise KitError(f'{head}; the folder holds {suffix} files: set image_ext = "{suffix}" in [data]')
    if not files:
        folders = sorted(n for n, is_dir in entries if is_dir)
        held = f"only folders (such as {folders[0]})" if folders else "nothing"
        raise KitError(f"{head}; the folder holds {held}: check {key} in [data]")
    kinds = " and ".join(s or "extensionless" for s in suffixes)
    raise KitError(f"{head}; the folder holds {kinds} files such as {files[0]}: check id_column, {key} and image_ext in [data]")
