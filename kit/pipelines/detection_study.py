"""Study rows beside image rows (siim-covid19-detection): a sample whose rows are images and studies, each study
written as its classes' probabilities on the dummy box ("negative 0.6 0 0 1 1 typical 0.3 0 0 1 1 ...").

The study's classes are derived from its images' detections, in two honest steps, both read the same way in train
and predict mode (the table is in the run's recipe):
- from the training labels, how often a study of each number of boxes (0, 1, 2, 3 or more, over its images) is of
  each class: a (counts, classes) table, Laplace-smoothed;
- for a test study, the distribution of its number of true boxes if each of its images' likeliest boxes is one with
  its confidence (independently: the Poisson binomial of the top scores), times that table.
On siim the number of opacities is what separates "negative" (none) from "typical" (bilateral, several) and the rest;
a study head on the backbone would see more, at the price of a second target in the one training loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, box_strings, boxes, tables
from kit.errors import KitError
from kit.runtime.session import Session

MAX_COUNT = 3  # studies of 3 boxes or more share a row of the table


@dataclass(frozen=True)
class StudyRows:
    """The sample's study rows (`rows`, their bare study ids `ids`) and image rows (`images`); `suffix` ends a study
    row's id ("_study"), as it ends the study table's."""

    rows: np.ndarray
    ids: np.ndarray
    images: np.ndarray
    suffix: str


def read_table(s: Session) -> tuple[dict[str, int], tuple[str, ...], str]:
    """The study table ([data] study_table): {bare study id: its class}, the class names a submission writes, and
    the suffix its ids end in (the part from their last "_", "_study"; "" where they have none)."""
    path = archives.find_file(s.data_dir, s.spec.study_table, "study table", log=s.log)
    ids, classes, names = boxes.read_siim_studies(tables.read_table(path))
    suffix = "_" + ids[0].rsplit("_", 1)[1] if len(ids) and "_" in ids[0] else ""
    bare = [i[: len(i) - len(suffix)] if suffix and i.endswith(suffix) else i for i in ids]
    return dict(zip(bare, classes.tolist())), names, suffix


def split_sample(sample: pd.DataFrame, id_column: str, suffix: str) -> StudyRows:
    """The sample's rows whose id ends in `suffix` are studies, the rest images (all images without a suffix)."""
    ids = sample[id_column].astype(str).to_numpy()
    study = np.char.endswith(ids.astype(str), suffix) if suffix else np.zeros(len(ids), bool)
    bare = np.array([i[: len(i) - len(suffix)] for i in ids[study]], dtype=object)
    return StudyRows(np.flatnonzero(study), bare, np.flatnonzero(~study), suffix)


def study_of(files: list[str], root: Path) -> list[str]:
    """Each image file's study: its first folder under `root` (siim's <study>/<series>/<image>.dcm); "" if none."""
    out = []
    for f in files:
        parts = Path(f).relative_to(root).parts if Path(f).is_relative_to(root) else ()
        out.append(parts[0] if len(parts) > 1 else "")
    return out


def count_table(records: list[boxes.ImageBoxes], studies: dict[str, int], classes: int) -> list[list[float]]:
    """P(class | the study's number of boxes, capped at MAX_COUNT): (MAX_COUNT + 1, classes), each row counted over
    the training studies with one added to every cell; then one row more, the studies' classes whatever their boxes
    (the prior: a study none of whose images was read). A study with no image in the table is left out."""
    counts: dict[str, int] = {}
    for r in records:
        if r.group in studies:
            counts[r.group] = counts.get(r.group, 0) + len(r.labels)
    table = np.ones((MAX_COUNT + 2, classes))
    for study, n in counts.items():
        table[min(n, MAX_COUNT), studies[study]] += 1
        table[-1, studies[study]] += 1
    return (table / table.sum(1, keepdims=True)).tolist()


def count_distribution(scores: np.ndarray) -> np.ndarray:
    """(MAX_COUNT + 1,) the distribution of how many of the MAX_COUNT likeliest boxes are true, each with its
    confidence and independently (the last bin: all of them)."""
    top = np.sort(np.clip(np.asarray(scores, np.float64), 0, 1))[::-1][:MAX_COUNT]
    dist = np.zeros(MAX_COUNT + 1)
    dist[0] = 1.0
    for p in top:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    return dist


def probabilities(pred: np.ndarray, image_studies: list[str], studies: np.ndarray, table: list[list[float]],
                  nothing: int) -> np.ndarray:
    """(studies, classes): each study's class probabilities from its images' packed detections `pred` ((images, D, 6),
    label -1 pads, the `nothing` class not a finding); a study without an image gets the prior (the table's last row)."""
    table_ = np.asarray(table)
    found: dict[str, list[np.ndarray]] = {}
    for image, study in zip(pred, image_studies):
        keep = (image[:, 5] >= 0) & (image[:, 5] != nothing)
        found.setdefault(study, []).append(image[keep, 4])
    out = np.empty((len(studies), table_.shape[1]))
    for i, study in enumerate(studies):
        scores = found.get(str(study))
        out[i] = count_distribution(np.concatenate(scores)) @ table_[:-1] if scores else table_[-1]
    return out


def cells(names: tuple[str, ...], probs: np.ndarray) -> list[str]:
    """Each study's row: every class with its probability on the dummy box, likeliest first."""
    return [box_strings.classes_string(names, p) for p in np.atleast_2d(probs)]


def check(study_rows: StudyRows, test_studies: list[str], table_path: str) -> None:
    """Every study row of the sample names a study whose images are under the test folder."""
    missing = sorted(set(study_rows.ids.tolist()) - set(test_studies))
    if missing and len(missing) == len(study_rows.ids):
        raise KitError(f"none of the sample's {len(missing)} study rows (such as {missing[0]}{study_rows.suffix}) names "
                       f"a folder of images under the test folder; {table_path}'s studies are <study>/<series>/<image>")
