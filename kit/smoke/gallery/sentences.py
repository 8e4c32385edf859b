"""billion-word-imputation's public files as MLE-bench's prepare.py writes them, and its grader's checks.

prepare.py reads Kaggle's train_v2.txt (one tokenized sentence a line: words and punctuation apart, spaced), sends
about 1% of the sentences of more than two words to the test set with one word removed (never the first or the
last), keeps the rest as the public training file, and zips both: train_v2.txt.zip (train_v2.txt) and
test_v2.txt.zip (test_v2.txt, a CSV with the header `"id","sentence"` and rows `<n>,"<sentence>"`, quotes doubled).
Nothing else is public: its sample_submission.csv is a copy of test_v2.txt kept private, so the test file stands for
the sample submission (its sentences as they are: the baseline).

The smoke sentences come from a small grammar whose words tell each other apart: a subject and the verb it takes,
a preposition and the place it goes with, an article before each noun, an adjective now and then, a second clause
after "and" in some, a quotation in a few. A removed article, noun, verb or preposition leaves a gap the words around
it show, and the word is mostly the one those words call for: a tiny masked language model learns both in a minute."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke.gallery.grader_checks import has_columns, require, same_length, sorted_ids_equal

SUBJECTS = {"dog": "barks", "cat": "sleeps", "bird": "sings", "man": "reads", "woman": "writes", "child": "plays",
            "car": "stops", "farmer": "works"}
PLACES = {"in": ("house", "park", "garden"), "near": ("river", "station"), "under": ("bridge", "table"),
          "behind": ("school", "church")}
ADJECTIVES = ("big", "small", "old", "young", "happy", "quiet")
SPEAKERS = ("he", "she")


def noun_phrase(noun: str, rng: np.random.Generator) -> list[str]:
    words = ["the"]
    if rng.random() < 0.3:
        words.append(str(rng.choice(ADJECTIVES)))
    return words + [noun]


def clause(rng: np.random.Generator) -> list[str]:
    subject = str(rng.choice(list(SUBJECTS)))
    preposition = str(rng.choice(list(PLACES)))
    place = str(rng.choice(PLACES[preposition]))
    return [*noun_phrase(subject, rng), SUBJECTS[subject], preposition, *noun_phrase(place, rng)]


def sentence(rng: np.random.Generator) -> str:
    words = clause(rng)
    if rng.random() < 0.3:
        words += [",", "and", *clause(rng)]
    if rng.random() < 0.1:
        words = [str(rng.choice(SPEAKERS)), "said", '"', *words, '"']
    return " ".join([*words, "."])


def remove_random_word(text: str, rng: np.random.Generator) -> str:
    """prepare.py's: a word of the inner ones (never the first nor the last) removed."""
    words = text.split()
    index = int(rng.integers(1, len(words) - 1))
    return " ".join(words[:index] + words[index + 1 :])


def split(seed: int = 0, sentences: int = 2000) -> tuple[list[str], list[str], list[str]]:
    """(the training sentences, the test's with a word removed, the test's whole) as prepare.py splits them, from
    `sentences` sentences (~5% to the test: the smoke's test set is ~100 sentences; prepare.py's share is 1%); the test's
    quotes doubled, as prepare.py writes them into the CSV."""
    rng = np.random.default_rng(seed)
    train, damaged, whole = [], [], []
    for _ in range(sentences):
        text = sentence(rng)
        if rng.random() <= 0.05 and len(text.split()) > 2:
            quoted = text.replace('"', '""')
            whole.append(quoted)
            damaged.append(remove_random_word(quoted, rng))
        else:
            train.append(text)
    return train, damaged, whole


def billion_word(folder: Path, seed: int = 0) -> None:
    """train_v2.txt.zip and test_v2.txt.zip as prepare.py writes them."""
    train, damaged, _ = split(seed)
    test = ['"id","sentence"\n', *(f'{i},"{text}"\n' for i, text in enumerate(damaged))]
    for name, lines in (("train_v2.txt", [t + "\n" for t in train]), ("test_v2.txt", test)):
        with zipfile.ZipFile(folder / f"{name}.zip", "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(name, "".join(lines))


def answers(seed: int = 0) -> pd.DataFrame:
    """The private test.csv prepare.py writes beside them: id and the whole sentence (what the grader scores against)."""
    _, _, whole = split(seed)
    return pd.DataFrame({"id": range(len(whole)), "sentence": [t.replace('""', '"') for t in whole]})


def check(sub: pd.DataFrame, sample: pd.DataFrame) -> None:
    """Its prepare_for_metric: id and sentence, the length, the same ids once sorted; then python-Levenshtein's distance
    of each pair, which refuses a cell that is no text (an empty cell reads as NaN)."""
    has_columns(sub, "id", "sentence")
    same_length(sub, sample)
    sorted_ids_equal(sub, sample, "id")
    wrong = [v for v in sub["sentence"] if not isinstance(v, str)]
    require(not wrong, f"a sentence that is no text ({wrong[:1]}): the grader's distance fails on it")
