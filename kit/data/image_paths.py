"""Which file is each row's image, and labels read from paths.

- Path templates: a row's image path made from its columns with str.format ("{chain}/{image}" for hotel-id's
  train_images/<chain>/<image>, "{id[0]}/{id}.npy" for seti's train/<first character>/<id>.npy,
  "{file_name}" for a column that holds the path).
- Paths given relative to the data folder (inaturalist's COCO file names "train_val2019/Plants/400/x.jpg",
  whose folder may come as train_val2019.tar.gz) are found under the images folder too.
- Labels from paths: class folders (all but the test folder, or chosen ones mapped to classes: alaska2's
  Cover vs JMiPOD/JUNIWARD/UERD), or a regular expression's first group found in the file's path
  (dogs-vs-cats' cat.123.jpg).
"""
from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from kit.data import archives
from kit.errors import KitError

SAMPLE_ROWS = 20  # paths looked up before decoding; none there means a wrong pattern or folder, not bad files
PATH = "kit:path"  # a training table's column holding each image's path (the layouts that make their table)


def template_fields(template: str, key: str) -> list[str]:
    """The columns `template` names, in order: "{id[0]}/{id}.npy" names id."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise KitError(f"[data] {key} = '{template}': {e}; write columns in braces, such as \"{{chain}}/{{image}}\"") from None
    fields = []
    for _, field, _, _ in parsed:
        if field is None:
            continue
        root = re.split(r"[.\[]", field, maxsplit=1)[0]
        if not root or root.isdigit():
            raise KitError(f"[data] {key} = '{template}': '{{{field}}}' names no column; name columns in the braces, "
                           "such as \"{chain}/{image}\"")
        fields.append(root)
    return list(dict.fromkeys(fields))


def formatted(template: str, table: pd.DataFrame, key: str, where: str) -> list[str]:
    """`template` filled in with each row's columns (as text, so "{id[0]}" is the id's first character)."""
    fields = template_fields(template, key)
    missing = [f for f in fields if f not in table.columns]
    if missing:
        listed = ", ".join(map(str, table.columns[:12])) + (", ..." if len(table.columns) > 12 else "")
        raise KitError(f"[data] {key} = '{template}' names column '{missing[0]}', which {where} lacks (it has: {listed}); "
                       f"fix {key}")
    values = {f: table[f].astype(str).tolist() for f in fields}
    out = []
    for i in range(len(table)):
        try:
            out.append(template.format_map({f: values[f][i] for f in fields}))
        except (IndexError, KeyError, ValueError, AttributeError, TypeError) as e:
            raise KitError(f"[data] {key} = '{template}' fails on {where} row {i + 1} "
                           f"({', '.join(f'{f}={values[f][i]!r}' for f in fields)}): {e}") from None
    return out


def under(folder: Path, name: str, paths: Sequence[str]) -> list[str]:
    """`paths` as they lie under `folder`: as given, or without a leading folder named as `name`'s last
    part where they are given from the data folder and the folder is there (or came from its archive)."""
    prefix = f"{Path(name).name}/" if name else ""
    head = list(paths[:SAMPLE_ROWS])
    if not prefix or not head or any((folder / p).exists() for p in head):
        return list(paths)
    if any(p.startswith(prefix) and (folder / p[len(prefix):]).exists() for p in head):
        return [p[len(prefix):] if p.startswith(prefix) else p for p in paths]
    return list(paths)


def check_paths(folder: Path, name: str, paths: Sequence[str], where: str, keys: str) -> None:
    """A KitError when none of the first rows' images exist: the path pattern or the folder is wrong."""
    head = list(paths[:SAMPLE_ROWS])
    if not head or any((folder / p).is_file() for p in head):
        return
    with os.scandir(folder) as it:
        held = sorted(e.name for _, e in zip(range(2000), it))[:3]
    holds = f"it holds {', '.join(held)}, ..." if held else "it is empty"
    raise KitError(f"no {name or '.'}/{head[0]} (nor any of the first {len(head)} images of {where}): the paths match no "
                   f"file ({holds}); check {keys} in [data]")


def class_folders(root: Path, name: str, chosen: Sequence[str], test: Path | None, ext: str,
                  log: Callable[[str], None] = print) -> pd.DataFrame:
    """Class folders as a table of (folder/file, class, path): `chosen` as "Folder" or "Folder=class" (each may
    come as an archive), else every folder in `root` but the test folder."""
    pairs = [(c.split("=", 1)[0].strip(), c.split("=", 1)[1].strip() if "=" in c else c.strip()) for c in chosen]
    if chosen:
        bad = next((c for c, (f, k) in zip(chosen, pairs) if not f or not k), None)
        if bad is not None:
            raise KitError(f"[data] class_folders: '{bad}' is not a folder or folder=class (such as \"Cover=0\")")
    else:
        skip = test.resolve() if test is not None and test.exists() else None
        pairs = [(e.name, e.name) for e in sorted(os.scandir(root), key=lambda e: e.name)
                 if e.is_dir() and not e.name.startswith(".") and not archives.junk(e.name) and Path(e.path).resolve() != skip]
    if not pairs:
        raise KitError(f'{name or "."}/ holds no class folders; layout = "folders" reads {name or "."}/<class>/<file>: '
                       "check train_images and layout in [data]")
    rows = []
    for folder, label in pairs:
        where = archives.find_folder(root, folder, "class_folders", log=log)
        if test is not None and test.exists() and where.resolve() == test.resolve():
            raise KitError(f"[data] class_folders names '{folder}', the test folder (test_images); test images have no class")
        found = sorted(e.name for e in os.scandir(where) if e.is_file() and not e.name.startswith(".") and e.name.endswith(ext))
        if not found:
            ending = f" ending in {ext}" if ext else ""
            raise KitError(f"{name + '/' if name else ''}{folder}/: a class folder with no images{ending}; "
                           "add its images or remove the folder")
        rows += [(f"{folder}/{f}", label, str(where / f)) for f in found]
    return pd.DataFrame(rows, columns=["id", "label", PATH])


def named_files(root: Path, name: str, pattern: str, test: Path | None, ext: str) -> pd.DataFrame:
    """The images under `root` (recursively, the test folder left out) as a table of (path, class, path),
    the class being `pattern`'s first group found in the path ("cat" from cat.123.jpg by "^(cat|dog)\\.")."""
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise KitError(f"[data] label_pattern = '{pattern}' is not a regular expression ({e})") from None
    if regex.groups < 1:
        raise KitError(f"[data] label_pattern = '{pattern}' has no group; put the class in parentheses, such as "
                       "\"^(cat|dog)\\.\"")
    skip = str(test.resolve()) if test is not None and test.exists() else None
    rows, seen = [], []
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and not archives.junk(d) and str(Path(top, d).resolve()) != skip)
        for f in sorted(files):
            if f.startswith(".") or not f.endswith(ext):
                continue
            relative = Path(top, f).relative_to(root).as_posix()
            seen.append(relative)
            match = regex.search(relative)
            if match and match.group(1):
                rows.append((relative, match.group(1), str(Path(top, f))))
    if not rows:
        such = f"such as {seen[0]}" if seen else f"no files{' ending in ' + ext if ext else ''}"
        raise KitError(f"[data] label_pattern = '{pattern}' matches no file in {name or '.'}/ ({len(seen)} files, {such}); "
                       "fix label_pattern or train_images")
    return pd.DataFrame(rows, columns=["id", "label", PATH])
