"""`kit init`'s guess of [data] group_column: a training column named for what a competition's rows come in
groups of (iwildcam-2019's camera locations, movie-review's sentences, a patient's images), whose values each
hold several rows. Folds that keep a group together validate as the competition tests: on groups the model
has not seen (the reason says so where the test rows' groups are all new)."""
from __future__ import annotations

import re

from kit.build import guesses
from kit.build.guesses import Guess, Line
from kit.build.survey import Survey

# what rows are grouped by, as a word of the column's name ("SentenceId", "patient_id", "location"); not a store or a
# household, whose series the test rows may go on with
GROUP_WORDS = {"location", "site", "camera", "patient", "subject", "sentence", "group", "session", "user", "prompt",
               "study", "essay", "speaker", "author"}
MIN_GROUPS = 5  # the default folds: fewer groups cannot fill them (kit.train.cv)
READ = ("id_column", "target_column", "text_columns", "image_path", "sequence_column", "order_column", "features",
        "array_columns", "identity_columns")  # [data] keys naming columns the model reads, or the ids and targets


def words(name: str) -> set[str]:
    """The words of a column's name, in lower case: SentenceId -> {sentence, id}."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)}


def group_line(survey: Survey, guess: Guess, sample_file: str) -> Line | None:
    """group_column's line for the cnn, text and tabular templates, or None where no column is named as a group."""
    if guess.template not in ("cnn", "text", "tabular"):
        return None
    data = {line.key: line.value for line in guess.data}
    train = data.get("train", "")
    if train not in survey.tables:
        return None
    frame = survey.read(train)
    test_name = data.get("test") or guesses.test_table(survey, guesses.data_tables(survey, sample_file),
                                                        survey.read(sample_file))
    test = survey.read(test_name) if test_name and test_name != train else None
    used = set(map(str, guess.targets))
    for key in READ:
        value = data.get(key) or []
        used.update(map(str, value if isinstance(value, list) else [value]))
    for column in frame.columns:
        if str(column) in used or not words(str(column)) & GROUP_WORDS:
            continue
        values = guesses.text(frame[column].dropna())
        if len(values) < len(frame) or not MIN_GROUPS <= values.nunique() <= len(values) / 2:
            continue
        new = test is not None and column in test.columns and not set(guesses.text(test[column].dropna())) & set(values)
        return Line("group_column", column, f"rows come in groups of one {column} ({values.nunique()} in the first "
                                            f"{len(values)} rows): a group stays in one fold"
                                            + (f"; {test_name}'s are all new" if new else ""))
    return None
