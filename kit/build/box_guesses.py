"""`kit init`'s reading of a detection competition (the detection template): the sample asks for boxes, a string of
`label confidence x_min y_min x_max y_max` groups a test image (vinbigdata's PredictionString, "14 1 0 0 1 1" for an
image without findings), and the training table holds boxes: a row a box (x_min, y_min, x_max, y_max columns, or x,
y, w, h), or a column of an image's boxes (siim-covid19's list of {x, y, width, height}). The images are files named
by the ids, DICOM or pictures, in a test folder and a training folder.

The metric follows the sample's labels: class numbers (vinbigdata's, scored by COCO's mAP at IoU 0.4) or class names
(siim-covid19's "opacity" and "none", PASCAL VOC's mAP at IoU 0.5); a description that names the IoU says which.
"""
from __future__ import annotations

import os

import pandas as pd

from kit.build import guesses
from kit.build.guesses import HEAD_IDS, Guess, Line, columns, numbers, text
from kit.build.mask_guesses import ext_of
from kit.build.survey import LISTED, Folder, Survey

GROUP = 6  # label, confidence and four corners a box
CORNERS = (("x_min", "y_min", "x_max", "y_max"), ("xmin", "ymin", "xmax", "ymax"), ("x", "y", "w", "h"),
           ("x", "y", "width", "height"))  # a row a box
BOX_LISTS = ("boxes", "bboxes", "bbox", "box")  # a column of an image's boxes (siim's JSON-like list of dicts)
# DICOM files, which the survey does not count as images (siim-isic's train/*.dcm beside its jpeg/train/*.jpg is
# a cnn layout of JPEGs), are looked for here: in the data folder's own folders
DICOM = (".dicom", ".dcm")


def asks_for_boxes(column: pd.Series) -> bool:
    """Cells of `label conf x_min y_min x_max y_max` groups (blank ones too), at least one filled."""
    filled = text(column.dropna()).str.strip()
    filled = filled[filled != ""]
    if filled.empty:
        return False
    for cell in filled.head(HEAD_IDS):
        tokens = cell.split()
        if len(tokens) % GROUP or any(_number(t) is None for i, t in enumerate(tokens) if i % GROUP):
            return False
    return True


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def detection_guess(survey: Survey, sample_file: str, names: list[str]) -> Guess | None:
    """The detection template's reading of the data, or None where the sample asks for no boxes, no training table
    holds boxes, or no folder holds the images the ids name."""
    sample = survey.read(sample_file)
    cols = columns(sample)
    key = next((c for c in cols if guesses.unique(sample[c])), "")
    targets = [c for c in cols if c != key]
    if not key or len(targets) != 1 or not asks_for_boxes(sample[targets[0]]):
        return None
    for name in names:
        table = survey.read(name)
        how = _boxes_in(table) if key in table.columns else ""
        if not how:
            continue
        found = _folders(survey, sample[key], table[key])
        if found is None:
            continue
        test, train, ext = found
        lines = [Line("train", name, how), Line("sample_submission", sample_file, f"{key},{targets[0]}: a string of boxes "
                                                "a test image"),
                 Line("id_column", key, f"the sample's ids, which {name} holds too"),
                 Line("target_column", targets[0], "the sample's boxes"),
                 Line("train_images", train.name, f"{train.source} holds the training ids' files"),
                 Line("test_images", test.name, f"{test.source} holds the sample's ids' files"),
                 Line("image_ext", ext, "the files' extension")]
        return Guess("detection", f"{sample_file} asks for boxes a test image and {name} holds boxes", lines, targets,
                     metric=_metric(sample[targets[0]]))
    return None


def _boxes_in(table: pd.DataFrame) -> str:
    """How `table` holds boxes ("" where it holds none): a row a box, or a column of an image's boxes."""
    have = set(table.columns)
    for corners in CORNERS:
        if set(corners) <= have and all(numbers(table[c].dropna()) is not None for c in corners):
            return f"a row a box ({', '.join(corners)})"
    for c in table.columns:
        if str(c).lower() in BOX_LISTS:
            return f"a list of boxes an image ({c})"
    return ""


def _folders(survey: Survey, test_ids: pd.Series, train_ids: pd.Series) -> tuple[Folder, Folder, str] | None:
    """(test folder, training folder, extension) where each holds its ids' files with one extension."""
    flat = [f for f in survey.folders.values() if f.flat] + _dicom_folders(survey)
    tests = text(test_ids.head(HEAD_IDS)).tolist()
    trains = list(dict.fromkeys(text(train_ids.dropna()).tolist()))[:HEAD_IDS]
    for test in sorted(flat, key=lambda f: ("test" not in f.name.lower(), f.name)):
        ext = ext_of(survey, test, tests)
        if ext is None:
            continue
        for train in sorted((f for f in flat if f is not test), key=lambda f: ("train" not in f.name.lower(), f.name)):
            if all(survey.holds(train, f"{i}{ext}") for i in trains):
                return test, train, ext
    return None


def _dicom_folders(survey: Survey) -> list[Folder]:
    """The data folder's folders that hold DICOM files directly."""
    out = []
    for path in sorted(p for p in survey.data_dir.iterdir() if p.is_dir()):
        files = []
        for entry in os.scandir(path):
            if entry.name.lower().endswith(DICOM) and entry.is_file():
                files.append(entry.name)
                if len(files) >= LISTED:
                    break
        if files:
            out.append(Folder(path.name, f"{path.name}/", tuple(sorted(files))))
    return out


def _metric(boxes: pd.Series) -> tuple[str, str, str]:
    """(metric, why, what else it may be) from the sample's labels: numbers or names."""
    first = next((c.split()[0] for c in text(boxes.dropna()) if c.strip()), "")
    if _number(first) is not None:
        return "coco_map40", f"the sample's boxes are labelled by class numbers ({first}), as vinbigdata's", "voc_map50"
    return "voc_map50", f"the sample's boxes are labelled by class names ({first}), as siim-covid19's", "coco_map40"
