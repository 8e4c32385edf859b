"""`kit init`'s readings of an image competition (the cnn template): where its images are ([data] layout) and
how a row names its image (image_ext, image_path), found by looking the sample submission's ids and the
training table's up in the image folders (kit.build.survey).

- coco: a COCO-style label file with annotations, and the test JSON's images;
- pixels, arrays: tables whose rows are images (pixel0..pixelN-1; lists of side x side numbers a channel);
- files: a training table naming each image by its id (or by a path made from its columns);
- folders: class folders (train/<class>/<file>, or several folders beside the test folder);
- names: one folder whose file names start with their class (cat.0.jpg).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pandas as pd

from kit.build import guesses
from kit.build.guesses import HEAD_IDS, Guess, Line, columns, text
from kit.build.survey import Folder, Survey, is_sound
from kit.data import coco
from kit.train.targets import BINARY_METRICS

FEATURES = 8  # as many number columns beside the images as make a table of features worth naming
PIXELS = 64  # at least this many numbered columns (an 8 x 8 image) make a row an image
CLASS_TOKEN = re.compile(r"^([A-Za-z][A-Za-z_-]*?)([._-])")  # "cat" and "." of cat.123.jpg
LAST_TOKEN = re.compile(r"_([^_.]+)(\.[^.]+)$")  # "1" and ".aif" of 20090328_000000_002s3ms_TRAIN0_1.aif


@dataclass(frozen=True)
class Address:
    """How a row names its image in a folder: `<id><ext>`, or a path made from its columns (`template`)."""

    ext: str = ""
    template: str = ""


def cnn_guess(survey: Survey, sample_file: str, metric: str) -> Guess | None:
    """The cnn template's reading of the data (the audio template's where the files are sounds), or None where it
    holds no images (or sounds) of the sample's rows."""
    names = guesses.data_tables(survey, sample_file)
    found = coco_guess(survey, sample_file) or files_guess(survey, sample_file, names, metric)
    if found is None:
        return rows_guess(survey, sample_file, names)
    folder = survey.folder(next((line.value for line in found.data if line.key == "test_images"), "") or "")
    if folder is not None and folder.files and is_sound(folder.files[0]):  # found as images are: the audio template's
        found.template = "audio"
        found.why = found.why.replace("image", "sound")
        return found
    numbers = _number_columns(survey, sample_file, names, found)
    if len(numbers) >= FEATURES:  # leaf-classification: 192 shape features beside images/<id>.jpg
        found.cannot.append(f"whether the model reads the images or the tables' {len(numbers)} number columns "
                            f"({numbers[0]} ... {numbers[-1]}): the images the ids name are taken, as a cnn learns "
                            "from them; --template tabular reads the columns instead")
    return found


def _number_columns(survey: Survey, sample_file: str, names: list[str], found: Guess) -> list[str]:
    """The columns of numbers that the test table and the training one both hold, but ids and targets."""
    test = guesses.test_table(survey, names, survey.read(sample_file))
    train = next((line.value for line in found.data if line.key == "train"), "")
    if not test or train not in survey.tables or test == train:
        return []
    test_frame, train_frame = survey.read(test), survey.read(train)
    skip = {line.value for line in found.data if line.key in ("id_column", "target_column")}
    return [c for c in test_frame.columns if c in train_frame.columns and c not in skip
            and guesses.numbers(test_frame[c]) is not None]


