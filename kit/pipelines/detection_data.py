"""The detection pipeline's data steps (kit.pipelines.detection): the training boxes read and fused, every image
(DICOM or picture file) decoded once at the template's side into the image cache, and what the sample writes for an
image without findings."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from kit.data import archives, box_fusion, box_strings, boxes, canvas, dicom, images, tables
from kit.errors import KitError
from kit.runtime import paths
from kit.runtime.session import Session

MAX_BAD_SHARE = 0.01
DICOM_EXTS = (".dicom", ".dcm")


@dataclass(frozen=True)
class Sized:
    """A canvas reader (kit.data.canvas.Reader): a DICOM file (windowed to uint8, kit.data.dicom) or a picture,
    resized to `side` x `side` (the detector reads squares; its boxes are scaled by each image's own factors).
    Its header is the file's own size."""

    side: int

    def header(self, path: str) -> tuple[int, int, int] | str:
        try:
            if Path(path).suffix.lower() in DICOM_EXTS:
                ds = dicom._pydicom().dcmread(path, stop_before_pixels=True)
                return int(ds.Rows), int(ds.Columns), 3
            with Image.open(path) as im:
                return im.size[1], im.size[0], 3
        except FileNotFoundError:
            return images.MISSING
        except KitError:
            raise
        except Exception as e:  # pydicom's and PIL's many types of a bad file
            return " ".join(str(e).split()) or type(e).__name__

    def read(self, path: str) -> np.ndarray:
        if Path(path).suffix.lower() in DICOM_EXTS:
            picture = Image.fromarray(dicom.read_dicom(path)).convert("RGB")
        else:
            with Image.open(path) as im:
                picture = im.convert("RGB")
        return np.asarray(picture.resize((self.side, self.side), Image.BILINEAR), dtype=np.uint8)


def read_labels(s: Session) -> tuple[boxes.Labels, Path]:
    """The training table's boxes, one record per image (negatives kept), by the table's columns: vinbigdata's one
    row a box (class_id, rad_id), siim-covid19's image table (boxes, StudyInstanceUID), kuzushiji's (labels)."""
    path = archives.find_file(s.data_dir, s.spec.train, "training table", log=s.log)
    frame = tables.read_table(path)
    columns = set(frame.columns)
    if {"class_id", "rad_id"} <= columns:
        return boxes.read_vinbigdata(frame), path
    if {"boxes", "StudyInstanceUID"} <= columns:
        return boxes.read_siim_images(frame), path
    if {"image_id", "labels"} <= columns:
        return boxes.read_kuzushiji(frame), path
    raise KitError(f"{path.name}: the detection template reads one row a box (image_id, class_id, rad_id, x_min .. "
                   "y_max), a list of boxes an image (id, boxes, StudyInstanceUID) or label sequences (image_id, labels); "
                   f"it has {', '.join(map(str, frame.columns[:8]))}")


def fused(labels: boxes.Labels, iou: float) -> list[boxes.ImageBoxes]:
    """Each image's boxes, several readers' fused into one per object (weighted box fusion at `iou`); an image one
    reader drew keeps its boxes."""
    out = []
    for im in labels.images:
        readers = len(set(im.readers.tolist())) if im.readers is not None and len(im.labels) else 1
        if readers <= 1:
            out.append(im)
            continue
        b, lab, _ = box_fusion.fuse(im.boxes, im.labels, None, 1, iou)
        out.append(boxes.ImageBoxes(im.image_id, b, lab.astype(np.int64), group=im.group))
    return out


def nothing_class(sample: pd.DataFrame, column: str, classes: tuple[str, ...]) -> tuple[int, str]:
    """(the class id the sample writes on a 0 0 1 1 box for an image without findings, -1 for none; the string an
    image without boxes is written as): vinbigdata's "14 1 0 0 1 1" names class 14 beyond its 14 findings; a name
    that is no finding's (siim's "none 1 0 0 1 1") is the class after them, and the submission writes names."""
    first = sample[column].iloc[0] if len(sample) else ""
    text = "" if not isinstance(first, str) else first.strip()
    try:
        names, conf, corners = box_strings.parse_detections(text, 2, column)
    except KitError:
        return -1, text
    if len(names) == 1 and np.allclose(corners[0], (0, 0, 1, 1)):
        try:
            k = int(names[0])
        except ValueError:
            return (-1, text) if names[0] in classes else (len(classes), text)
        if k >= len(classes):
            return k, text
    return -1, text


def image_paths(s: Session, folder: str, ids) -> list[str]:
    """Each id's image file: <folder>/<id><image_ext> under the data folder; where those are not all there, the
    files of that extension anywhere under <folder> by name, an id matching its file's name or the name and a suffix
    from its last "_" (siim's <study>/<series>/<image>.dcm for the id <image>_image). One found nowhere keeps its flat
    path (decoding names it missing). The folder may ship as its archive (<folder>.zip), unpacked once."""
    key = "train_images" if folder == s.spec.train_images else "test_images"
    root = archives.find_folder(s.data_dir, folder, key, log=s.log)  # kuzushiji's train_images.zip unpacked once
    flat = [root / f"{i}{s.spec.image_ext}" for i in ids]
    if all(f.is_file() for f in flat):
        return list(map(str, flat))
    named = {p.name[: len(p.name) - len(s.spec.image_ext)]: p for p in root.rglob(f"*{s.spec.image_ext}") if p.is_file()}
    found = [named.get(str(i)) or named.get(str(i).rsplit("_", 1)[0]) or f for i, f in zip(ids, flat)]
    return list(map(str, found))


def decode(s: Session, files: list[str], side: int, what: str) -> canvas.Canvas:
    """Every image once, at `side` x `side`, into the cache; each row's own (height, width) kept as its size."""
    reader = Sized(side)
    heads = canvas.headers(files, s.hardware.cpu_count, reader)
    sizes = np.array([h[:2] if isinstance(h, tuple) else (0, 0) for h in heads], np.int64).reshape(-1, 2)
    bad = {i: h for i, h in enumerate(heads) if not isinstance(h, tuple)}
    found = canvas.build(files, None, np.where(sizes > 0, sizes, 1), (side, side), paths.scratch_dir() / "boxes",
                         s.hardware.cpu_count, f"decode {what}", s.log, reader)
    found.bad.update(bad)
    found.sizes = sizes
    images.check_bad(found, files, what, "are left out" if what == "train" else "are predicted empty", MAX_BAD_SHARE, s.log)
    return found


def padded(records: list[boxes.ImageBoxes], sizes: np.ndarray, side: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(N, G, 4) float32 corners in the cached pixels (each image's factors side / its size), (N, G) int64 labels with
    -1 padding, and G (one at least)."""
    width = max([len(r.labels) for r in records] + [1])
    out, labels = np.zeros((len(records), width, 4), np.float32), np.full((len(records), width), -1, np.int64)
    for i, (r, (h, w)) in enumerate(zip(records, sizes)):
        k = len(r.labels)
        if k and h > 0 and w > 0:
            out[i, :k] = r.boxes * np.array([side / w, side / h, side / w, side / h], np.float32)
            labels[i, :k] = r.labels
    return out, labels, width
