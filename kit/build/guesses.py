"""`kit init`'s readings of a competition's tables: the sample submission, its id and target columns, the
training and test tables, and the templates that read tables (text, sequences, tabular). Each guess carries
the reason it was made, which becomes its line's comment; what the data cannot say is a "cannot tell" line.
The image layouts are kit.build.image_guesses', the sequences
kit.build.sequence_guesses'."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from kit.build.survey import Survey
from kit.errors import KitError

UNNAMED = re.compile(r"Unnamed: \d+")  # pandas' name for a blank-headed column (an index written with the frame)
SAMPLE = re.compile(r"sample.?submission|submission.?sample", re.I)
# what a training table's label column is called where its name is not the sample's (jigsaw's "target" for
# the sample's "prediction"): tried in this order among the columns the test table lacks
LABEL_NAMES = ("target", "label", "labels", "class", "category", "category_id", "y")
TEXT_WORDS = 3.0  # a column is text when its cells hold this many words on average (or TEXT_CHARS characters)
TEXT_CHARS = 40.0
PHRASE_WORDS = 2.0  # a column of short texts holds this many words a cell on average ("abatement of pollution")
LETTERS = 0.5  # of a text column's characters (but spaces) at least: "2009-06-15 17:26:21 UTC" is a time, not text
HEAD_IDS = 50  # the sample's ids looked up in a table or folder: enough to tell, few enough to be quick
UNSURE = "the first of the columns the test table lacks"  # label_column's reason when it cannot tell
SPAN_SHARE = 0.9  # of a training column's answers found in their row's context: the answers are spans of it


@dataclass(frozen=True)
class Line:
    """One `key = value` of the drafted config and the reason for it (its comment)."""

    key: str
    value: Any
    why: str = ""


@dataclass
class Guess:
    """A template's reading of the data: its [data] lines, what it cannot tell, and the labels the metric is
    guessed from."""

    template: str
    why: str  # why this template
    data: list[Line]
    targets: list[str]  # the sample's columns the model fills
    labels: pd.DataFrame | pd.Series | None = None  # the training labels: one column, or the target columns
    cannot: list[str] = field(default_factory=list)
    metric: tuple[str, str, str] | tuple[()] = ()  # (metric, why, what else it may be) where the reading itself tells it
    classes: int = 0  # how many classes the files name where the labels read show fewer (a COCO file's categories)


def columns(sample: pd.DataFrame) -> list[str]:
    """The sample's columns but a blank-headed index."""
    return [c for c in sample.columns if not UNNAMED.fullmatch(str(c))]


def text(values: pd.Series) -> pd.Series:
    """Cells as text, as a table read with ids as text spells them (1, not 1.0, where a JSON number is whole)."""
    return values.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))


def unique(values: pd.Series) -> bool:
    return bool(values.notna().all()) and not text(values).duplicated().any()


def numbers(values: pd.Series) -> pd.Series | None:
    """The cells as numbers, or None where some filled cell is not one (booleans are not numbers here)."""
    filled = values.dropna()
    if filled.map(lambda v: isinstance(v, (bool, list, dict))).any():
        return None
    converted = pd.to_numeric(filled, errors="coerce")
    return None if converted.isna().any() or filled.empty else converted


def is_text(values: pd.Series) -> bool:
    """Free text: strings of several words (or long), mostly letters (not a date and time, nor addresses: google-quest's
    url and user pages), mostly distinct."""
    filled = values.dropna()
    if filled.empty or not filled.map(lambda v: isinstance(v, str)).all() or numbers(filled) is not None or \
            filled.str.match(r"\s*(https?|ftp)://\S*\s*$").mean() > 0.5:
        return False
    words = filled.str.split().str.len().mean()
    letters = filled.str.count(r"[^\W\d_]").sum() / max(int(filled.str.count(r"\S").sum()), 1)
    return (words >= TEXT_WORDS or filled.str.len().mean() >= TEXT_CHARS) and letters >= LETTERS and \
        filled.nunique() >= 0.5 * len(filled)


