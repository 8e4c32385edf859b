"""`kit init`'s reading of a segmentation competition (the segmentation template): the sample asks for masks,
as run-length codes (one row per test image, TGS's `id,rle_mask`; or one per image and class, Severstal's
`<image>.jpg_<class>`) or as pixels melted into rows (`<image>_<row>_<col>,value`, denoising-dirty-documents'),
and the training masks are run-length codes in a table or image files beside the training images (a folder of
masks named as the images, or with a suffix of their own: `<id>_mask.gif`).

A sample of codes alone is not enough: "1 2" may be two labels, best first. The training side must hold masks
(a table of codes, or a folder of mask files) before the guess is made; otherwise the cnn reading goes on.
The folders are read as kit.data.masks reads them: flat, one file a name.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

import pandas as pd

from kit.build import guesses
from kit.build.guesses import HEAD_IDS, Guess, Line, columns, text
from kit.build.survey import Folder, Survey
from kit.data.masks import PIXEL, names_files

CODE = re.compile(r"\d+ \d+( \d+ \d+)*")  # start/length pairs
SUBFOLDERS = 8  # a folder with more sub-folders than this holds records (a folder each), not images and masks
MASK_WORDS = ("mask", "clean", "label", "target", "annotation", "seg", "gt")  # a folder of masks is named so


def segmentation_guess(survey: Survey, sample_file: str, names: list[str]) -> Guess | None:
    """The segmentation template's reading of the data, or None where the sample asks for no masks or the
    training side holds none."""
    sample = survey.read(sample_file)
    flat: list[Folder] | None = None
    for key in (c for c in columns(sample) if guesses.unique(sample[c])):
        targets = [c for c in columns(sample) if c != key]
        if len(targets) != 1 or not _asks_for_masks(sample, key, targets[0]):
            continue
        flat = _flat_folders(survey) if flat is None else flat  # walked once, and only for a sample that may ask for masks
        for folder in sorted(flat, key=lambda f: ("test" not in f.name.lower(), f.name)):
            found = _output(survey, folder, sample, key, targets[0])
            if found is not None:
                return _training(survey, sample_file, names, flat, key, targets[0], folder, *found)
    return None


def _asks_for_masks(sample: pd.DataFrame, key: str, target: str) -> bool:
    """The sample's target looks like what a mask layout writes: codes (or blanks), file names, or a value a pixel."""
    column = sample[target]
    if _codes_or_files(column):
        return True
    ids = text(sample[key].head(HEAD_IDS))
    return bool(ids.str.fullmatch(PIXEL.pattern).all()) and guesses.numbers(column) is not None


def _codes_or_files(column: pd.Series) -> bool:
    """Cells a row per image writes: run-length codes (blank ones too) or mask file names."""
    return codes(column) or bool(column.isna().all()) or names_files(column)


def _flat_folders(survey: Survey) -> list[Folder]:
    """Folders holding image files directly: the top-level ones, and the folders one below (train/images, or
    images/ in train.zip), where there are a few of them (not contrails' folder per record)."""
    out = [f for f in survey.folders.values() if f.flat]
    for top in survey.folders.values():
        subs = sorted({p.split("/")[0] for p in top.files if "/" in p})
        for sub in subs if len(subs) <= SUBFOLDERS else []:
            found = survey.folder(f"{top.name}/{sub}")
            if found is not None and found.flat:
                out.append(found)
    return out


def codes(values: pd.Series) -> bool:
    """Cells that are run-length codes or empty, at least one filled."""
    filled = text(values.dropna()).str.strip()
    filled = filled[filled != ""]
    return not filled.empty and bool(filled.str.fullmatch(CODE.pattern).all())


def ext_of(survey: Survey, folder: Folder, ids: list[str]) -> str | None:
    """The extension that makes each of `ids` a file of `folder` ("" where the ids end in theirs), or None."""
    for ext in dict.fromkeys(["", folder.suffix, *(PurePosixPath(f).suffix for f in folder.flat[:1000])]):
        if ids and all(survey.holds(folder, f"{i}{ext}") for i in ids):
            return ext
    return None


