"""Span extraction: each row's answer is a span of its context (tweet-sentiment-extraction's selected_text in its
text, given the sentiment; chaii's answer in its article, given the question), found by a Hugging Face encoder with
start and end logits over the tokens.

[data] text_columns names the pair: the question (the sentiment) first, then the context. The pairs are cut into
windows of max_length tokens overlapping by doc_stride (kit.data.spans), each a training row; folds keep a
context's windows together. Each window learns its answer's first and last token (or "not here"); the fold
ensemble averages each test window's logits, and `cut` keeps each context's best valid span over its windows,
mapped back to the context's characters. The metric is the word Jaccard (kit.train.spans), checked as each
epoch's validation score on the best-scored window of each context, as the submission is made.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from torch import nn

from kit.data import archives, spans, tables, text
from kit.data.nq import KIND_ROWS, KINDS
from kit.data.spans import SpanBatches, Windows
from kit.data.text import Tokens
from kit.errors import KitError
from kit.models.text import SpanModel, checked_positions, fingerprint
from kit.pipelines import base, nq
from kit.pipelines.text import MAX_EMPTY_SHARE, load_tokenizer, without_empty_texts
from kit.runtime import paths, runs
from kit.runtime.session import Session
from kit.train import cv, metrics
from kit.train.nq import NQObjective
from kit.train.spans import SPAN, SpanObjective
from kit.train.targets import Target


@dataclass
class SpanData:
    train_windows: Windows | None  # None in predict mode
    test_windows: Windows
    y: np.ndarray | None  # (training windows, 2) the answer's first and last token, (0, 0) where not in the window
    target: Target  # kind "span": the sample's one column the spans fill
    sample: pd.DataFrame
    test_positions: np.ndarray  # (test contexts,) the sample row of each; NQ's (test pages, 2): its _long and _short
    pad_id: int
    folder: Path  # the model folder
    recipe: dict  # the target, max_length, doc_stride, max_answer_length, the tokenizer's key
    identity: str = ""
    groups: np.ndarray | None = None  # each training window's group: its context's (or [data] group_column's)
    assigned: np.ndarray | None = None  # each training window's [data] fold_column value

    @property
    def train(self) -> Tokens | None:
        return None if self.train_windows is None else self.train_windows.tokens

    @property
    def test(self) -> Tokens:
        return self.test_windows.tokens


class SpansPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self._announced = False

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> SpanData:
        s, spec, p = self.session, self.spec, self.p
        self._required()
        if not p.model_path:  # not a data check: kit init's draft has none yet
            raise KitError("model_path is empty; set it to the Hugging Face model folder (config, weights, tokenizer) "
                           "that an attached dataset or model holds")
        folder = paths.find_model(p.model_path)
        tokenizer, key = self._tokenizer(folder)
        if s.trained is not None:
            if self.pages:
                return self._described(SpanData(**nq.load(self, folder, tokenizer, key, s.trained.recipe)))
            return self._load_test(s.trained.recipe, folder, tokenizer, key)
        checked_positions(folder, p.max_length)
        if p.doc_stride * 2 >= p.max_length:
            raise KitError(f"doc_stride {p.doc_stride} is half of max_length {p.max_length} or more: windows would "
                           "overlap more than they advance; set doc_stride below max_length / 2 (a quarter is usual)")
        if self.pages:
            return self._described(SpanData(**nq.load(self, folder, tokenizer, key)))
        train, train_path, sample, sample_path, test, test_path, target, (groups, assigned) = self._read()
        question, context = spec.text_columns
        contexts = train[context].astype(str).tolist()
        answers = train[spec.target_column].astype(str).tolist()
        starts = self._starts(train, train_path)
        chars = spans.answer_chars(contexts, answers, starts)
        if starts is not None:
            spaces = np.array([len(a) - len(a.lstrip()) for a in answers])  # an answer's leading spaces
            shift = chars[:, 0] - starts  # NaN where no start is given
            placed = int(((shift >= 0) & (shift <= spaces)).sum())
            s.log(f"answers        {placed} of {len(train)} placed at '{spec.answer_start_column}'"
                  + (", the others found in their context" if placed < len(train) else ""))
        lost = chars[:, 0] < 0
        if lost.any():
            line = (f"{train_path.name}: the answer ('{spec.target_column}') is not in its context ('{context}') in "
                    f"{int(lost.sum())} rows, such as row {int(np.flatnonzero(lost)[0]) + 2}")
            if lost.mean() > MAX_EMPTY_SHARE:
                raise KitError(f"{line}; each answer must be a piece of its context's text")
            s.warn(f"{line}; they are left out of training")
            keep = ~lost
            train, chars = train[keep].reset_index(drop=True), chars[keep]
            groups = None if groups is None else groups[keep]
            assigned = None if assigned is None else assigned[keep]
            contexts, answers = [c for c, k in zip(contexts, keep) if k], [a for a, k in zip(answers, keep) if k]
        w = spans.windows(tokenizer, train[question].astype(str).tolist(), contexts, p.max_length, p.doc_stride, answers,
                          train_path.name)
        y = spans.token_targets(w, chars)
        test_windows, where = self._test(test, test_path, sample, sample_path, tokenizer, p.max_length, p.doc_stride)
        recipe = {"target": base.target_record(target), "prior": [0.0], "max_length": p.max_length,
                  "doc_stride": p.doc_stride, "tokenizer": key}
        identity = runs.digest(pd.util.hash_pandas_object(train[[question, context, spec.target_column]],
                                                          index=False).to_numpy(),
                               np.array([fingerprint(folder, key), str(p.max_length), str(p.doc_stride)]))
        data = SpanData(w, test_windows, y, target, sample, where, tokenizer.pad_token_id, folder, recipe, identity,
                        (groups if groups is not None else np.arange(len(train)).astype(str))[w.example],
                        None if assigned is None else assigned[w.example])
        s.log(self.describe(data))
        return data

    @property
    def pages(self) -> bool:
        """tensorflow2-question-answering's Natural Questions pages (kit.pipelines.nq), by its metric."""
        return self.spec.metric == nq.METRIC

    def _described(self, data: SpanData) -> SpanData:
        self.session.log(self.describe(data))
        return data

    def _starts(self, train: pd.DataFrame, path: Path) -> np.ndarray | None:
        """[data] answer_start_column's values (NaN where a cell is no number), or None where it is unset."""
        column = self.spec.answer_start_column
        if not column:
            return None
        tables.require_columns(train, [column], path)
        return pd.to_numeric(train[column], errors="coerce").to_numpy(np.float64)

    def check_data(self) -> None:
        self._required()
        if self.pages:
            nq.check_pages(self.session, self.spec.train, "training pages")
            return
        train, train_path, *_ = self._read()
        self._starts(train, train_path)

    def _required(self) -> None:
        spec = self.spec
        if len(spec.text_columns) != 2:
            raise KitError(f"[data] text_columns is {list(spec.text_columns)}; the spans template reads a pair: the "
                           "question column, then the context column, such as text_columns = [\"sentiment\", \"text\"]")
        if not spec.test or not spec.id_column:
            raise KitError("[data] test and id_column must be set: the spans template finds each test row's sample "
                           "row by its id")

    def _tokenizer(self, folder: Path):
        tokenizer = load_tokenizer(folder)
        if not tokenizer.is_fast:
            raise KitError(f"model folder {folder}: its tokenizer is a slow (Python) one; spans need a fast tokenizer's "
                           "character offsets: attach a folder with tokenizer.json")
        return tokenizer, text.tokenizer_key(folder)

    def _read(self) -> tuple:
        """The training table (rows with a context and an answer), the sample, the test table (each with its path),
        the target and the fold keys, read and checked."""
        s, spec = self.session, self.spec
        train_path = archives.find_file(s.data_dir, spec.train, "training table", log=s.log)
        train = tables.read_table(train_path, spec.id_column)
        tables.require_columns(train, [*spec.text_columns, spec.target_column], train_path)
        train = without_empty_texts(train, [spec.text_columns[1]], train_path, s.warn)
        train = without_empty_texts(train, [spec.target_column], train_path, s.warn).reset_index(drop=True)
        sample, sample_path = base.read_sample(s)
        test, test_path = self._test_table()
        columns = base.sample_targets(sample, spec, sample_path, test.columns)
        if len(columns) != 1:
            raise KitError(f"{sample_path.name}: the spans template fills one column, and the sample has {columns}; "
                           "name it in [data] submission_columns")
        target = Target(SPAN.name, tuple(columns))
        return train, train_path, sample, sample_path, test, test_path, target, base.fold_keys(spec, train, train_path)

    def _test_table(self) -> tuple[pd.DataFrame, Path]:
        spec = self.spec
        path = archives.find_file(self.session.data_dir, spec.test, "test table", log=self.session.log)
        test = tables.read_table(path, spec.id_column)
        tables.require_columns(test, [spec.id_column, *spec.text_columns], path)
        tables.require_unique(test, spec.id_column, path)
        return test, path

    def _test(self, test: pd.DataFrame, test_path: Path, sample: pd.DataFrame, sample_path: Path, tokenizer,
              max_length: int, stride: int) -> tuple[Windows, np.ndarray]:
        """The test pairs' windows, and the sample row of each test row (found by id)."""
        spec = self.spec
        where = pd.Index(sample[spec.id_column].astype(str)).get_indexer(test[spec.id_column].astype(str))
        if (where < 0).any() or len(test) != len(sample):
            detail = (f"id '{test[spec.id_column].astype(str).to_numpy()[where < 0][0]}' is not in {sample_path.name}"
                      if (where < 0).any() else f"{len(test)} rows, the sample {len(sample)}")
            raise KitError(f"{test_path.name}: {detail}; the test table and the sample submission must list the same ids")
        question, context = spec.text_columns
        w = spans.windows(tokenizer, test[question].fillna("").astype(str).tolist(),
                          test[context].fillna("").astype(str).tolist(), max_length, stride, source=test_path.name)
        return w, where.astype(np.int64)

    def _load_test(self, recipe: dict, folder: Path, tokenizer, key: str) -> SpanData:
        """Predict mode: the test pairs cut into windows as the training run cut its own."""
        s = self.session
        if recipe.get("tokenizer") not in (None, key):
            raise KitError(f"model folder {folder}: its tokenizer is not the one the training run used; attach the "
                           "model folder the training kernel had (its ids would mean other words)")
        sample, sample_path, target = base.trained_sample(s)
        test, test_path = self._test_table()
        w, where = self._test(test, test_path, sample, sample_path, tokenizer, recipe["max_length"], recipe["doc_stride"])
        data = SpanData(None, w, None, target, sample, where, tokenizer.pad_token_id, folder, recipe)
        s.log(self.describe(data))
        return data

    def describe(self, data: SpanData) -> str:
        lines = [f"model          {data.folder}"]
        for name, w in (("train", data.train_windows), ("test", data.test_windows)):
            if w is not None:
                n = w.tokens.lengths
                lines.append(f"{name:<15}{len(w.contexts)} contexts in {len(w)} windows of at most "
                             f"{data.recipe['max_length']} tokens (stride {data.recipe['doc_stride']}), "
                             f"{int(n.max(initial=0))} tokens at most")
        if data.y is not None:
            lines.append(f"answers        {float((data.y[:, 0] > 0).mean()):.1%} of the training windows hold theirs")
        if data.y is not None and data.y.shape[1] > 2:  # Natural Questions' answer types
            counts = np.bincount(data.y[:, 2], minlength=len(KINDS))
            lines.append("answer types   " + ", ".join(f"{n} {k}" for k, n in zip(KINDS, counts)) + " windows")
        lines.append(f"target         spans of '{data.target.columns[0]}', metric {self.spec.metric}")
        return "\n".join(lines)

    def show_samples(self, data: SpanData, n: int = 3):
        """The windows' lengths in tokens against max_length, and the answers' lengths."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 3))
        tokens = data.train if data.train is not None else data.test
        axes[0].hist(tokens.lengths, bins=40, color="tab:blue")
        axes[0].axvline(data.recipe["max_length"], color="black", ls="--", label=f"max_length {data.recipe['max_length']}")
        axes[0].set(xlabel="tokens per window", ylabel="windows", title="window lengths")
        axes[0].legend(fontsize=7)
        if data.y is not None:
            held = data.y[:, 0] > 0
            axes[1].hist(data.y[held, 1] - data.y[held, 0] + 1, bins=40, color="tab:green")
        axes[1].set(xlabel="tokens per answer", ylabel="windows", title="answer lengths")
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: SpanData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds of whole contexts (every window of one context on one side): [data] fold_column's, or grouped."""
        return cv.make_folds(len(data.y), self.p.folds, self.p.seed, groups=data.groups, assigned=data.assigned)

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: SpanData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        if pretrained and not self._announced:
            self.session.log(f"pretrained weights: {data.folder} (local files only)")
            self._announced = True
        model = SpanModel(data.folder, data.pad_id, pretrained=pretrained, gradient_checkpointing=self.p.gradient_checkpointing,
                          kinds=len(KINDS) if self.pages else 0)
        return model.to(self.session.device)

    def objective(self, data: SpanData) -> SpanObjective:
        if self.pages:
            return NQObjective(data.train_windows, self.p.max_answer_length, data.train_windows.answers)
        return SpanObjective(data.train_windows, self.p.max_answer_length)

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: SpanData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        """Batches of windows `rows`, padded to each batch's longest, with each window's number."""
        tokens, y = (data.test, None) if test else (data.train, data.y)
        return SpanBatches(tokens, rows, y, batch_size, shuffle=train, device=self.session.device, pad_id=data.pad_id,
                           seed=seed, shard=shard, max_length=data.recipe["max_length"])

    def host_bytes(self, data: SpanData) -> int:
        parts = [a for w in (data.train_windows, data.test_windows) if w is not None for a in (w.tokens.ids, w.chars)]
        return 3 * sum(a.nbytes for a in parts) + (data.y.nbytes if data.y is not None else 0)

    def trial_rows(self, data: SpanData) -> np.ndarray:
        """The longest training windows: a batch size that fits them fits every bucket."""
        return np.argsort(-data.train.lengths, kind="stable")[:256]

    def predict_rows(self, data: SpanData) -> int:
        return len(data.test_windows)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: SpanData, precision, batch_size: int) -> np.ndarray:
        """(test windows, max_length, 2) start and end logits, padding at PAD_LOGIT (Natural Questions': then its
        KIND_ROWS of answer-type logits), float16 in a file in scratch, unlinked at once: a fold's logits (1.2 M
        windows at tf2-qa's size) take disk, not the host memory the folds' running sum (`fold_sum`) holds."""
        extra = KIND_ROWS if self.pages else 0
        out = scratch_logits((len(data.test_windows), data.recipe["max_length"] + extra, 2))
        batches = self.batches(data, np.arange(len(data.test_windows)), train=False, batch_size=batch_size, test=True)
        for batch, logits in base.predictions(model, batches, precision, lambda m, b: m(b["input_ids"]).float()):
            rows = batch["window"].cpu().numpy()
            out[rows, : logits.shape[1] - extra] = logits[:, : logits.shape[1] - extra]
            if extra:
                out[rows, -extra:] = logits[:, -extra:]
        return out

    def fold_sum(self, total: np.ndarray | None, pred: np.ndarray) -> np.ndarray:
        """The folds' running sum of test logits, float32 in memory (the first fold's copied out of its file),
        added to window by window: one fold's worth of host memory, whatever the number of folds."""
        return add_logits(total, pred)

    def judge(self, data: SpanData, rows: dict, metric: str) -> base.Judged:
        """The out-of-fold Jaccard of each context's best span, against the whole text's (the trivial submission)."""
        if self.pages:
            return nq.judge(data, rows)
        pred = np.asarray(rows["pred"])
        return base.Judged(metrics.score(metric, pred[:, :2], rows["target"]),
                           metrics.score(metric, pred[:, [0, 2]], rows["target"]), "the whole text")

    def cut(self, data: SpanData, pred: np.ndarray, oof: list[dict]) -> np.ndarray:
        """(sample rows, 1) the span texts: each test context's best valid span over its windows' mean logits; the
        whole text where no fold predicted (the prior's rows) or no span is valid; the question where that holds no
        word (a blank context: a cell must hold one)."""
        if self.pages:
            return nq.cut(self, data, pred, oof)
        w = data.test_windows
        chars = (spans.best_spans(pred, w, self.p.max_answer_length) if pred.ndim == 3
                 else np.full((len(w.contexts), 2), -1, np.int64))
        texts, blank = spans.worded(spans.span_texts(w.contexts, chars), w.questions)
        if blank.any():
            first = int(np.flatnonzero(blank)[0])
            self.session.log(f"blank texts    {int(blank.sum())} test row(s) with no word in their context, such as "
                             f"submission row {int(data.test_positions[first]) + 2}: their span is their question "
                             f"('{texts[first]}'), as a span cell must hold a word")
        out = np.empty((len(data.sample), 1), dtype=object)
        out[data.test_positions, 0] = texts
        return out


def scratch_logits(shape: tuple[int, ...]) -> np.ndarray:
    """A float16 array of `shape` filled with PAD_LOGIT, memory-mapped from a file in scratch that is unlinked at
    once (its disk is given back when the array is let go; a second fold's never overwrites the first's)."""
    folder = paths.scratch_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix="test-logits-", suffix=".npy", delete=False) as f:
        path = Path(f.name)
    try:
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=shape)
    finally:
        path.unlink(missing_ok=True)
    out[:] = spans.PAD_LOGIT
    return out


def add_logits(total: np.ndarray | None, pred: np.ndarray, chunk: int = 4096) -> np.ndarray:
    """`total` (None before the first fold: a float32 copy of `pred`) plus `pred`, in place, `chunk` windows at a
    time (no temporary the size of a fold's logits)."""
    if total is None:
        total = np.empty(pred.shape, np.float32)
        for first in range(0, len(pred), chunk):
            total[first : first + chunk] = pred[first : first + chunk]
        return total
    for first in range(0, len(pred), chunk):
        np.add(total[first : first + chunk], pred[first : first + chunk], out=total[first : first + chunk])
    return total
