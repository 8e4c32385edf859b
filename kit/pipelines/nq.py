"""The spans template on tensorflow2-question-answering's Natural Questions (its metric nq_micro_f1 says so): the
JSONL pages streamed into a bounded sample (kit.data.nq.read: [params] max_examples, the unanswered ones down-
sampled to `negatives` of the answered), each (question, page) pair cut into strided windows as the spans template
cuts a context, each window learning the first short answer's first and last token (or "not here", the first
token, for an unanswered page or a window without it).

Prediction keeps each page's best span over its windows (kit.data.nq.StreamedBest), maps its characters back to
whitespace tokens ("start:end", the short answer) and to the smallest top-level candidate holding it (the long
answer), and answers only where its score reaches the threshold chosen on the out-of-fold pages (kit.train.nq.choose);
the others are left blank, as two thirds of NQ's are unanswered. A second head on each window's [CLS] learns its
answer type (none, a span, YES, NO: kit.data.nq.KINDS, as the NQ baseline's does); a window whose YES or NO logit
beats the none and span ones answers YES/NO (1% of NQ's), its long answer the candidate holding its best span.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, nq, spans
from kit.errors import KitError
from kit.models.text import fingerprint
from kit.pipelines import base
from kit.runtime import runs
from kit.train import metrics
from kit.train import nq as nq_metric
from kit.train.targets import Target

METRIC = "nq_micro_f1"
SUFFIXES = ("_long", "_short")


def jsonl(session, name: str, what: str) -> Path:
    path = archives.find_file(session.data_dir, name, what, log=session.log)
    if path.suffix != ".jsonl":
        raise KitError(f"{path.name}: metric {METRIC} reads Natural Questions' JSONL (simplified-nq-*.jsonl), one "
                       "page a line; set [data] train and test to those files")
    return path


def check_pages(session, name: str, what: str) -> None:
    """The file's first pages read as Natural Questions' (the data check: the whole file is not read)."""
    nq.check(jsonl(session, name, what))


def examples(session, name: str, what: str, keep: int | None, negatives: float, seed: int,
             labelled: bool = True) -> tuple[list[nq.Example], Path]:
    path = jsonl(session, name, what)
    found, seen = nq.read(path, keep, negatives, seed)
    answered = f", {sum(e.answered for e in found)} answered" if labelled else ""  # a test page has no annotation
    session.log(f"{what:<15}{len(found)} of {seen} pages kept{answered}"
                + (f" (at most {keep}, unanswered ones at most {negatives} of the answered)" if keep else ""))
    return found, path


def sample_rows(sample: pd.DataFrame, id_column: str, test: list[nq.Example], path: Path) -> np.ndarray:
    """(test pages, 2) the sample rows of each page's "<example_id>_long" and "<example_id>_short"."""
    index = pd.Index(sample[id_column].astype(str))
    where = np.stack([index.get_indexer([e.example_id + s for e in test]) for s in SUFFIXES], axis=1)
    if (where < 0).any() or len(sample) != 2 * len(test):
        i = np.flatnonzero((where < 0).any(1))
        detail = (f"page {test[i[0]].example_id} has no _long or _short row" if len(i)
                  else f"{len(sample)} rows for {len(test)} pages")
        raise KitError(f"{path.name}: {detail}; the sample lists each test page's _long and _short rows")
    return where.astype(np.int64)


