"""What a competition's data folder holds, for `kit init`: its tables (plain or archived; CSV, TSV, JSON), its
COCO-style label files, and its image folders (plain or archived) with the image files in each. Archives of
images are listed from their index, never unpacked; archived tables are unpacked into a scratch folder to be
read, as the kernel would read them (kit.data.archives)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from kit.data import archives, records
from kit.errors import KitError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".gif", ".webp", ".npy")
SOUND_SUFFIXES = (".wav", ".aif", ".aiff", ".aifc", ".flac", ".ogg", ".mp3")  # read as images are: files the sample names
TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson")
LISTED = 200_000  # an image folder's files listed at most: enough to tell its layout, in a second or two
HEAD = 10_000  # rows of a CSV or TSV read: enough to tell ids, targets, texts and sequences apart
DEPTH = 3  # folders deep a JSON label file is looked for (herbarium-2020's nybg2020/train/metadata.json)


def is_image(name: str) -> bool:
    """An image's or a sound's file: both are found, named and labelled alike (the cnn and audio templates)."""
    return name.lower().endswith(IMAGE_SUFFIXES + SOUND_SUFFIXES)


def is_sound(name: str) -> bool:
    return name.lower().endswith(SOUND_SUFFIXES)


def table_suffix(name: str) -> str:
    """The table extension `name` ends with ("" for none), in lower case."""
    return next((s for s in TABLE_SUFFIXES if name.lower().endswith(s)), "")


@dataclass(frozen=True)
class Folder:
    """Image files under a folder of the data, or in an archive of one."""

    name: str  # as [data] names it: "train" for train/ and for train.zip; "" is the data folder itself
    source: str  # what holds it, as the user sees it: "train/" or "train.zip"
    files: tuple[str, ...]  # its image files' paths under it, sorted (at most LISTED)
    archived: bool = False

    @cached_property
    def members(self) -> frozenset[str]:
        return frozenset(self.files)

    @cached_property
    def by_name(self) -> dict[str, str]:
        """Its files by their name and by their stem (the first of each, in sorted order)."""
        index: dict[str, str] = {}
        for f in self.files:
            index.setdefault(PurePosixPath(f).name, f)
            index.setdefault(PurePosixPath(f).stem, f)
        return index

    @property
    def flat(self) -> tuple[str, ...]:
        """The files directly in it, not in a sub-folder."""
        return tuple(f for f in self.files if "/" not in f)

    @property
    def suffix(self) -> str:
        """The most common extension of its files."""
        counts: dict[str, int] = {}
        for f in self.files:
            suffix = PurePosixPath(f).suffix
            counts[suffix] = counts.get(suffix, 0) + 1
        return max(counts, key=counts.get) if counts else ""


@dataclass
class Survey:
    data_dir: Path
    scratch: Path  # where archived tables unpack to be read
    tables: dict[str, str] = field(default_factory=dict)  # [data] name -> the file that holds it (train.csv.zip)
    folders: dict[str, Folder] = field(default_factory=dict)  # top-level image folders, by [data] name
    labels: dict[str, Any] = field(default_factory=dict)  # JSON label files (COCO, image lists), by [data] name
    skipped: list[str] = field(default_factory=list)  # "<file>: why" for files read and found to be none of those
    _read: dict[str, pd.DataFrame] = field(default_factory=dict)

    @classmethod
    def of(cls, data_dir: Path, scratch: Path) -> Survey:
        if not data_dir.is_dir():
            raise KitError(f"{data_dir}: no such folder; give kit init the competition's data folder (the one holding "
                           "sample_submission.csv)")
        survey = cls(data_dir, scratch)
        entries = sorted(os.scandir(data_dir), key=lambda e: e.name)
        if not [e for e in entries if not e.name.startswith(".")]:
            raise KitError(f"{data_dir}: the folder is empty; give kit init the competition's data folder")
        for entry in entries:
            if entry.name.startswith(".") or archives.junk(entry.name):
                continue
            if entry.is_dir():
                for folder in _by_split(entry.name, tuple(_images_under(Path(entry.path)))):
                    survey.folders[folder.name] = folder
            elif archives.archive_suffix(entry.name):
                survey._archive(Path(entry.path))
            elif table_suffix(entry.name):
                survey.tables.setdefault(entry.name, entry.name)
        for path in _json_below(data_dir):
            survey.tables.setdefault(path.relative_to(data_dir).as_posix(), path.relative_to(data_dir).as_posix())
        for name in [n for n in survey.tables if table_suffix(n) in (".json", ".jsonl", ".ndjson")]:
            survey._classify_json(name)
        return survey

    def _archive(self, path: Path) -> None:
        """An archive of a table (train.csv.zip, train.zip holding train.json) or of images (train.zip)."""
        stem = path.name[: -len(archives.archive_suffix(path.name))]
        if table_suffix(stem):
            self.tables.setdefault(stem, path.name)
            return
        names = [n.replace("\\", "/").rstrip("/") for n in archives.members(path)]
        images = [n for n in names if is_image(n)]
        if images:
            top = {n.split("/")[0] for n in images}
            if len(top) == 1 and "/" in images[0] and top.pop().lower() == stem.lower():  # train.zip holding train/...
                images = [n.split("/", 1)[1] for n in images]
            self.folders.setdefault(stem, Folder(stem, path.name, tuple(sorted(images)[:LISTED]), archived=True))
            return
        held = [n for n in names if table_suffix(n)]
        if len(held) == 1:  # train.zip holding train.json: "train.json" finds it (kit.data.archives.locate)
            member = PurePosixPath(held[0]).name
            name = member if PurePosixPath(member).stem == stem else path.name
            self.tables.setdefault(name, path.name)

    def _classify_json(self, name: str) -> None:
        """A JSON file is a COCO label file, a list of image records (herbarium-2022's test), a table, or none of
        them (cassava's label_num_to_disease_map.json, a mapping of class numbers to names): skipped, with a note."""
        try:
            path = self.path(name)
            value = records.load(path)
            if records.is_coco(value) or _image_records(value):
                self.labels[name] = value
                del self.tables[name]
            elif "/" in name:  # deeper JSON files are label files or nothing: a table sits at the top
                del self.tables[name]
            else:
                self._read[name] = records.frame(value, path)
        except KitError as e:
            self.skipped.append(f"{name}: {str(e).removeprefix(f'{PurePosixPath(name).name}: ')}")
            del self.tables[name]

    def path(self, name: str) -> Path:
        """The file [data] `name` names, unpacked from its archive where it comes archived."""
        return archives.find_file(self.data_dir, name, "table", self.scratch, log=lambda line: None)

    def read(self, name: str) -> pd.DataFrame:
        """The table [data] `name` names: every cell of a CSV or TSV as text (its first HEAD rows), JSON as typed."""
        if name not in self._read:
            path = self.path(name)
            suffix = table_suffix(path.name)
            if suffix in (".json", ".jsonl", ".ndjson"):
                table = records.read(path)
            else:
                try:
                    table = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=str, nrows=HEAD)
                except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
                    raise KitError(f"{name}: cannot read it as a table ({' '.join(str(e).split())})") from None
            if table.empty:
                raise KitError(f"{name}: no rows; is it the competition's file?")
            self._read[name] = table
        return self._read[name]

    def typed(self, name: str) -> pd.DataFrame:
        """The table [data] `name` names, its first HEAD rows typed as the kernel reads them (numbers as numbers)."""
        path = self.path(name)
        suffix = table_suffix(path.name)
        if suffix not in (".csv", ".tsv"):
            return self.read(name)
        try:
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", nrows=HEAD, low_memory=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
            raise KitError(f"{name}: cannot read it as a table ({' '.join(str(e).split())})") from None

    def folder(self, name: str) -> Folder | None:
        """The image folder [data] `name` names: a top-level one, or a folder deeper in the data ("nybg2020/train"),
        or in an archive ("train/images" in train.zip, as kit.data.archives finds it)."""
        if name in self.folders:
            return self.folders[name]
        head, _, rest = name.partition("/")
        top = self.folders.get(head)
        if top is not None and top.archived and rest:
            files = tuple(f[len(rest) + 1:] for f in top.files if f.startswith(f"{rest}/"))
            return Folder(name, f"{top.source}'s {rest}/", files, archived=True) if files else None
        path = self.data_dir / name
        if name and path.is_dir():
            files = tuple(_images_under(path))
            return Folder(name, f"{name}/", files) if files else None
        return None

    def holds(self, folder: Folder, relative: str) -> bool:
        """Whether `folder` holds the file `relative` (a path under it)."""
        if folder.archived:
            return relative in folder.members
        return (self.data_dir / folder.name / relative).is_file()


def _images_under(root: Path) -> Iterator[str]:
    """The image files under `root`, as paths relative to it, in sorted order; at most LISTED."""
    count = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not archives.junk(d))
        for name in sorted(files):
            if is_image(name) and not name.startswith("."):
                yield Path(top, name).relative_to(root).as_posix()
                count += 1
                if count >= LISTED:
                    return