def phrases(test: pd.DataFrame, train: pd.DataFrame, key: str) -> list[str]:
    """The columns both tables hold but the id, where each holds words, not numbers, and one holds phrases of
    PHRASE_WORDS words or more (us-patent-phrase-to-phrase-matching's anchor, target and CPC context): short
    texts, which a text encoder reads as well as long ones; [] otherwise."""
    shared = [c for c in test.columns if c in train.columns and c != key and not UNNAMED.fullmatch(str(c))]
    filled = [test[c].dropna() for c in shared]
    if not shared or any(v.empty or not v.map(lambda x: isinstance(x, str)).all() or numbers(v) is not None
                         for v in filled):
        return []
    phrased = [v for v in filled if v.str.split().str.len().mean() >= PHRASE_WORDS and v.nunique() >= 0.5 * len(v)
               and v.str.count(r"[^\W\d_]").sum() >= LETTERS * max(int(v.str.count(r"\S").sum()), 1)]
    return shared if phrased else []


def sample_name(survey: Survey) -> str:
    """The sample submission: the top-level table named like sample_submission.csv (or holding "submission")."""
    names = [n for n in survey.tables if "/" not in n]
    found = [n for n in names if SAMPLE.search(n)] or [n for n in names if "submission" in n.lower()]
    if not found:
        held = ", ".join(sorted(p.name for p in survey.data_dir.iterdir() if not p.name.startswith("."))[:10])
        raise KitError(f"{survey.data_dir}: no sample submission (a table named like sample_submission.csv) among {held}; "
                       "kit init reads the submission's shape from it: add it to the folder")
    return min(found, key=lambda n: (not n.lower().startswith("sample_submission"), len(n), n))


def data_tables(survey: Survey, sample: str) -> list[str]:
    """The top-level tables but the sample submission (and other submissions)."""
    return [n for n in survey.tables if "/" not in n and n != sample and not SAMPLE.search(n) and "submission" not in n.lower()]


def holds_ids(table: pd.DataFrame, column: str, ids: pd.Series) -> bool:
    """Whether `table`'s `column` holds the first of `ids`."""
    return column in table.columns and bool(text(ids.head(HEAD_IDS)).isin(set(text(table[column]))).all())


def test_table(survey: Survey, names: list[str], sample: pd.DataFrame) -> str:
    """The test table: a table named "test" whose column holds the sample's ids (or any named "test")."""
    tests = [n for n in names if "test" in n.lower()]
    for name in tests:
        if any(holds_ids(survey.read(name), c, sample[c]) for c in columns(sample) if unique(sample[c])):
            return name
    return tests[0] if tests else ""


def train_table(survey: Survey, names: list[str], test: str, key: str = "") -> str:
    """The training table: among the tables but the test's, one named "train" (or "labels") that holds `key`."""
    candidates = [n for n in names if n != test]

    def rank(name: str) -> tuple:
        lower = name.lower()
        return (not (key and key in survey.read(name).columns), "train" not in lower, "label" not in lower, name)

    return min(candidates, key=rank) if candidates else ""


def id_of(sample: pd.DataFrame, table: pd.DataFrame | None) -> str:
    """The sample's id column: its first column of distinct values that `table` holds too, and not free text
    (detecting-insults' comments are distinct, but may repeat in the hidden rows); "" for none."""
    for column in columns(sample):
        if unique(sample[column]) and not is_text(sample[column]) and \
                (table is None or holds_ids(table, column, sample[column])):
            return column
    return ""


def label_column(train: pd.DataFrame, targets: list[str], key: str, test: pd.DataFrame | None) -> tuple[str, str]:
    """The training table's column holding the one target, and why: the sample's own name, the same name in
    another case, the one column the test table lacks, a label's usual name, or the columns' first."""
    others = [c for c in train.columns if c != key and not UNNAMED.fullmatch(str(c))]
    if len(targets) == 1 and targets[0] in others:
        return targets[0], f"the sample's '{targets[0]}', a column of the training table"
    if len(targets) > 1:  # one column of class names: dog-breed's breed for its 120 probability columns
        for c in others:
            if text(train[c].dropna()).isin(set(targets)).all():
                return c, f"its values are the sample's {len(targets)} column names: one probability column per class"
    if len(targets) == 1:
        same = [c for c in others if str(c).lower() == targets[0].lower()]
        if same:
            return same[0], f"the sample's '{targets[0]}', spelled so in the training table"
    only = [c for c in others if test is None or c not in test.columns]
    if len(only) == 1:
        return only[0], "the one column of the training table that the test table lacks"
    named = [c for name in LABEL_NAMES for c in only if str(c).lower() == name]
    if named:
        return named[0], "a label's usual name, among the columns the test table lacks"
    if only:
        return only[0], UNSURE
    return "", ""


