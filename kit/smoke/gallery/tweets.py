"""tweet-sentiment-extraction's public files as MLE-bench's prepare.py writes them: train.csv
textID,text,selected_text,sentiment (its Kaggle columns, a random nine tenths of Kaggle's train.csv), test.csv
textID,text,sentiment (the other tenth, selected_text dropped) and sample_submission.csv textID,selected_text with
every selected_text empty (pandas reads the column as NaN). textID is ten hex digits.

The smoke tweets say what carries their sentiment: a positive or negative tweet holds one phrase of its
sentiment's words among neutral filler, and that phrase is its selected_text; a neutral tweet's selected_text is
the whole tweet, as most of Kaggle's are (the trivial submission, the whole text, scores 1 on them)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

FILLER = ("i", "went", "to", "the", "store", "with", "my", "friend", "today", "and", "then", "we", "had", "lunch",
          "at", "work", "this", "morning", "it", "was", "on", "tv", "last", "night", "after", "class")
WORDS = {"positive": ("love", "happy", "great", "awesome", "fun", "good", "best", "nice", "glad", "thanks"),
         "negative": ("hate", "sad", "bad", "awful", "sick", "tired", "worst", "sorry", "miss", "boring")}


def tweet(rng: np.random.Generator, sentiment: str) -> tuple[str, str]:
    """(text, selected_text) of one smoke tweet of `sentiment`."""
    words = [FILLER[int(i)] for i in rng.integers(len(FILLER), size=int(rng.integers(5, 14)))]
    if sentiment == "neutral":
        text = " ".join(words)
        return text, text
    phrase = " ".join(WORDS[sentiment][int(i)] for i in rng.integers(len(WORDS[sentiment]), size=int(rng.integers(1, 4))))
    at = int(rng.integers(len(words) + 1))
    mark = "!" if rng.random() < 0.5 else ""
    text = " ".join([*words[:at], phrase + mark, *words[at:]])
    if rng.random() < 0.3:  # Kaggle's tweets keep a leading space and odd capitals; the span is found in either
        text = " " + text.capitalize()
    return text, (phrase + mark).capitalize() if text.lstrip().startswith(phrase.capitalize()) else phrase + mark


def tweet_sentiment(folder: Path, seed: int = 0, train: int = 400, test: int = 40) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(train + test):
        sentiment = str(rng.choice(["neutral", "positive", "negative"], p=[0.4, 0.3, 0.3]))
        text, selected = tweet(rng, sentiment)
        rows.append((rng.bytes(5).hex(), text, selected, sentiment))
    table = pd.DataFrame(rows, columns=["textID", "text", "selected_text", "sentiment"])
    table.iloc[:train].to_csv(folder / "train.csv", index=False)
    table.iloc[train:].drop(columns=["selected_text"]).to_csv(folder / "test.csv", index=False)
    sample = table.iloc[train:][["textID", "selected_text"]].copy()
    sample["selected_text"] = ""
    sample.to_csv(folder / "sample_submission.csv", index=False)
