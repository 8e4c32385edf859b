"""`kit init`'s reading of a sequence competition (the lstm and transformer templates): a long table whose rows
are time steps grouped by a sequence column (ventilator-pressure-prediction), or rows holding whole sequences in
string or list columns (stanford-covid-vaccine); and, where a 0/1 column splits every sequence into two phases,
the phase the metric scores (score_mask)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kit.build import guesses
from kit.build.guesses import HEAD_IDS, Guess, Line, columns, numbers, text
from kit.build.survey import Survey

CATEGORIES = (3, 32)  # a sequence feature of whole numbers with this many distinct values is categorical


def sequence_guess(survey: Survey, sample_file: str, names: list[str], template: str) -> Guess | None:
    """The sequence templates: a long table (rows of time steps grouped by a sequence column), or rows holding
    whole sequences in list or string columns (step_columns)."""
    sample = survey.read(sample_file)
    test = guesses.test_table(survey, names, sample)
    if not test:
        return None
    test_frame = survey.read(test)
    return _steps(survey, sample_file, sample, names, test, test_frame, template) or \
        _long(survey, sample_file, sample, names, test, test_frame, template)


def _steps(survey: Survey, sample_file: str, sample: pd.DataFrame, names: list[str], test: str, frame: pd.DataFrame,
           template: str) -> Guess | None:
    """stanford-covid-vaccine: the sample's ids are "<sequence>_<step>" and the test rows hold each step's
    values in strings (a character a step) or lists as long as the sample's steps."""
    key = columns(sample)[0]
    ids = text(sample[key])
    split = ids.str.rsplit("_", n=1)
    if not (split.str.len() == 2).all() or not split.str[1].str.isdigit().all():
        return None
    prefixes = split.str[0]
    sequence = next((c for c in frame.columns if guesses.holds_ids(frame, c, prefixes)), "")
    if not sequence:
        return None
    steps = prefixes.value_counts()
    head = frame.head(HEAD_IDS)
    want = text(head[sequence]).map(steps)
    stepped = [c for c in frame.columns if c != sequence and _lengths(head[c]).eq(want).all()]
    if not stepped:
        return None
    train = guesses.train_table(survey, names, test, sequence)
    if not train:
        return None
    train_frame = survey.read(train)
    targets = [c for c in columns(sample) if c != key and c not in frame.columns]
    listed = [c for c in targets if c in train_frame.columns and train_frame[c].map(lambda v: isinstance(v, list)).all()]
    order = key[len(sequence) + 1:] if key.startswith(f"{sequence}_") and key[len(sequence) + 1:] not in frame.columns \
        else "step"
    strings = [c for c in stepped if head[c].map(lambda v: isinstance(v, str)).all()]
    lines = [Line("train", train, "the training rows"), Line("test", test, f"its {sequence} values start the sample's ids"),
             Line("sample_submission", sample_file, "the sample submission, by its name"),
             Line("id_column", key, f"<{sequence}>_<step>: one row per step of each sequence"),
             Line("sequence_column", sequence, "the part of the sample's ids before the step"),
             Line("order_column", order, "made: the steps numbered from 0"),
             Line("step_columns", [*stepped, *listed], "a string or list as long as the sequence's steps in the sample "
                                                         "(the targets' lists in the training table)"),
             Line("features", [order], "the step's position"),
             Line("categorical", strings, "one character a step: a code, embedded"),
             Line("task", "per_step", "one sample row per step")]
    if len(targets) == 1:
        lines.insert(4, Line("target_column", targets[0], "the sample's"))
    labels = _exploded(train_frame, listed)
    return Guess(template, f"each row of {test} holds whole sequences ({', '.join(stepped[:3])})", lines, targets,
                 labels, [])


def _lengths(values: pd.Series) -> pd.Series:
    return values.map(lambda v: len(v) if isinstance(v, (str, list)) else -1)


def _exploded(train: pd.DataFrame, listed: list[str]) -> pd.DataFrame | None:
    """The first rows' per-step targets, one row a step: what the metric is guessed from."""
    if not listed:
        return None
    rows = train.head(200)
    return pd.DataFrame({c: pd.Series([x for cell in rows[c] for x in cell]) for c in listed})