def text_guess(survey: Survey, sample_file: str, names: list[str]) -> Guess | None:
    """The text template: a test table with free-text columns the training table holds too."""
    sample = survey.read(sample_file)
    test = test_table(survey, names, sample)
    if not test:
        return None
    test_frame = survey.read(test)
    key = id_of(sample, test_frame)
    train = train_table(survey, names, test, key)
    if not train:
        return None
    train_frame = survey.read(train)
    texts = [c for c in test_frame.columns if c in train_frame.columns and c != key and is_text(test_frame[c])]
    kind, why = "free text", "free text (several words a cell) in both tables"
    if not texts:
        texts = phrases(test_frame, train_frame, key)
        kind, why = "short texts", "short texts: every column but the id holds words, some of them phrases of several"
    if not texts:
        return None
    targets = [c for c in columns(sample) if c != key and c not in test_frame.columns]
    if not targets:
        return None
    lines = [Line("train", train, "the training table"), Line("test", test, "the test table: it holds the texts"),
             Line("sample_submission", sample_file, "the sample submission, by its name")]
    found = span_columns(train_frame, test_frame, key, texts, targets[0]) if key else ()  # spans match the sample by id
    if found and len(targets) == 1:
        return span_guess(found, lines, key, test, targets, train_frame)
    cannot = []
    through = [c for c in columns(sample) if c != key and c in test_frame.columns]
    copied = f"; {', '.join(through)} copied through from the sample" if through else ""
    if key:
        lines.append(Line("id_column", key, f"the sample's ids are {test}'s{copied}"))
    else:
        lines.append(Line("id_column", "", f"no column of distinct values in both {sample_file} and {test}: their rows "
                                           f"match by order{copied}"))
    lines += target_lines(train_frame, targets, key, test_frame, cannot)
    lines.append(Line("text_columns", texts, why))
    if through:
        lines.append(Line("submission_columns", targets, "the sample's columns the test table lacks: the model fills them"))
    return Guess("text", f"{kind} in {test} ({', '.join(texts[:3])})", lines, targets,
                 labels_of(train_frame, targets, lines), cannot)


def span_columns(train: pd.DataFrame, test: pd.DataFrame, key: str, texts: list[str], target: str) -> tuple[str, ...]:
    """(answer, question, context, answer start) where a training column the test table lacks holds pieces of a
    text column's cells, row by row (tweet-sentiment's selected_text of its text, chaii's answer_text of its
    context), with the question the other column both tables hold (free text first, else the most distinct values:
    the sentiment); the answer start, a column of each answer's first character ("" where none); () otherwise. The
    answer is the sample's `target` where the training table holds it (not pizza's label beside a copied text)."""
    only = [c for c in train.columns if c not in test.columns and c != key]
    answers = [target] if target in train.columns else only
    for context in texts:
        cells = train[context].fillna("").astype(str)
        for answer in answers:
            values = train[answer]
            if not values.map(lambda v: isinstance(v, str)).mean() >= SPAN_SHARE:
                continue
            pairs = [(a.strip(), c) for a, c in zip(values.fillna("").astype(str), cells) if a.strip()]
            inside = np.mean([a.lower() in c.lower() for a, c in pairs]) if pairs else 0.0
            shorter = sum(len(a) for a, _ in pairs) < 0.9 * sum(len(c) for _, c in pairs)  # pieces, not copies
            questions = [c for c in test.columns if c in train.columns and c not in (key, context)
                         and test[c].map(lambda v: isinstance(v, str)).all()]
            if inside < SPAN_SHARE or not shorter or not questions:
                continue
            question = max(questions, key=lambda c: (is_text(test[c]), test[c].nunique()))
            starts = [c for c in only if c != answer and numbers(train[c]) is not None
                      and placed(values.fillna("").astype(str), cells, train[c].fillna(-1)) >= SPAN_SHARE]
            return answer, question, context, starts[0] if starts else ""
    return ()


