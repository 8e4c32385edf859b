"""The checks of the detection competitions' graders shipped after vinbigdata (siim-covid19-detection,
kuzushiji-recognition): they join kit.smoke.gallery.graders' CHECKS with their configs."""
from __future__ import annotations

import pandas as pd

from kit.smoke.gallery.grader_checks import Invalid, has_columns, require, same_length, sorted_ids_equal


def siim_covid(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its grade.py: the length, id and PredictionString, the sorted ids, then each string split into groups of six
    (label, confidence and four corners as floats): a blank cell (NaN) fails its strip, a short group its indexing."""
    same_length(sub, sample)
    has_columns(sub, "id", "PredictionString")
    sorted_ids_equal(sub, sample, "id")
    for text in sub["PredictionString"]:
        require(isinstance(text, str), f"a PredictionString is {text!r}, not text (the grader strips it)")
        tokens = text.strip().split()
        require(len(tokens) % 6 == 0, f"PredictionString '{text[:40]}' is not groups of label, confidence, 4 corners")
        try:
            [float(t) for i, t in enumerate(tokens) if i % 6]
        except ValueError:
            raise Invalid(f"PredictionString '{text[:40]}' has a confidence or corner that is not a number") from None


def kuzushiji(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its prepare_for_metric: the length, image_id and labels, the sorted image_ids; each labels cell not blank (NaN:
    no characters) split on single spaces into groups of label, x, y with x and y floats (an empty token from a
    doubled space fails its float)."""
    same_length(sub, sample)
    has_columns(sub, "image_id", "labels")
    sorted_ids_equal(sub, sample, "image_id")
    for text in sub["labels"]:
        if pd.isna(text):
            continue
        tokens = str(text).split(" ")
        require(len(tokens) % 3 == 0, f"labels '{str(text)[:40]}' is not groups of label, x, y")
        try:
            [float(t) for i, t in enumerate(tokens) if i % 3]
        except ValueError:
            raise Invalid(f"labels '{str(text)[:40]}' has an x or y that is not a number") from None
