"""COCO-style label files as the training table and the test images: images[] (id or image_id, file_name),
annotations[] (image_id, category_id), categories[] (id or category_id, name, ...). iwildcam-2020,
inaturalist-2019 and the herbarium competitions ship their labels so.

A training image's class is its first annotation's category: the category id, or another field of the
category (`[data] category_field`: "name", herbarium-2022's "scientificName") where the submission names
classes so; by default the id, unless the sample submission's labels are not numbers (then "name"). The test
images are the test JSON's (a COCO mapping, or a plain list of image records as herbarium-2022's), found by
the sample submission's ids.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from kit.data import archives, records
from kit.data.image_paths import PATH
from kit.errors import KitError
from kit.spec import Spec


def training_table(spec: Spec, data_dir: Path, sample: pd.DataFrame | None = None,
                   log: Callable[[str], None] = print) -> tuple[pd.DataFrame, str]:
    """(id_column: image id as text, target_column: class, PATH: file_name), one row per annotated image."""
    path = archives.find_file(data_dir, spec.train, "COCO label file", log=log)
    value = records.load(path)
    images = image_table(value, path)
    annotations = value.get("annotations") if isinstance(value, dict) else None
    if not annotations:
        raise KitError(f"{path.name}: no annotations; a COCO training file needs annotations[] with image_id and "
                       "category_id (is it the test file? set train to the training annotations)")
    ann = pd.DataFrame.from_records(annotations)
    for key in ("image_id", "category_id"):
        if key not in ann.columns:
            raise KitError(f"{path.name}: annotations without '{key}' (they have: {', '.join(map(str, ann.columns[:8]))})")
    ann = ann.drop_duplicates("image_id")  # one class per image: its first annotation's
    labels = ann["category_id"]
    field = spec.category_field or ("id" if _numeric_labels(spec, sample) else "name")
    if field not in ("id", "category_id"):
        labels = labels.map(category_names(value, field, path))
        unknown = labels.isna().to_numpy()
        if unknown.any():
            raise KitError(f"{path.name}: category {ann['category_id'].to_numpy()[unknown][0]} of an annotation is not "
                           f"in categories[] ({int(unknown.sum())} such annotations)")
    by_image = pd.Series(labels.to_numpy(), index=ann["image_id"].astype(str).to_numpy())
    table = pd.DataFrame({spec.id_column: images["id"], spec.target_column: images["id"].map(by_image),
                          PATH: images["file_name"]})
    table = table[table[spec.target_column].notna()].reset_index(drop=True)  # images nobody labelled
    if table.empty:
        raise KitError(f"{path.name}: no annotation's image_id is an image id of images[]; check the file")
    if field in ("id", "category_id"):
        table[spec.target_column] = table[spec.target_column].astype(ann["category_id"].dtype)
    return table, path.name


def test_table(spec: Spec, data_dir: Path, log: Callable[[str], None] = print) -> tuple[pd.DataFrame, str]:
    """(id_column, PATH) of the test JSON's images."""
    path = archives.find_file(data_dir, spec.test, "COCO test file", log=log)
    images = image_table(records.load(path), path)
    return pd.DataFrame({spec.id_column: images["id"], PATH: images["file_name"]}), path.name


def image_table(value: Any, path: Path) -> pd.DataFrame:
    """(id as text, file_name) of a COCO mapping's images[], or of a list of image records."""
    images = value.get("images") if isinstance(value, dict) else value
    if not isinstance(images, list) or not images or not all(isinstance(i, dict) for i in images):
        raise KitError(f"{path.name}: no images[] of records; a COCO file lists its images with id and file_name")
    frame = pd.DataFrame.from_records(images)
    key = "id" if "id" in frame.columns else "image_id"
    for column in (key, "file_name"):
        if column not in frame.columns:
            raise KitError(f"{path.name}: images without '{column}' (they have: {', '.join(map(str, frame.columns[:8]))})")
    return pd.DataFrame({"id": frame[key].astype(str), "file_name": frame["file_name"].astype(str)})


def category_names(value: dict, field: str, path: Path) -> dict:
    """category id -> the category's `field`."""
    categories = value.get("categories")
    if not categories:
        raise KitError(f"{path.name}: no categories[], so no '{field}' to name classes by; set category_field = \"id\"")
    frame = pd.DataFrame.from_records(categories)
    key = "id" if "id" in frame.columns else "category_id"
    if key not in frame.columns or field not in frame.columns:
        raise KitError(f"{path.name}: categories have no '{field if key in frame.columns else key}' (they have: "
                       f"{', '.join(map(str, frame.columns[:8]))}); fix [data] category_field")
    return dict(zip(frame[key], frame[field]))


def _numeric_labels(spec: Spec, sample: pd.DataFrame | None) -> bool:
    """Whether the sample submission names classes by number (category ids)."""
    if sample is None:
        return True
    columns = [c for c in sample.columns if c != spec.id_column]
    column = spec.target_column if spec.target_column in sample.columns else (columns[0] if columns else None)
    return column is None or pd.api.types.is_numeric_dtype(sample[column])