def placed(answers: pd.Series, contexts: pd.Series, starts: pd.Series) -> float:
    """The share of answers whose text their context holds at their start."""
    return float(np.mean([c[int(at) : int(at) + len(a)] == a for a, c, at in zip(answers, contexts, starts)]))


def span_guess(found: tuple[str, ...], lines: list[Line], key: str, test: str, targets: list[str],
               train: pd.DataFrame) -> Guess:
    """The spans template's reading: the answer column, the (question, context) pair, the answers' start."""
    answer, question, context, start = found
    lines = [*lines, Line("id_column", key, f"the sample's ids are {test}'s"),
             Line("target_column", answer, f"its texts are pieces of each row's {context}: spans to find"),
             Line("text_columns", [question, context], "the question, then the context the answer is a span of")]
    if start:
        lines.append(Line("answer_start_column", start, f"each {answer}'s first character in its {context}"))
    return Guess("spans", f"{answer} is a span of {context} in the training table, given {question}", lines, targets,
                 train[answer], metric=("jaccard", "answers are spans of text", "no other of kit's metrics (spans take jaccard)"))


def target_lines(train: pd.DataFrame, targets: list[str], key: str, test: pd.DataFrame | None,
                 cannot: list[str]) -> list[Line]:
    """target_column, where one training column holds the labels; none where the training table holds each of
    several target columns (lmsys' one-hot winners, google-quest's 30 scores)."""
    if len(targets) > 1 and all(t in train.columns for t in targets):
        return []
    column, why = label_column(train, targets, key, test)
    if not column or why == UNSURE:
        others = [c for c in train.columns if c != key and (test is None or c not in test.columns)]
        cannot.append(f"which training column holds the target of {', '.join(targets)} (of {', '.join(map(str, others[:6]))}"
                      f"{', ...' if len(others) > 6 else ''}): set target_column")
    if not column:
        return []
    return [Line("target_column", column, why)]


def labels_of(train: pd.DataFrame, targets: list[str], lines: list[Line]) -> pd.DataFrame | pd.Series | None:
    """The training labels the metric is guessed from: the target columns the table holds, or its target_column."""
    if len(targets) > 1 and all(t in train.columns for t in targets):
        return train[targets]
    column = next((line.value for line in lines if line.key == "target_column"), "")
    return train[column] if column in train.columns else None


def tabular_guess(survey: Survey, sample_file: str, names: list[str], template: str) -> Guess | None:
    """A table of features per row (the tabular template): train, test, the id and the target."""
    sample = survey.read(sample_file)
    test = test_table(survey, names, sample)
    test_frame = survey.read(test) if test else None
    key = id_of(sample, test_frame)
    train = train_table(survey, names, test, key)
    if not train:
        return None
    train_frame = survey.read(train)
    targets = [c for c in columns(sample) if c != key and (test_frame is None or c not in test_frame.columns)]
    lines = [Line("train", train, "the training table"),
             Line("sample_submission", sample_file, "the sample submission, by its name")]
    if test:
        lines.insert(1, Line("test", test, "the test table"))
    lines.append(Line("id_column", key, f"the sample's ids are {test or train}'s"))
    cannot: list[str] = []
    lines += target_lines(train_frame, targets, key, test_frame, cannot)
    labels = {line.value for line in lines if line.key == "target_column"} | set(targets)
    only = [c for c in train_frame.columns if test_frame is not None and c not in test_frame.columns and c not in labels
            and c != key and not UNNAMED.fullmatch(str(c))]
    if only:  # siim-isic's diagnosis and benign_malignant: the model reads a column in both tables or not at all
        lines.append(Line("drop_columns", only, f"the training table's alone ({test} lacks them): the model cannot read "
                                                "them in the test rows"))
    return Guess(template, "tables of features, and no images, texts or sequences", lines, targets,
                 labels_of(train_frame, targets, lines), cannot)