def coco_guess(survey: Survey, sample_file: str) -> Guess | None:
    """A COCO-style training file (images, annotations, categories) and the test JSON's images."""
    annotated = [n for n, v in survey.labels.items() if isinstance(v, dict) and v.get("annotations")]
    if not annotated:
        return None
    train = min(annotated, key=lambda n: ("train" not in n.lower(), "val" in n.lower(), n))
    tests = [n for n in survey.labels if n not in annotated]
    test = min(tests, key=lambda n: ("test" not in n.lower(), n)) if tests else ""
    sample = survey.read(sample_file)
    test_images = coco.image_table(survey.labels[test], Path(test)) if test else None
    key = ""
    if test_images is not None:
        ids = set(test_images["id"])
        key = next((c for c in columns(sample)
                    if guesses.unique(sample[c]) and text(sample[c].head(HEAD_IDS)).isin(ids).all()), "")
    key = key or next((c for c in columns(sample) if guesses.unique(sample[c])), columns(sample)[0])
    targets = [c for c in columns(sample) if c != key]
    train_images = _coco_folder(survey, train, coco.image_table(survey.labels[train], Path(train))["file_name"], "train")
    lines = [Line("layout", "coco", f"{train} is a COCO-style label file (images, annotations, categories)"),
             Line("train", train, "the COCO file with annotations"),
             Line("sample_submission", sample_file, "the sample submission, by its name"),
             Line("id_column", key, "the sample's ids are the test images'" if test else "the sample's ids"),
             Line("target_column", targets[0] if targets else "category_id", "the sample's")]
    cannot = []
    if test and test_images is not None:
        lines.insert(2, Line("test", test, "the test images' records"))
        folder = _coco_folder(survey, test, test_images["file_name"], "test")
        lines.append(Line("train_images", train_images, "where the training file_names lie"))
        lines.append(Line("test_images", folder, "where the test file_names lie"))
    else:
        lines.append(Line("train_images", train_images, "where the training file_names lie"))
        cannot.append("where the test images are (no test JSON): set test_images and image_ext")
    value = survey.labels[train]
    labels = pd.Series([a.get("category_id") for a in value["annotations"][:5000]], name="category_id")
    categories = value.get("categories")
    return Guess("cnn", f"a COCO-style label file ({train})", lines, targets, labels, cannot,
                 classes=len(categories) if isinstance(categories, list) else 0)


