"""Span extraction's data: (question, context) pairs cut into windows of token ids with each token's characters in
its context, the answer's characters as start and end tokens, and the best valid span of a window's logits mapped
back to characters.

A context longer than `max_length` (with its question and the special tokens) is cut into windows that overlap by
`stride` tokens, as Hugging Face's question-answering examples cut them (a fast tokenizer's
`return_overflowing_tokens` and `return_offsets_mapping`): every context token is in some window, and an answer
that one window cuts is whole in the next. A window whose context holds the whole answer learns its first and last
token; any other learns position 0 (the first special token: "not here"). Prediction takes each window's n-best
starts and ends, keeps the pairs that are a valid span (start <= end, at most `max_answer` tokens, both in the
context), scores a pair by the sum of its logits, and keeps each example's best over all its windows.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kit.data.batch import Batch
from kit.data.text import TextBatches, Tokens
from kit.errors import KitError

N_BEST = 20  # starts and ends of a window paired (Hugging Face's n_best_size)
OUTSIDE = -1  # a token's characters where it is no context token (the question, a special token, padding)
PAD_LOGIT = -1e4  # a padded position's logit: finite in fp16, far below any real one
NO_WORD = "none"  # a span cell's text where both its context and its question are blank: a cell must hold a word


@dataclass
class Windows:
    """Every window's token ids (`tokens`, window w at ids[offsets[w]:offsets[w + 1]]), the example each is of, and
    each token's [start, end) characters in its example's context (OUTSIDE where it is not a context token)."""

    tokens: Tokens
    example: np.ndarray  # (windows,) int64
    chars: np.ndarray  # (tokens in all, 2) int32, aligned with tokens.ids
    contexts: list[str]
    questions: list[str]  # a blank context's span is its question (a span cell must hold a word)
    answers: list | None = None  # the training examples' answers (None for the test set); NQ's: its pages (kit.data.nq)

    def __len__(self) -> int:
        return len(self.tokens)

    def span(self, window: int) -> np.ndarray:
        """(window's tokens, 2) the characters of each of its tokens."""
        return self.chars[self.tokens.offsets[window] : self.tokens.offsets[window + 1]]


def windows(tokenizer, questions: Sequence[str], contexts: Sequence[str], max_length: int, stride: int,
            answers: Sequence[str] | None = None, source: str = "pairs") -> Windows:
    """The pairs cut into windows of at most `max_length` tokens overlapping by `stride` (a fast tokenizer's);
    KitError where a question leaves no room for its context (`source` names the table in it)."""
    ids, bounds, example, chars = [], [0], [], []
    for start in range(0, len(contexts), 1024):  # a fast tokenizer works a batch of pairs on all cores
        room_for_questions(tokenizer, questions[start : start + 1024], max_length, stride, source, start)
        enc = tokenizer(list(questions[start : start + 1024]), list(contexts[start : start + 1024]),
                        truncation="only_second", max_length=max_length, stride=stride,
                        return_overflowing_tokens=True, return_offsets_mapping=True)
        for w, row in enumerate(enc["input_ids"]):
            ids.append(np.asarray(row, np.int32))
            bounds.append(bounds[-1] + len(row))
            example.append(start + enc["overflow_to_sample_mapping"][w])
            where = np.asarray(enc["offset_mapping"][w], np.int32).reshape(-1, 2)
            context = np.array([s == 1 for s in enc.sequence_ids(w)])
            where[~context] = OUTSIDE
            chars.append(where)
    tokens = Tokens(np.concatenate(ids) if ids else np.zeros(0, np.int32), np.asarray(bounds, np.int64))
    return Windows(tokens, np.asarray(example, np.int64), np.concatenate(chars) if chars else np.zeros((0, 2), np.int32),
                   list(contexts), list(questions), None if answers is None else list(answers))


def room_for_questions(tokenizer, questions: Sequence[str], max_length: int, stride: int, source: str,
                       first: int = 0) -> None:
    """KitError unless each question, with the pair's special tokens and `stride` context tokens, fits in
    `max_length` (the tokenizer's truncation fails on such a pair, in Rust: "Sequence to truncate too short")."""
    if not len(questions):
        return
    special = tokenizer.num_special_tokens_to_add(pair=True)
    lengths = np.array([len(q) for q in tokenizer(list(questions), add_special_tokens=False)["input_ids"]])
    longest = int(lengths.argmax())
    if lengths[longest] + special + stride >= max_length:
        text = questions[longest] if len(questions[longest]) <= 40 else questions[longest][:40] + "..."
        raise KitError(f"{source}: the question of pair {first + longest + 1} ('{text}') is {int(lengths[longest])} "
                       f"tokens, which with {special} special tokens and doc_stride {stride} leaves no room for its context in "
                       f"max_length {max_length}; raise max_length, lower doc_stride, or check [data] text_columns' "
                       "order (the question first, then the context)")


def answer_chars(contexts: Sequence[str], answers: Sequence[str], starts: Sequence | None = None) -> np.ndarray:
    """(examples, 2) each answer's [start, end) characters: at its given first character (`starts`, such as chaii's
    answer_start: an answer found in several places is the one the annotator marked) where its text is there, else
    its first place in its context (the same letters in another case where the exact ones are not there, as
    tweet-sentiment's selected_text is found in its text); (-1, -1) where it is not in the context at all."""
    out = np.full((len(contexts), 2), -1, np.int64)
    for i, (context, answer) in enumerate(zip(contexts, answers)):
        at = -1
        if starts is not None and np.isfinite(given := float(starts[i])):
            at = int(given) + len(answer) - len(answer.lstrip())  # the answer's leading spaces are not its text
        answer = answer.strip()
        if not answer:
            continue
        if at < 0 or context[at : at + len(answer)] != answer:
            at = context.find(answer)
        if at < 0:
            at = context.lower().find(answer.lower())
        if at >= 0:
            out[i] = at, at + len(answer)
    return out


def token_targets(w: Windows, chars: np.ndarray) -> np.ndarray:
    """(windows, 2) int64 the first and last token of each window's answer (`chars`: each example's answer
    characters), or (0, 0) where the window's context does not hold the whole answer."""
    out = np.zeros((len(w), 2), np.int64)
    for i in range(len(w)):
        a, b = chars[w.example[i]]
        span = w.span(i)
        context = np.flatnonzero(span[:, 0] >= 0)
        if a < 0 or not len(context) or span[context[0], 0] > a or span[context[-1], 1] < b:
            continue
        out[i] = context[span[context, 1] > a][0], context[span[context, 0] < b][-1]
    return out


def window_best(start: np.ndarray, end: np.ndarray, span: np.ndarray, max_answer: int,
                n_best: int = N_BEST) -> tuple[float, int, int]:
    """(score, first character, end character) of the best valid span of one window's start and end logits (each
    (tokens,), padding cut off); (-inf, -1, -1) where it has none."""
    valid = span[:, 0] >= 0
    if not valid.any():
        return -np.inf, -1, -1
    s_logit, e_logit = np.where(valid, start, -np.inf), np.where(valid, end, -np.inf)
    starts = np.argsort(-s_logit, kind="stable")[:n_best]
    ends = np.argsort(-e_logit, kind="stable")[:n_best]
    scores = s_logit[starts][:, None] + e_logit[ends][None, :]  # (n_best, n_best)
    length = ends[None, :] - starts[:, None]
    scores = np.where((length >= 0) & (length < max_answer), scores, -np.inf)
    if not np.isfinite(scores).any():
        return -np.inf, -1, -1
    i, j = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return float(scores[i, j]), int(span[starts[i], 0]), int(span[ends[j], 1])


def best_spans(logits: np.ndarray, w: Windows, max_answer: int, n_best: int = N_BEST) -> np.ndarray:
    """(examples, 2) each example's best valid span's [start, end) characters over all its windows (`logits`:
    (windows, L, 2) start and end logits, L at least each window's length); (-1, -1) where none is valid."""
    best = np.full(len(w.contexts), -np.inf)
    out = np.full((len(w.contexts), 2), -1, np.int64)
    for i in range(len(w)):
        n = int(w.tokens.lengths[i])
        score, a, b = window_best(logits[i, :n, 0], logits[i, :n, 1], w.span(i), max_answer, n_best)
        if score > best[w.example[i]]:
            best[w.example[i]] = score
            out[w.example[i]] = a, b
    return out


def span_texts(contexts: Sequence[str], chars: np.ndarray) -> list[str]:
    """Each span's text; the whole context where there is no span (-1)."""
    return [c[a:b] if a >= 0 else c for c, (a, b) in zip(contexts, chars)]


def worded(texts: Sequence[str], questions: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Each text, or where it holds no word (a blank context's) its question, or NO_WORD where that is blank too;
    and where each was replaced. A grader reads an empty cell as an empty text, and tweet-sentiment's divides by
    zero where the answer is empty too."""
    blank = np.array([not t.split() for t in texts], bool)
    out = [(q if q.split() else NO_WORD) if b else t for t, q, b in zip(texts, questions, blank)]
    return out, blank


class SpanBatches(TextBatches):
    """Text batches of windows, each with its window number ("window": (B,) int64), which the validation rows'
    decoding reads its characters by."""

    def fields(self, rows: np.ndarray) -> Batch:
        batch = super().fields(rows)
        batch["window"] = torch.from_numpy(np.asarray(rows, np.int64))
        return batch
