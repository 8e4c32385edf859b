"""tensorflow2-question-answering's Natural Questions files (simplified-nq-train.jsonl, simplified-nq-test.jsonl):
one JSON object a line, a Wikipedia page's `document_text` (HTML-like tokens such as <P> and words, split on single
spaces), its `question_text`, its `long_answer_candidates` (token ranges, `top_level` or nested) and, in training,
one annotation: a `long_answer` (a candidate's range, start_token -1 where none), `short_answers` (token ranges)
and `yes_no_answer` ("YES", "NO" or "NONE"). Answers are written "start:end" in whitespace tokens, end exclusive.

- `read`: the lines streamed one at a time (the real training file is ~17 GB), a bounded sample kept: every
  answered example up to `keep`, the unanswered ones down-sampled to `negatives` of them (as competitors did:
  two thirds of NQ's questions have no short answer), reservoir-sampled so the sample is uniform over the file.
- Token <-> character mapping of a document (the spans template works on characters), the long answer from the
  candidates (the top-level one holding the short span) and the two submission strings of an example.
- `StreamedBest`: each example's best span over its windows, fed a batch of windows' logits at a time, so a
  30,000-token page (100+ windows) never holds more than a batch of logits.
- The answer type (`KINDS`: none, span, YES, NO), which a head on each window's first token learns, as the NQ
  baseline's does on its [CLS]: its 4 logits ride in `KIND_ROWS` extra positions after a window's tokens, so one
  array holds a window's logits; `window_answer` writes YES/NO where the head's yes or no logit wins.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kit.data.spans import N_BEST, Windows, window_best
from kit.errors import KitError

YES_NO = ("YES", "NO")
KINDS = ("none", "span", *YES_NO)  # a window's answer type: none in it, a short span, YES, NO
KIND_ROWS = 2  # positions after a window's tokens that hold its 4 answer-type logits, 2 a position


@dataclass
class Example:
    example_id: str
    question: str
    document: str  # document_text: tokens joined by single spaces
    candidates: np.ndarray  # (candidates, 2) int64 [start, end) tokens of the top-level long answer candidates
    short: tuple[int, int] | None = None  # the first short answer's [start, end) tokens (training only)
    long: tuple[int, int] | None = None  # the long answer's [start, end) tokens
    yes_no: str = "NONE"
    shorts: list[tuple[int, int]] = field(default_factory=list)  # every short answer (the grader accepts any)

    @property
    def answered(self) -> bool:
        return self.long is not None or self.short is not None or self.yes_no != "NONE"


def parse(line: str, where: str) -> Example:
    """One JSONL line as an Example; KitError naming `where` (file:line) when a field is missing."""
    try:
        row = json.loads(line)
        candidates = np.array([(c["start_token"], c["end_token"]) for c in row["long_answer_candidates"]
                               if c.get("top_level", True)], np.int64).reshape(-1, 2)
        example = Example(str(row["example_id"]), str(row["question_text"]), str(row["document_text"]), candidates)
    except (ValueError, KeyError, TypeError) as e:
        raise KitError(f"{where}: not a Natural Questions line (example_id, question_text, document_text, "
                       f"long_answer_candidates): {type(e).__name__}: {e}") from None
    notes = row.get("annotations") or []
    if notes:
        note = notes[0]
        long = note.get("long_answer") or {}
        if int(long.get("start_token", -1)) >= 0:
            example.long = int(long["start_token"]), int(long["end_token"])
        example.shorts = [(int(s["start_token"]), int(s["end_token"])) for s in note.get("short_answers") or []]
        example.short = example.shorts[0] if example.shorts else None
        example.yes_no = str(note.get("yes_no_answer", "NONE"))
    return example


def lines(path: Path) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield number, line


def read(path: Path, keep: int | None = None, negatives: float = 1.0, seed: int = 0) -> tuple[list[Example], int]:
    """The examples of a JSONL file streamed, and how many lines were read: at most `keep` examples (None: all),
    the unanswered ones (no answer of any kind) `negatives` of the answered ones at most, each kind reservoir-sampled
    (uniform over the file) to its share of `keep`. Only kept examples are held: memory is bounded by `keep`,
    whatever the file's size."""
    rng = np.random.default_rng(seed)
    caps = (None, None) if keep is None else (int(np.ceil(keep / (1 + negatives))), keep - int(np.ceil(keep / (1 + negatives))))
    pools: tuple[list[Example], list[Example]] = ([], [])
    seen = [0, 0]
    for number, text in lines(path):
        example = parse(text, f"{path.name}:{number}")
        k = 0 if example.answered else 1
        seen[k] += 1
        if caps[k] is None or len(pools[k]) < caps[k]:
            pools[k].append(example)
        elif (j := int(rng.integers(seen[k]))) < caps[k]:  # reservoir: each line kept with chance cap / seen
            pools[k][j] = example
    answered, empty = pools
    if not answered and not empty:
        raise KitError(f"{path.name}: no examples (an empty file)")
    n_empty = min(len(empty), int(np.ceil(negatives * len(answered))) if answered else len(empty))
    chosen = sorted(rng.choice(len(empty), n_empty, replace=False)) if n_empty else []
    return answered + [empty[i] for i in chosen], sum(seen)