def _coco_folder(survey: Survey, json_name: str, file_names: pd.Series, role: str) -> str:
    """The folder a COCO file's file_names lie under: the JSON's own folder (herbarium's nybg2020/train), the
    folder the names start with (inaturalist's train_val2019/, maybe archived), or a top-level folder."""
    head = text(file_names.head(HEAD_IDS // 5)).tolist()
    candidates = []
    if "/" in json_name:
        candidates.append(PurePosixPath(json_name).parent.as_posix())
    candidates.append(head[0].split("/")[0] if "/" in head[0] else "")
    candidates += sorted(survey.folders, key=lambda n: (role not in n.lower(), n.count("/"), n))
    for name in dict.fromkeys(c for c in candidates if c):
        folder = survey.folder(name)
        if folder is None:
            continue
        prefix = f"{PurePosixPath(name).name}/"
        if all(survey.holds(folder, f) or (f.startswith(prefix) and survey.holds(folder, f[len(prefix):])) for f in head):
            return name
    return candidates[0] or role


def rows_guess(survey: Survey, sample_file: str, names: list[str]) -> Guess | None:
    """Tables whose rows are images: numbered pixel columns (digit-recognizer), or per-row lists of side x side
    numbers, a channel each (statoil's band_1, band_2)."""
    sample = survey.read(sample_file)
    test = guesses.test_table(survey, names, sample)
    train = guesses.train_table(survey, names, test)
    if not train or not test:
        return None
    train_frame, test_frame = survey.read(train), survey.read(test)
    pixels = _pixel_columns(train_frame)
    arrays = [c for c in _array_columns(train_frame) if c in test_frame.columns]
    if not pixels and not arrays:
        return None
    key = guesses.id_of(sample, test_frame)
    matched = f"the sample's ids are {test}'s" if key else f"the sample's; {test}'s row k is the sample's row k"
    key = key or next((c for c in columns(sample) if guesses.unique(sample[c])), "")
    targets = [c for c in columns(sample) if c != key]
    cannot: list[str] = []
    labelled = train_frame.drop(columns=pixels)
    target = guesses.target_lines(labelled, targets, key, test_frame.drop(columns=pixels, errors="ignore"), cannot)
    if pixels:
        side = math.isqrt(len(pixels))
        lines = [Line("layout", "pixels", f"{len(pixels)} pixel columns ({pixels[0]} ... {pixels[-1]}): {side} x {side} "
                                          "images, one a row")]
    else:
        lines = [Line("layout", "arrays", f"{', '.join(arrays)} hold a list of side x side numbers a row: an image channel "
                                          "each")]
    lines += [Line("train", train, "the training rows"), Line("test", test, "the test rows"),
              Line("sample_submission", sample_file, "the sample submission, by its name"), Line("id_column", key, matched),
              *target]
    if arrays:
        lines.append(Line("array_columns", arrays, "a list of numbers a row, the same square length in each"))
    return Guess("cnn", "images stored as table rows", lines, targets, guesses.labels_of(labelled, targets, lines), cannot)


def _pixel_columns(frame: pd.DataFrame) -> list[str]:
    """The largest set of numbered columns (pixel0 ... pixel783) that makes a square image."""
    groups: dict[str, list[str]] = {}
    for c in frame.columns:
        match = re.fullmatch(r"(\D*?)(\d+)", str(c))
        if match:
            groups.setdefault(match.group(1), []).append(c)
    best = max(groups.values(), key=len, default=[])
    side = math.isqrt(len(best))
    if len(best) < PIXELS or side * side != len(best):
        return []
    head = frame[best].head(20)
    return best if head.apply(pd.to_numeric, errors="coerce").notna().all().all() else []


def _array_columns(frame: pd.DataFrame) -> list[str]:
    """Columns whose cells are lists of numbers of one square length (an image channel a cell)."""
    out = []
    for c in frame.columns:
        cells = frame[c].head(20)
        if not cells.map(lambda v: isinstance(v, list)).all():
            continue
        lengths = {len(v) for v in cells}
        n = lengths.pop() if len(lengths) == 1 else 0
        if n >= PIXELS and math.isqrt(n) ** 2 == n:
            out.append(c)
    return out


def files_guess(survey: Survey, sample_file: str, names: list[str], metric: str) -> Guess | None:
    """Image files named by the sample's ids: with a training table naming its images (files), or class
    folders (folders), or file names that start with their class (names)."""
    sample = survey.read(sample_file)
    found = _test_folder(survey, sample)
    if found is None:
        return None
    key, test_folder, test_address = found
    targets = [c for c in columns(sample) if c != key]
    trains = sorted((n for n in names if "test" not in n.lower()), key=lambda n: (key not in survey.read(n).columns,
                                                                                 "train" not in n.lower(), n))
    for train in trains:
        frame = survey.read(train)
        named = _named_by(survey, frame, key, test_folder)
        if named is None:
            continue
        folder, column, where = named
        test = next((n for n in names if "test" in n.lower()), "")
        cannot: list[str] = []
        target = guesses.target_lines(frame, targets, column, survey.read(test) if test else None, cannot)
        own = column == key
        lines = [Line("layout", "files", f"{train} names each training image by its '{column}'"),
                 Line("train", train, "the table of training ids and labels"),
                 Line("sample_submission", sample_file, "the sample submission, by its name"),
                 Line("id_column", key, f"the sample's ids name the files in {test_folder.source}" if own else
                      f"the sample's ids name the files in {test_folder.source}; {train} lacks it: its rows are numbered"),
                 *target,
                 Line("train_images", folder.name, f"{folder.source} holds the training table's images"),
                 Line("test_images", test_folder.name, f"{test_folder.source} holds the sample's ids' images")]
        lines += _addressing(key, where if own else Address("", where.template or f"{{{column}}}{where.ext}"), test_address)
        return Guess("cnn", f"images named by the ids ({test_folder.source}, {folder.source})", lines, targets,
                     guesses.labels_of(frame, targets, lines), cannot)
    return _folders_guess(survey, sample_file, key, test_folder, test_address, targets, metric)


def _named_by(survey: Survey, frame: pd.DataFrame, key: str, test: Folder) -> tuple[Folder, str, Address] | None:
    """The folder of a training table's images, the column naming them and how: the sample's id column where the
    table has it, else the column whose values are the files' paths (iwildcam-2019's file_name) or ids (its "id"
    where the sample says "Id")."""
    rows = frame[frame[key].notna()] if key in frame.columns else frame
    folders = sorted(survey.folders.values(), key=lambda f: (f is test, "train" not in f.name.lower(), f.name.count("/"),
                                                              f.name))
    named = [key] if key in frame.columns else [c for c in frame.columns if guesses.unique(frame[c])]
    for folder in folders:
        found = [(c, address(survey, folder, rows, c)) for c in named]
        found = [(c, a) for c, a in found if a is not None]
        if found:
            column, where = min(found, key=lambda f: (bool(f[1].ext or f[1].template), named.index(f[0])))
            return folder, column, where
    return None


def _addressing(key: str, train: Address, test: Address) -> list[Line]:
    """image_ext, image_path and test_image_path from how each split names its images."""
    if not train.template and not test.template and train.ext == test.ext:
        why = "the ids end in their extension" if not train.ext else f"the files are <id>{train.ext}"
        return [Line("image_ext", train.ext, why)]
    lines = []
    if train.template:
        lines.append(Line("image_path", train.template, "where each training image lies, from its row's columns"))
    else:
        lines.append(Line("image_ext", train.ext, f"the training files are <id>{train.ext}"))
    made = test.template or f"{{{key}}}{test.ext}"
    if made != train.template:
        lines.append(Line("test_image_path", made, "where each test image lies, from the sample's columns"))
    return lines


def _folders_guess(survey: Survey, sample_file: str, key: str, test_folder: Folder, test_address: Address,
                   targets: list[str], metric: str) -> Guess | None:
    """No table of training labels: the class is a folder (train/<class>/<file>, or folders beside the test
    folder) or the start of a file's name."""
    others = sorted((f for f in survey.folders.values() if f is not test_folder),
                    key=lambda f: ("train" not in f.name.lower(), f.name.count("/"), f.name))
    common = [Line("sample_submission", sample_file, "the sample submission, by its name"),
              Line("id_column", key, f"the sample's ids name the files in {test_folder.source}"),
              Line("target_column", targets[0] if targets else "label", "the sample's")]
    ext = [Line("image_ext", test_address.ext, "the ids end in their extension" if not test_address.ext else
                f"the files are <id>{test_address.ext}")]
    test_line = Line("test_images", test_folder.name, f"{test_folder.source} holds the sample's ids' images")
    for folder in others:
        classes = _classes(folder)
        if classes:
            lines = [Line("layout", "folders", f"{folder.source} holds one folder of images a class ({', '.join(classes[:3])}"
                                                "...); no table of labels"), *common,
                     Line("train_images", folder.name, "its sub-folders are the classes"), test_line, *ext]
            return Guess("cnn", f"class folders in {folder.source}", lines, targets, pd.Series(classes))
    for folder in others:
        pattern, tokens = _label_pattern(folder)
        if pattern:
            lines = [Line("layout", "names",
                          f"{folder.source}'s file names start (or end) with their class ({', '.join(tokens[:3])})"),
                     *common, Line("train_images", folder.name, "the training images"), test_line, *ext,
                     Line("label_pattern", pattern, "the class at the start (or end) of each file name")]
            return Guess("cnn", f"labels in file names ({folder.source})", lines, targets, pd.Series(tokens))
    flat = [f for f in others if f.flat and len(f.flat) == len(f.files)]
    if len(flat) < 2:
        return None
    cannot = []
    binary = metric in BINARY_METRICS if metric else bool(targets) and _numbers(survey.read(sample_file)[targets[0]])
    chosen = [f.name for f in flat]
    if binary and len(flat) > 2:  # ALASKA2: Cover against the three ways of hiding a message
        chosen = [f"{flat[0].name}=0", *(f"{f.name}=1" for f in flat[1:])]
        cannot.append(f"which class folders are which class: {flat[0].name} is taken as class 0 and the others as 1 "
                      "(a binary target); fix class_folders")
    lines = [Line("layout", "folders", f"{len(flat)} folders of images beside {test_folder.source}: a class each"), *common,
             Line("train_images", "", "the class folders sit in the data folder"), test_line, *ext,
             Line("class_folders", chosen, "the folders of images but the test folder")]
    return Guess("cnn", "class folders beside the test folder", lines, targets,
                 pd.Series([c.split("=")[-1] for c in chosen]), cannot)


def _numbers(values: pd.Series) -> bool:
    return bool(pd.to_numeric(values.dropna(), errors="coerce").notna().all())


def _classes(folder: Folder) -> list[str]:
    """The class folders of `folder` (its files in <class>/<file>), or [] where it is not laid out so."""
    nested = [f.split("/") for f in folder.files if f.count("/") == 1]
    if len(nested) < 0.9 * len(folder.files):
        return []
    classes = sorted({parts[0] for parts in nested})
    return classes if len(classes) >= 2 else []


def _label_pattern(folder: Folder) -> tuple[str, list[str]]:
    """A regular expression whose group is the class that starts each file name ('^(cat|dog)\\.'), or ends it
    before the extension ('_(0|1)\\.aif$'), and the classes; ("", []) where no few classes start or end the names."""
    if not folder.flat or len(folder.flat) < len(folder.files):
        return "", []
    matches = [CLASS_TOKEN.match(PurePosixPath(f).name) for f in folder.flat]
    tokens = sorted({m.group(1) for m in matches}) if matches and None not in matches else []
    if matches and None not in matches and 2 <= len(tokens) <= 100 and len(tokens) <= len(matches) / 2:
        separators = {m.group(2) for m in matches}
        separator = re.escape(separators.pop()) if len(separators) == 1 else "[._-]"
        return f"^({'|'.join(re.escape(t) for t in tokens)}){separator}", tokens
    ends = [LAST_TOKEN.search(PurePosixPath(f).name) for f in folder.flat]  # whale redux's ..._TRAIN<k>_<0|1>.aif
    if not ends or None in ends or len({m.group(2) for m in ends}) != 1:
        return "", []
    tokens = sorted({m.group(1) for m in ends})
    if not 2 <= len(tokens) <= 10 or len(tokens) > len(ends) / 4:
        return "", []
    return f"_({'|'.join(re.escape(t) for t in tokens)}){re.escape(ends[0].group(2))}$", tokens


def _test_folder(survey: Survey, sample: pd.DataFrame) -> tuple[str, Folder, Address] | None:
    """The sample's id column and the folder holding its ids' images (a folder named "test" first)."""
    folders = sorted(survey.folders.values(), key=lambda f: ("test" not in f.name.lower(), f.name.count("/"), f.name))
    for key in (c for c in columns(sample) if guesses.unique(sample[c])):
        for folder in folders:
            found = address(survey, folder, sample, key)
            if found is not None:
                return key, folder, found
    return None


def address(survey: Survey, folder: Folder, rows: pd.DataFrame, key: str) -> Address | None:
    """How `rows` name their images in `folder`, by their `key` column: <id>, <id><ext>, or a path template made
    from their columns where the files lie deeper ("{chain}/{image}", "{id[0]}/{id}.npy"); None where the
    first rows' images are not there."""
    head = rows.head(HEAD_IDS // 5)
    ids = text(head[key]).tolist()
    if not ids or not folder.files:
        return None
    if all(survey.holds(folder, i) for i in ids):
        return Address("")
    suffixes = dict.fromkeys([folder.suffix, *(PurePosixPath(f).suffix for f in folder.files[:1000])])
    for suffix in suffixes:
        if suffix and all(survey.holds(folder, f"{i}{suffix}") for i in ids):
            return Address(suffix)
    paths = [folder.by_name.get(i) for i in ids]
    if any(p is None for p in paths):
        return None
    template = _template(paths, head, key)
    return Address("", template) if template else None


def _template(paths: list[str], rows: pd.DataFrame, key: str) -> str:
    """A str.format template giving each row's path from its columns, or "" where none does."""
    for column in [c for c in rows.columns if c != key]:
        if text(rows[column]).tolist() == paths:
            return f"{{{column}}}"
    parts = [p.split("/") for p in paths]
    if len({len(p) for p in parts}) != 1:
        return ""
    ids = text(rows[key]).tolist()
    out = []
    for j in range(len(parts[0]) - 1):
        field = _field([p[j] for p in parts], rows, key, ids)
        if not field:
            return ""
        out.append(field)
    names = [p[-1] for p in parts]
    suffix = PurePosixPath(names[0]).suffix
    if names == ids:
        out.append(f"{{{key}}}")
    elif all(n == f"{i}{suffix}" for n, i in zip(names, ids)):
        out.append(f"{{{key}}}{suffix}")
    else:
        return ""
    return "/".join(out)


def _field(values: list[str], rows: pd.DataFrame, key: str, ids: list[str]) -> str:
    """The template field that gives `values` for the rows: a column ("{chain}"), or a character of the id
    ("{id[0]}")."""
    for column in [c for c in rows.columns if c != key]:
        if text(rows[column]).tolist() == values:
            return f"{{{column}}}"
    for k in range(3):
        if all(len(i) > k and i[k] == v for i, v in zip(ids, values)):
            return f"{{{key}[{k}]}}"
    return ""