def _output(survey: Survey, folder: Folder, sample: pd.DataFrame, key: str, target: str) -> tuple[str, str] | None:
    """("image" | "files" | "class" | "pixels", image_ext) where the sample's rows name `folder`'s images as kit.data.masks
    reads them, and its target column is what that layout writes."""
    ids = text(sample[key].head(HEAD_IDS)).tolist()
    files = names_files(sample[target])
    if _codes_or_files(sample[target]):
        ext = ext_of(survey, folder, ids)
        if ext is not None:
            return "files" if files else "image", ext
        if files:
            return None
        images = [i.rsplit("_", 1)[0] for i in ids if "_" in i]
        ext = ext_of(survey, folder, list(dict.fromkeys(images))) if len(images) == len(ids) else None
        if ext is not None:
            return "class", ext
        return None
    matches = [PIXEL.fullmatch(i) for i in ids]
    if all(matches) and guesses.numbers(sample[target]) is not None:
        ext = ext_of(survey, folder, list(dict.fromkeys(m.group(1) for m in matches)))
        if ext is not None:
            return "pixels", ext
    return None


def _training(survey: Survey, sample_file: str, names: list[str], flat: list[Folder], key: str, target: str,
              test: Folder, layout: str, ext: str) -> Guess | None:
    """The training side: a table of run-length codes and the folder of its images, or a folder of mask files
    beside the training images (which takes the place of the codes where both exist, as TGS ships both)."""
    others = sorted((f for f in flat if f is not test), key=lambda f: (_named_for_masks(f), f.name))
    how = {"image": "a run-length code per test image", "files": "a mask file per test image, as the sample names it",
           "class": "a run-length code per test image and class",
           "pixels": "a value per test pixel (<image>_<row>_<col>): image to image"}[layout]
    cannot: list[str] = []
    masks_lines: list[Line] = []
    table = _code_table(survey, names, key, target) if layout != "pixels" else None
    if table is not None:
        name, column = table
        ids = text(survey.read(name)[key].head(HEAD_IDS)).tolist()
        image_ids = ids if layout in ("image", "files") else list(dict.fromkeys(i.rsplit("_", 1)[0] for i in ids))
        images = next((f for f in others if ext_of(survey, f, image_ids) == ext), None)
        if images is None:
            return None
        train = Line("train", name, f"its '{column}' holds the training masks' run-length codes")
        target_line = Line("target_column", column, "the training masks' run-length codes")
        found = _mask_folder(survey, [f for f in others if f is not images], image_ids, ext) if layout != "class" else None
        if found is not None:
            masks_lines.append(Line("train_masks", found[0].name, f"{found[0].source} holds a mask file per training "
                                                                  "image (read instead of the codes)"))
            if found[1] != ext:
                masks_lines.append(Line("mask_ext", found[1], f"the masks are <id>{found[1]}"))
    else:
        pair = _pair(survey, others, ext)
        if pair is None:
            return None
        images, (masks, mask_ext), why, sure = pair
        if not sure and _labels(survey, names, key, target):  # train/ and its resized copy train_256/, labelled
            return None
        train = Line("train", "", f"no table of codes: the images of {images.source} that have a mask")
        target_line = Line("target_column", target, "the sample's")
        masks_lines.append(Line("train_masks", masks.name, why))
        if mask_ext != ext:
            masks_lines.append(Line("mask_ext", mask_ext, f"the masks are <id>{mask_ext}"))
        if not sure:
            cannot.append(f"which of {images.source} and {masks.source} holds the masks (their files share names): "
                          f"{masks.source} is taken; swap train_images and train_masks if not")
    lines = [train, Line("sample_submission", sample_file, "the sample submission, by its name"),
             Line("id_column", key, f"the sample's ids name the images in {test.source}"), target_line,
             Line("train_images", images.name, f"{images.source} holds the training images"), *masks_lines,
             Line("test_images", test.name, f"{test.source} holds the sample's images"),
             Line("image_ext", ext, "the ids end in their extension" if not ext else f"the files are <id>{ext}")]
    if layout in ("image", "class") or table is not None:
        cannot.append("the codes' pixel order: kit counts down each column, then the next (TGS, Severstal, HuBMAP and "
                      "MLE-bench's graders); set rle_order = \"row\" where the competition counts along each row (Carvana)")
    written = "mask files" if layout == "files" else "masks written as run-length codes"
    metric = ("rmse", "one value per pixel, image to image", "mae") if layout == "pixels" else \
        ("dice", written, "map_iou (TGS's mean precision over IoU thresholds) or iou")
    return Guess("segmentation", f"{how}, and masks for the training images", lines, [target], None, cannot, metric)