def _by_split(name: str, files: tuple[str, ...]) -> list[Folder]:
    """The image folder `name` holding `files` (sounds: the one folder inside it that holds them all, "test/audio"); or,
    where its images all lie in a training and a test folder
    (siim-isic's jpeg/train/ and jpeg/test/, beside DICOM folders named train/ and test/), each of its folders,
    named as [data] names them ("jpeg/train")."""
    if not files:
        return []
    # sounds in the one folder inside it (speech commands' train/audio/ and test/audio/): that folder (images so
    # nested are a COCO file's, whose paths name the inner folder: herbarium's test_images/000/)
    while is_sound(files[0]) and all("/" in f for f in files) and len({f.split("/")[0] for f in files}) == 1:
        top = files[0].split("/")[0]
        name, files = f"{name}/{top}", tuple(f[len(top) + 1:] for f in files)
    tops = sorted({f.split("/")[0] for f in files if "/" in f})
    if any("/" not in f for f in files) or not any("train" in t.lower() for t in tops) or \
            not any("test" in t.lower() for t in tops):
        return [Folder(name, f"{name}/", files)]
    return [Folder(f"{name}/{top}", f"{name}/{top}/", tuple(f[len(top) + 1:] for f in files if f.startswith(f"{top}/")))
            for top in tops]


def _json_below(data_dir: Path) -> Iterator[Path]:
    """JSON files one to DEPTH folders below the data folder, not among images (herbarium's metadata.json)."""
    for top, dirs, files in os.walk(data_dir):
        depth = len(Path(top).relative_to(data_dir).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not archives.junk(d)) if depth < DEPTH else []
        if depth == 0:
            continue
        for name in sorted(files):
            if name.lower().endswith(".json"):
                yield Path(top, name)
        if any(is_image(f) for f in files[:50]):  # a folder of images: its sub-folders hold more images, not labels
            dirs[:] = []


def _image_records(value: Any) -> bool:
    """Image records with file names: a COCO file's images[] without annotations (a test file, inaturalist's
    and herbarium's), or a plain list of them (herbarium-2022's test_metadata.json)."""
    images = value.get("images") if isinstance(value, dict) else value
    return (isinstance(images, list) and bool(images) and isinstance(images[0], dict) and "file_name" in images[0]
            and ("id" in images[0] or "image_id" in images[0]))
