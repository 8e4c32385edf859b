"""The gallery's text competitions of authors, labels and phrase pairs in their MLE-bench public layouts at smoke
size: jigsaw's toxic comments (six label columns), spooky's authors (three classes) and the patent phrases (a
similarity score). As in kit.smoke.gallery.texts, the labels follow the words: each label, author or score
draws its own words, so a tiny encoder that learns them beats the prior."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke.gallery.pictures import hex_ids
from kit.smoke.gallery.texts import PLAIN, sentence

TOXIC = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
# each label's own words; toxic draws from all of them
TOXIC_WORDS = {"severe_toxic": "scum filth vermin", "obscene": "crap damn hell", "threat": "kill hurt destroy",
               "insult": "idiot moron loser", "identity_hate": "bigot racist heathen"}
EVERY_TOXIC_WORD = tuple(" ".join(TOXIC_WORDS.values()).split())


def jigsaw_toxic(folder: Path, seed: int = 0, train: int = 200, test: int = 40) -> None:
    """train.csv id,comment_text and the six 0/1 labels (ids 16 hex digits; a comment may hold line breaks and
    quotes, as Wikipedia talk pages do), test.csv id,comment_text, sample_submission.csv id + the six at 0.5,
    in test.csv's order (Kaggle's own test split: MLE-bench copies it)."""
    rng = np.random.default_rng(seed)
    n = train + test
    toxic = rng.random(n) < 0.45
    labels = {"toxic": toxic.astype(int)}
    for column in TOXIC[1:]:
        labels[column] = (toxic & (rng.random(n) < 0.45)).astype(int)
    texts = []
    for i in range(n):
        pool = tuple(w for c in TOXIC[1:] if labels[c][i] for w in TOXIC_WORDS[c].split()) or EVERY_TOXIC_WORD
        text = sentence(rng, 0.4 if toxic[i] else 0.0, pool=pool)
        texts.append(f'"\n{text}\n"' if i % 7 == 0 else text.replace(" it ", ' "it" ', 1))
    table = pd.DataFrame({"id": hex_ids(rng, n, 16), "comment_text": texts, **labels})
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:][["id", "comment_text"]].to_csv(folder / "test.csv", index=False)
    table[train:][["id"]].assign(**{c: 0.5 for c in TOXIC}).to_csv(folder / "sample_submission.csv", index=False)


AUTHORS = {"EAP": "raven chamber ghastly", "HPL": "eldritch cyclopean abyss", "MWS": "misery affection creature"}
# prepare.py fills the sample with these constants (Kaggle's own sample's values)
AUTHOR_PRIOR = {"EAP": 0.403493538995863, "HPL": 0.287808366106543, "MWS": 0.308698094897594}


def spooky(folder: Path, seed: int = 0, train: int = 300, test: int = 30) -> None:
    """train.csv id,text,author (ids "id" and 5 digits, rows shuffled as train_test_split leaves them; texts with
    commas and quotes), test.csv id,text, sample_submission.csv id,EAP,HPL,MWS at Kaggle's constants."""
    rng = np.random.default_rng(seed)
    n = train + test
    names = list(AUTHORS)
    author = rng.choice(names, n, p=[0.4, 0.3, 0.3])
    ids = [f"id{k:05d}" for k in rng.choice(28_000, n, replace=False)]
    texts = [sentence(rng, 0.35, (8, 20), tuple(AUTHORS[a].split())).replace(" and ", ', "and" ', 1) for a in author]
    table = pd.DataFrame({"id": ids, "text": texts, "author": author})
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:].drop(columns="author").to_csv(folder / "test.csv", index=False)
    table[train:][["id"]].assign(**AUTHOR_PRIOR).to_csv(folder / "sample_submission.csv", index=False)


CONTEXTS = ("A47", "B60", "C07", "G06", "H04", "F16")  # CPC classes: a section letter and two digits
CLOSE = "same similar equivalent identical matching corresponding".split()


def patents(folder: Path, seed: int = 0, train: int = 320, test: int = 40) -> None:
    """train.csv id,anchor,target,context,score (ids 16 hex digits; scores 0, 0.25, 0.5, 0.75 or 1; an anchor
    repeats over many targets; a target of one to three words, two on average as on Kaggle, so kit init reads the
    three columns as short texts), test.csv id,anchor,target,context, sample_submission.csv id,score=0. A target's
    share of 'close' words rises with its score."""
    rng = np.random.default_rng(seed)
    n = train + test
    anchors = [" ".join(rng.choice(PLAIN, 2)) for _ in range(12)]
    score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n, p=[0.2, 0.3, 0.3, 0.12, 0.08])
    table = pd.DataFrame({"id": hex_ids(rng, n, 16), "anchor": [anchors[int(k)] for k in rng.integers(0, 12, n)],
                          "target": [sentence(rng, 0.1 + 0.8 * s, (1, 4), tuple(CLOSE)).rstrip(".").lower() for s in score],
                          "context": rng.choice(CONTEXTS, n), "score": score})
    table[:train].to_csv(folder / "train.csv", index=False)
    table[train:].drop(columns="score").to_csv(folder / "test.csv", index=False)
    table[train:][["id"]].assign(score=0).to_csv(folder / "sample_submission.csv", index=False)