def check(path: Path, first: int = 100) -> int:
    """KitError unless the file's first `first` lines are Natural Questions pages (a 17 GB file is not read whole
    for a check); how many were read."""
    n = 0
    for number, text in lines(path):
        parse(text, f"{path.name}:{number}")
        n += 1
        if n >= first:
            break
    if not n:
        raise KitError(f"{path.name}: no examples (an empty file)")
    return n


def token_chars(document: str) -> np.ndarray:
    """(tokens, 2) int64 each whitespace token's [start, end) characters in `document` (split on single spaces, as
    the grader's extract_string splits it: two spaces make an empty token)."""
    lengths = np.array([len(t) for t in document.split(" ")], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
    return np.stack([starts, starts + lengths], axis=1)


def span_chars(tokens: np.ndarray, span: tuple[int, int]) -> tuple[int, int]:
    """A [start, end) token span as its [start, end) characters (`tokens`: token_chars')."""
    a, b = span
    if not 0 <= a < b <= len(tokens):
        raise KitError(f"token span {a}:{b} is not in a document of {len(tokens)} tokens")
    return int(tokens[a, 0]), int(tokens[b - 1, 1])


def char_tokens(tokens: np.ndarray, a: int, b: int) -> tuple[int, int]:
    """The [start, end) whitespace tokens covering characters [a, b); (-1, -1) where the span is empty."""
    if a < 0 or b <= a:
        return -1, -1
    first = int(np.searchsorted(tokens[:, 1], a, side="right"))  # the first token ending after a
    last = int(np.searchsorted(tokens[:, 0], b, side="left"))  # tokens starting before b
    return (first, last) if first < last else (-1, -1)


def long_answer(candidates: np.ndarray, short: tuple[int, int]) -> tuple[int, int]:
    """The smallest top-level candidate holding the short span; (-1, -1) where none holds it."""
    a, b = short
    if a < 0 or not len(candidates):
        return -1, -1
    holds = (candidates[:, 0] <= a) & (candidates[:, 1] >= b)
    if not holds.any():
        return -1, -1
    rows = np.flatnonzero(holds)
    best = rows[np.argmin(candidates[rows, 1] - candidates[rows, 0])]
    return int(candidates[best, 0]), int(candidates[best, 1])


def strings(short: tuple[int, int], long: tuple[int, int], answer: bool, yes_no: str = "NONE") -> tuple[str, str]:
    """An example's (long, short) PredictionStrings: blank where `answer` is False (its score under the threshold);
    the short one "YES"/"NO" where `yes_no` says so, else "start:end"."""
    if not answer:
        return "", ""
    long_s = f"{long[0]}:{long[1]}" if long[0] >= 0 else ""
    if yes_no in YES_NO:
        return long_s, yes_no
    return long_s, (f"{short[0]}:{short[1]}" if short[0] >= 0 else "")


def split(logits):
    """(B, L + KIND_ROWS, 2) logits, numpy or torch -> (B, L, 2) start and end logits, (B, 4) answer-type logits."""
    return logits[:, :-KIND_ROWS], logits[:, -KIND_ROWS:].reshape(len(logits), len(KINDS))


def window_kinds(w: Windows, y: np.ndarray, examples: list[Example]) -> np.ndarray:
    """(windows,) int64 each training window's answer type (an index of KINDS): "span" where it holds its
    example's short answer (`y`: token_targets'), YES/NO where its context holds the long answer of a YES/NO
    example whole (or, a long answer longer than a window, lies inside it: a window that only grazes the evidence
    is taught "none"), else "none"."""
    out = np.zeros(len(w), np.int64)
    tokens: dict[int, np.ndarray] = {}
    for i in range(len(w)):
        e = examples[w.example[i]]
        if y[i, 0] > 0:
            out[i] = KINDS.index("span")
        elif e.yes_no in YES_NO and e.long is not None:
            if w.example[i] not in tokens:
                tokens[w.example[i]] = token_chars(e.document)
            a, b = span_chars(tokens[w.example[i]], e.long)
            chars = w.span(i)
            chars = chars[chars[:, 0] >= 0]
            if len(chars) and ((chars[0, 0] <= a and chars[-1, 1] >= b) or (chars[0, 0] >= a and chars[-1, 1] <= b)):
                out[i] = KINDS.index(e.yes_no)
    return out


def window_answer(start: np.ndarray, end: np.ndarray, kinds: np.ndarray, span: np.ndarray, max_answer: int,
                  n_best: int = N_BEST) -> tuple[float, int, int, str]:
    """(score, first character, end character, YES/NO or "NONE") of one window (`start`, `end`: its tokens' logits,
    `kinds`: its 4 answer-type logits): its best valid span, and YES/NO where the yes or no logit beats the none
    and span ones, scored as its span plus that margin: one scale with the spans', so that the answer cut chosen
    out of fold blanks a weak YES/NO as it blanks a weak span (its span still places the long answer)."""
    score, a, b = window_best(start, end, span, max_answer, n_best)
    k = int(np.argmax(kinds))
    if KINDS[k] in YES_NO:
        return score + float(kinds[k] - kinds[:2].max()), a, b, KINDS[k]
    return score, a, b, "NONE"


class StreamedBest:
    """Each example's best valid span over its windows, its score and its characters, taken a batch of windows'
    logits at a time (`update`): what prediction keeps is (examples,) scores, spans and answer types, never every
    window's logits. A window answering YES/NO scores its span plus its margin (`window_answer`)."""

    def __init__(self, w: Windows, max_answer: int, n_best: int = N_BEST):
        self.w, self.max_answer, self.n_best = w, max_answer, n_best
        self.score = np.full(len(w.contexts), -np.inf)
        self.chars = np.full((len(w.contexts), 2), -1, np.int64)
        self.yes_no = np.full(len(w.contexts), "NONE", dtype=object)
        self.peak = 0  # the most logits' bytes one update held

    def update(self, rows: np.ndarray, logits: np.ndarray) -> None:
        """`rows`: (B,) window numbers; `logits`: (B, L + KIND_ROWS, 2) their start and end logits, then their
        answer-type logits (`split`)."""
        self.peak = max(self.peak, logits.nbytes)
        tokens, kinds = split(np.asarray(logits, np.float32))  # fp16 logits summed in fp32
        for i, window in enumerate(np.asarray(rows)):
            n = int(self.w.tokens.lengths[window])
            s, a, b, yes_no = window_answer(tokens[i, :n, 0], tokens[i, :n, 1], kinds[i], self.w.span(window),
                                            self.max_answer, self.n_best)
            example = self.w.example[window]
            if s > self.score[example]:
                self.score[example], self.chars[example], self.yes_no[example] = s, (a, b), yes_no
