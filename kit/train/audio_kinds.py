"""The audio template's own kind of target, registered from its rooms (kit.train.kinds.register).

"melted" (mlsp-2013-birds): the sample submission holds one row per (recording, species), `Id = recording * STRIDE
+ species` and one probability column. The model predicts each test recording's species vector; prediction repeats
it over the recording's sample rows (sample rows, species), as the fallback's prior rows are, and the submission
keeps the species each row's Id names (the kind's `pick`)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kit.errors import KitError
from kit.train.kinds import Kind, Target, column_values, label_frequency, named, output_columns, register

STRIDE = 100  # Id = recording * STRIDE + class: the Kaggle submission parser's melted ids (its forum's new format)


def decode(ids: pd.Series | np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(recordings, classes) of melted ids; an id that is not a whole number is one line."""
    numbers = pd.to_numeric(pd.Series(np.asarray(ids)), errors="coerce")
    wrong = np.flatnonzero(numbers.isna().to_numpy() | (numbers.fillna(0) % 1 != 0).to_numpy() | (numbers < 0).to_numpy())
    if len(wrong):
        raise KitError(f"{where}: id {np.asarray(ids)[wrong[0]]!r} (row {wrong[0] + 2}) is not recording * {STRIDE} + "
                       f"class ({len(wrong)} such rows)")
    whole = numbers.to_numpy(dtype=np.int64)
    return whole // STRIDE, whole % STRIDE


def id_column_of(target: Target, sample: pd.DataFrame) -> str:
    """The sample's one column that is not the target's: its melted ids."""
    others = [c for c in sample.columns if c not in target.columns]
    if len(others) != 1:
        raise KitError(f"a melted sample submission holds one id column beside {target.columns[0]}, not {others}")
    return others[0]


def pick(target: Target, sample: pd.DataFrame) -> np.ndarray:
    """The output (class index) each sample row's id names."""
    _, classes = decode(sample[id_column_of(target, sample)], "the sample submission")
    index = {int(c): i for i, c in enumerate(target.classes)}
    unknown = [c for c in np.unique(classes) if int(c) not in index]
    if unknown:
        raise KitError(f"the sample submission names class {unknown[0]}, which the model does not predict "
                       f"({len(target.classes)} classes)")
    return np.array([index[int(c)] for c in classes], np.int64)


def melted_text(t: Target) -> str:
    return f"melted: {len(t.classes)} labels a recording, one row per (recording, label)"


MELTED = register(Kind("melted", output_columns, "probability", by_column=True, multilabel=True, encode=column_values,
                       describe=melted_text, prior=label_frequency, prior_name=named("each label's frequency"),
                       learns_classes=True, pick=pick))