def _code_table(survey: Survey, names: list[str], key: str, target: str) -> tuple[str, str] | None:
    """(table, column): a table with the sample's id column and a column of run-length codes (the sample's
    target's name first: hubmap's training codes are "encoding", its sample's "predicted")."""
    for name in sorted(names, key=lambda n: ("train" not in n.lower(), n)):
        frame = survey.read(name)
        if key not in frame.columns:
            continue
        candidates = [target] + [c for c in frame.columns if c not in (key, target)]
        column = next((c for c in candidates if c in frame.columns and codes(frame[c])), None)
        if column is not None:
            return name, column
    return None


def _labels(survey: Survey, names: list[str], key: str, target: str) -> bool:
    """A table holding labels for the sample's ids in the sample's target column, not codes (TGS's depths.csv,
    id and z, is not one)."""
    for name in names:
        frame = survey.read(name)
        if key in frame.columns and target in frame.columns and frame[target].notna().any() and not codes(frame[target]):
            return True
    return False


def _mask_folder(survey: Survey, folders: list[Folder], ids: list[str], ext: str) -> tuple[Folder, str] | None:
    """A folder holding a file for each of `ids`: (it, the masks' extension, "_mask.gif" where they carry a
    suffix of their own)."""
    for folder in sorted(folders, key=lambda f: (not _named_for_masks(f), f.name)):
        for mask_ext in _mask_exts(folder, ids[0], ext):
            if all(survey.holds(folder, f"{i}{mask_ext}") for i in ids):
                return folder, mask_ext
    return None


def _mask_exts(folder: Folder, first: str, ext: str) -> list[str]:
    """What may follow an id in `folder`'s file names: the image's extension first."""
    found = [f[len(first):] for f in folder.flat if f.startswith(first) and f[len(first):][:1] in (".", "_")]
    return list(dict.fromkeys([ext, *sorted(found, key=len)]))


def _named_for_masks(folder: Folder) -> bool:
    return any(w in PurePosixPath(folder.name).name.lower() for w in MASK_WORDS)


def _pair(survey: Survey, folders: list[Folder], ext: str) -> tuple[Folder, tuple[Folder, str], str, bool] | None:
    """Without a table: a folder of images and a folder of their masks, the files' names shared (train/ and
    train_cleaned/, train/ and train_masks/<id>_mask.gif); which is which from the folders' names, else from a
    suffix only the masks carry."""
    ranked = sorted(folders, key=lambda f: (_named_for_masks(f), len(f.name), f.name))
    for images in ranked:
        ids = [PurePosixPath(f).name[: -len(ext)] if ext else PurePosixPath(f).stem for f in images.flat[:HEAD_IDS]
               if not ext or f.endswith(ext)]
        if not ids:
            continue
        found = _mask_folder(survey, [f for f in folders if f is not images], ids, ext)
        if found is None:
            continue
        masks, mask_ext = found
        if _named_for_masks(masks) and not _named_for_masks(images):
            return images, found, f"{masks.source}'s name says masks; its files are named as {images.source}'s", True
        if mask_ext != ext:
            return images, found, f"{masks.source}'s files are {images.source}'s names + {mask_ext}", True
        return images, found, f"{masks.source}'s files are named as {images.source}'s", False
    return None
