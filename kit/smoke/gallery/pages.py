"""tensorflow2-question-answering's public files as MLE-bench's prepare.py writes them: simplified-nq-train.jsonl
(example_id, question_text, document_text, long_answer_candidates, annotations; a random nine tenths of Kaggle's
training lines), simplified-nq-test.jsonl (the other tenth, without annotations) and sample_submission.csv
example_id,PredictionString with a "<example_id>_short" and a "<example_id>_long" row per test page, all blank.
An example_id is a long decimal number, written as text.

The smoke pages are Wikipedia-like: HTML tokens (<H1>, <P>, </P>, <Table>, <Tr>, <Td>) and words split on single
spaces, each paragraph a top-level long answer candidate (a table's cells nested candidates). A question asks
when a place was founded: where the page holds the fact's paragraph, the year is the short answer and its
paragraph the long one; a third of the pages are about another place and hold no answer (blank). A quarter of the
answered pages ask "was <place> founded by <name>" instead: YES where the fact's founder is that name, else NO, the
fact's paragraph the long answer (NQ's YES/NO answers, which the answer-type head learns)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

YEARS = ("1192", "1336", "1469", "1526", "1556", "1605", "1674", "1757", "1799", "1857", "1885", "1947")
PLACES = ("delhi", "patna", "jaipur", "ujjain", "kashi", "mathura", "agra", "madurai", "salem", "chennai")
NAMES = ("ashoka", "akbar", "shivaji", "harsha", "rajaraja", "karikalan", "kambar", "bharati")
FILLER = ("the", "city", "is", "a", "large", "river", "near", "old", "temple", "market", "road", "school", "village",
          "state", "hills", "farm", "people", "live", "there", "and", "of", "in", "with", "many")


def page(rng: np.random.Generator, answered: bool) -> tuple[dict, dict]:
    """(the JSON line without its annotations, its annotation) of one smoke page."""
    place = str(rng.choice(PLACES))
    about = place if answered else str(rng.choice([p for p in PLACES if p != place]))
    tokens = ["<H1>", about.title(), "</H1>"]
    candidates, fact, long = [], None, (-1, -1)
    paragraphs = int(rng.integers(4, 8))
    asks = str(rng.choice(NAMES)) if answered and rng.random() < 0.25 else None  # a YES/NO question's founder
    yes_no = "NONE"
    at = int(rng.integers(paragraphs))
    for k in range(paragraphs):
        start = len(tokens)
        if k != at and rng.random() < 0.2:  # a table: the row's cells nested candidates inside it
            tokens += ["<Table>", "<Tr>", "<Td>", about, "</Td>", "<Td>", *rng.choice(FILLER, 3), "</Td>", "</Tr>",
                       "</Table>"]
            candidates.append({"start_token": start, "end_token": len(tokens), "top_level": True})
            candidates.append({"start_token": start + 2, "end_token": start + 5, "top_level": False})
            continue
        words = [str(w) for w in rng.choice(FILLER, int(rng.integers(6, 14)))]
        tokens.append("<P>")
        if k == at and answered:
            year = str(rng.choice(YEARS))
            cut = int(rng.integers(len(words) + 1))
            founder = (asks if rng.random() < 0.5 else str(rng.choice([n for n in NAMES if n != asks]))) if asks \
                else str(rng.choice(NAMES))
            sentence = [founder, "founded", about, "in"]
            yes_no = ("YES" if founder == asks else "NO") if asks else "NONE"
            fact = len(tokens) + cut + len(sentence)
            words = words[:cut] + sentence + [year] + words[cut:]
        tokens += words + ["</P>"]
        candidates.append({"start_token": start, "end_token": len(tokens), "top_level": True})
        if k == at and answered:
            long = (start, len(tokens))
    question = f"was {place} founded by {asks}" if asks else f"when was {place} founded"
    line = {"example_id": str(int(rng.integers(10**18, 9 * 10**18))), "question_text": question,
            "document_text": " ".join(tokens), "long_answer_candidates": candidates}
    if fact is None:
        note = {"long_answer": {"start_token": -1, "end_token": -1, "candidate_index": -1}, "short_answers": [],
                "yes_no_answer": "NONE"}
    else:
        note = {"long_answer": {"start_token": long[0], "end_token": long[1], "candidate_index": 0},
                "short_answers": [] if asks else [{"start_token": fact, "end_token": fact + 1}], "yes_no_answer": yes_no}
    return line, note


def tf2qa(folder: Path, seed: int = 0, train: int = 180, test: int = 30) -> None:
    """As prepare.py writes them: pandas' to_json(orient="records", lines=True) (its "/" escaped "\\/"), the
    training lines with Kaggle's document_url, the test lines with four keys, the sample _short then _long."""
    rng = np.random.default_rng(seed)
    lines = [page(rng, rng.random() < 0.67) for _ in range(train + test)]
    pd.DataFrame([{**line, "annotations": [note], "document_url": f"https://en.wikipedia.org//w/index.php?title=P{i}"}
                  for i, (line, note) in enumerate(lines[:train])]).to_json(
        folder / "simplified-nq-train.jsonl", orient="records", lines=True)
    pd.DataFrame([line for line, _ in lines[train:]]).to_json(folder / "simplified-nq-test.jsonl", orient="records",
                                                              lines=True)
    rows = [(f"{line['example_id']}_{w}", "") for line, _ in lines[train:] for w in ("short", "long")]
    pd.DataFrame(rows, columns=["example_id", "PredictionString"]).to_csv(folder / "sample_submission.csv", index=False)