def _long(survey: Survey, sample_file: str, sample: pd.DataFrame, names: list[str], test: str, frame: pd.DataFrame,
          template: str) -> Guess | None:
    """ventilator-pressure-prediction: a long table whose rows are time steps, grouped by a sequence column
    whose values each fill one run of rows; the sample names the rows (per step) or the sequences."""
    key = guesses.id_of(sample, frame)
    groups = [c for c in frame.columns if c != key and _grouping(frame[c])]
    if not groups:
        return None
    per_step = bool(key) and guesses.unique(frame[key])
    if not per_step:
        key = next((c for c in columns(sample) if c in groups and guesses.holds_ids(frame, c, sample[c])), "")
        if not key:
            return None
    sequence = key if not per_step else min(groups, key=lambda c: (not str(c).lower().endswith("id"), frame[c].nunique()))
    numeric = {c: numbers(frame[c]) for c in frame.columns if c not in (key, sequence)}
    numeric = {c: v for c, v in numeric.items() if v is not None and len(v) == len(frame)}
    orders = [c for c, v in numeric.items() if _increasing(v, frame[sequence])]
    if not orders:
        return None
    order = min(orders, key=lambda c: (not re.search(r"time|step|order|pos|seq", str(c), re.I), orders.index(c)))
    train = guesses.train_table(survey, names, test, sequence)
    if not train:
        return None
    train_frame = survey.read(train)
    targets = [c for c in columns(sample) if c != key and c not in frame.columns]
    categorical = [c for c, v in numeric.items() if (v == v.round()).all() and CATEGORIES[0] <= v.nunique() <= CATEGORIES[1]]
    lines = [Line("train", train, "the training steps"), Line("test", test, "the test steps"),
             Line("sample_submission", sample_file, "the sample submission, by its name"),
             Line("id_column", key, "the sample's ids are the test rows'" if per_step else "the sample's ids are the sequences'")]
    cannot: list[str] = []
    lines += guesses.target_lines(train_frame, targets, key, frame, cannot)
    lines += [Line("sequence_column", sequence, "its values each fill one run of rows"),
              Line("order_column", order, "rises within each sequence"),
              Line("features", list(numeric), "the test table's numeric columns"),
              Line("categorical", categorical, f"whole numbers of {CATEGORIES[0]} to {CATEGORIES[1]} values: embedded"),
              Line("task", "per_step" if per_step else "per_sequence",
                   "one sample row per step" if per_step else "one sample row per sequence")]
    phase = _phase(numeric, frame[sequence], train_frame)
    if phase:
        named = phase if phase.isidentifier() else f"`{phase}`"  # a pandas query's name for it
        lines.append(Line("score_mask", f"{named} == 0", f"'{phase}' is 0, then 1, in every sequence: two phases, of "
                                                         "which the first is taken as the scored one"))
        cannot.append(f"whether the metric scores only the rows where {phase} == 0 (ventilator's scores its inspiratory "
                      "phase so): remove score_mask where it scores every row, or write the phase it scores")
    else:
        cannot.append("which rows the metric scores: every row is trained on and scored; set score_mask (such as "
                      "\"u_out == 0\") where the competition scores only some")
    return Guess(template, f"{test}'s rows are steps of sequences ({sequence}, ordered by {order})", lines, targets,
                 guesses.labels_of(train_frame, targets, lines), cannot)


def _phase(numeric: dict[str, pd.Series], groups: pd.Series, train: pd.DataFrame) -> str:
    """A 0/1 column, in both tables, that is 0 and then 1 within every sequence and takes both values in most:
    the two phases of a step sequence (ventilator's u_out: the valve shut while air goes in, then open); ""
    where none is."""
    for column, values in numeric.items():
        if column not in train.columns or not values.isin([0, 1]).all():
            continue
        frame = pd.DataFrame({"v": values.to_numpy(), "g": text(groups).to_numpy()})
        by = frame.groupby("g", sort=False)["v"]
        rising = by.apply(lambda v: bool((np.diff(v.to_numpy()) >= 0).all()))
        both = by.nunique() == 2
        if rising.all() and both.mean() > 0.5:
            return column
    return ""


def _grouping(values: pd.Series) -> bool:
    """Each value fills one run of rows, of two rows or more on average, and there are several."""
    as_text = text(values)
    runs = int((as_text != as_text.shift()).sum())
    distinct = as_text.nunique()
    return values.notna().all() and 1 < distinct == runs and len(values) >= 2 * distinct


def _increasing(values: pd.Series, groups: pd.Series) -> bool:
    """Rising within each group (and not everywhere the same)."""
    frame = pd.DataFrame({"v": values.to_numpy(dtype=np.float64), "g": text(groups).to_numpy()})
    rises = frame.groupby("g", sort=False)["v"].apply(lambda v: bool((np.diff(v.to_numpy()) > 0).all()))
    return bool(rises.all()) and frame["v"].nunique() > frame["g"].nunique()