def load(pipe, folder: Path, tokenizer, key: str, recipe: dict | None = None) -> dict:
    """SpanData's fields for NQ pages: training windows and targets (none in predict mode, `recipe` the trained
    run's)."""
    s, spec, p = pipe.session, pipe.spec, pipe.p
    sample, sample_path = base.read_sample(s)
    columns = base.sample_targets(sample, spec, sample_path)
    if len(columns) != 1:
        raise KitError(f"{sample_path.name}: the spans template fills one column, and the sample has {columns}")
    target = Target(nq_metric.NQ.name, tuple(columns))
    max_length = recipe["max_length"] if recipe else p.max_length
    stride = recipe["doc_stride"] if recipe else p.doc_stride
    test, test_path = examples(s, spec.test, "test pages", None, 1.0, p.seed, labelled=False)
    where = sample_rows(sample, spec.id_column, test, sample_path)
    test_w = spans.windows(tokenizer, [e.question for e in test], [e.document for e in test], max_length, stride,
                           source=test_path.name)
    test_w.answers = test  # the pages, for their candidates
    if recipe is not None:
        return dict(train_windows=None, test_windows=test_w, y=None, target=target, sample=sample, test_positions=where,
                    pad_id=tokenizer.pad_token_id, folder=folder, recipe=recipe)
    train, train_path = examples(s, spec.train, "training pages", p.max_examples or None, p.negatives, p.seed)
    chars = np.array([nq.span_chars(nq.token_chars(e.document), e.short) if e.short else (-1, -1) for e in train],
                     np.int64).reshape(-1, 2)
    w = spans.windows(tokenizer, [e.question for e in train], [e.document for e in train], max_length, stride,
                      source=train_path.name)
    w.answers = train
    y = spans.token_targets(w, chars)
    y = np.concatenate([y, nq.window_kinds(w, y, train)[:, None]], axis=1)  # (windows, 3): first, last, answer type
    recipe = {"target": base.target_record(target), "prior": [0.0], "max_length": max_length, "doc_stride": stride,
              "tokenizer": key}
    identity = runs.digest(np.array([e.example_id for e in train]),
                           np.array([fingerprint(folder, key), str(max_length), str(stride)]))
    return dict(train_windows=w, test_windows=test_w, y=y, target=target, sample=sample, test_positions=where,
                pad_id=tokenizer.pad_token_id, folder=folder, recipe=recipe, identity=identity,
                groups=np.array([e.example_id for e in train])[w.example])


def threshold(session, oof: list[dict]) -> float:
    """The score at or above which a test page is answered: the out-of-fold pages' best (+inf: none answered)."""
    if not oof:
        session.warn("no out-of-fold pages to choose the answer threshold on: every answer is left blank")
        return float("inf")
    rows = metrics.join_rows(oof)
    pred, target = np.asarray(rows["pred"], np.float64), np.asarray(rows["target"])
    order = np.lexsort((-pred[:, 0], target))
    first = np.r_[True, target[order][1:] != target[order][:-1]]
    best = pred[order[first]]
    cut, value = nq_metric.choose(best[:, 0], best[:, 1], best[:, 2])
    answered = int((best[:, 0] >= cut).sum())
    session.log(f"answer cut     {cut:.3f}: {answered} of {len(best)} out-of-fold pages answered, micro F1 {value:.4f}")
    return cut


def cut(pipe, data, pred: np.ndarray, oof: list[dict]) -> np.ndarray:
    """(sample rows, 1) PredictionStrings: each test page's best span over its windows' logits, answered where its
    score reaches the out-of-fold threshold, else blank (and blank everywhere where no fold predicted)."""
    w = data.test_windows
    out = np.full((len(data.sample), 1), "", dtype=object)
    if pred.ndim != 3:
        return out
    at = threshold(pipe.session, oof)
    best = nq.StreamedBest(w, pipe.p.max_answer_length)
    for first in range(0, len(w), 256):  # a batch of windows at a time
        rows = np.arange(first, min(first + 256, len(w)))
        best.update(rows, pred[rows])
    answered = 0
    for i, e in enumerate(w.answers):
        short = nq.char_tokens(nq.token_chars(e.document), *best.chars[i])
        yes = bool(best.score[i] >= at) and (short[0] >= 0 or best.yes_no[i] in nq.YES_NO)
        long, short_s = nq.strings(short, nq.long_answer(e.candidates, short), yes, best.yes_no[i])
        out[data.test_positions[i, 0], 0], out[data.test_positions[i, 1], 0] = long, short_s
        answered += yes
    yes_no = int(sum(best.yes_no[i] in nq.YES_NO and best.score[i] >= at for i in range(len(w.answers))))
    pipe.session.log(f"answers        {answered} of {len(w.answers)} test pages answered, {yes_no} of them YES/NO")
    return out


def judge(data, rows: dict) -> base.Judged:
    pred, target = np.asarray(rows["pred"]), np.asarray(rows["target"])
    score = nq_metric.score(METRIC, pred, target)
    blank = pd.Series(pred[:, 2]).groupby(target).first().to_numpy()  # every answer blank: the trivial submission
    return base.Judged(score, float(blank.sum() / (2 * len(blank))), "every answer blank", cut="the out-of-fold answer cut")
