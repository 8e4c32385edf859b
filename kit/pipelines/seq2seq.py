"""Sequence to sequence: each row's answer is a text generated from its input by a Hugging Face encoder-decoder (T5,
mT5, ByT5, BART from an attached folder), as text normalization asks: each token's spoken form.

The rows are tokens in sentences: [data] group_column names the sentence (folds keep a sentence whole),
order_column the token's place in it, text_columns the one column of tokens (`before`), target_column the answer
(`after`); a test row's id is "<group>_<order>" (MLE-bench's `<sentence_id>_<token_id>`). The winning practice comes
first (kit.data.normalize): a token the training pairs always leave unchanged is copied, one they have seen gets its
most frequent answer there, and only a token never seen goes to the model; the log says how many went each way.
The model learns, teacher-forced in kit's loop, from the training pairs that change their token (and as many that
do not), each read in its sentence (`context_words` neighbours each side). Validation generates (the time plan
measures generation so), and the epoch's score is the exact-match accuracy on the model's rows. Each fold's
generated texts are votes (kit.train.topk's rows over the texts generated so far), the folds' most voted is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import archives, normalize, tables, text
from kit.data.text import TextBatches, Tokens
from kit.errors import KitError
from kit.models.seq2seq import IGNORE, Seq2SeqModel
from kit.models.text import WEIGHTS, fingerprint
from kit.pipelines import base
from kit.pipelines.text import load_tokenizer
from kit.runtime import paths, runs
from kit.runtime.run_folder import RUN_FILES
from kit.runtime.session import Session
from kit.train import cv
from kit.train.seq2seq import TEXT, Seq2SeqObjective, decode
from kit.train.targets import Target
from kit.train.topk import TopK

LOOKUP = RUN_FILES[0]  # the table's file in the run's folder


@dataclass
class Seq2SeqData:
    train: Tokens | None  # the model's training inputs (None in predict mode)
    labels: Tokens | None  # their answers' ids
    test: Tokens  # the model's test inputs: the tokens neither copy nor the table answers
    sources: list[str]  # the training rows' tokens (`before`)
    targets: list[str]  # their answers (`after`)
    answers: list[str]  # every test token's answer from copy and the table (a model token's: itself)
    model_positions: np.ndarray  # (test model rows,) the test position of each
    sample_positions: np.ndarray  # (test tokens,) the sample row of each
    target: Target  # kind "text": the sample's one column
    sample: pd.DataFrame
    pad_id: int
    folder: Path
    recipe: dict  # the run's settings; the table it names by file and digest ("lookup")
    lookup: normalize.Lookup  # the training pairs' table: copy's tokens and each seen token's answer
    identity: str = ""
    groups: np.ndarray | None = None  # each training row's sentence

    @property
    def y(self) -> np.ndarray | None:  # the rows' numbers: what the folds split
        return None if self.train is None else np.arange(len(self.train))


class Seq2SeqPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self.texts: list[str] = []  # the texts the folds generated, each a vote's class
        self.known: dict[str, int] = {}

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> Seq2SeqData:
        s, spec, p = self.session, self.spec, self.p
        self._required()
        if not p.model_path:
            raise KitError("model_path is empty; set it to the Hugging Face encoder-decoder folder (config, weights, "
                           "tokenizer) that an attached dataset or model holds")
        folder = paths.find_model(p.model_path)
        if not any((folder / name).is_file() for name in WEIGHTS):
            raise KitError(f"model folder {folder} has no weights (none of {', '.join(WEIGHTS)}); attach the folder "
                           "saved with the model's save_pretrained")
        tokenizer, key = load_tokenizer(folder), text.tokenizer_key(folder)
        self.tokenizer = tokenizer
        sample, sample_path = base.read_sample(s)
        column = base.sample_targets(sample, spec, sample_path)
        if len(column) != 1:
            raise KitError(f"{sample_path.name}: the seq2seq template fills one column, and the sample has {column}; "
                           "name it in [data] submission_columns")
        target = Target(TEXT.name, tuple(column))
        test, test_path = self._table(spec.test, "test table", [])
        where = self._sample_rows(test, test_path, sample, sample_path)
        word = spec.text_columns[0]
        before = test[word].fillna("").astype(str).tolist()
        if s.trained is not None:  # predict mode: the training run's table and settings
            recipe = s.trained.recipe
            # the table: in the run's folder, or in the recipe of a run an earlier kit trained
            lookup = (normalize.Lookup(recipe["table"], set(recipe["unchanged"])) if "table" in recipe
                      else normalize.read(s.trained.folder / recipe["lookup"], recipe["lookup_digest"]))
            train = labels = None
            sources = targets = []
            groups = None
            identity = ""
        else:
            train_table, train_path = self._table(spec.train, "training table", [spec.target_column])
            sources = train_table[word].fillna("").astype(str).tolist()
            targets = train_table[spec.target_column].fillna("").astype(str).tolist()
            lookup = normalize.learn(sources, targets)
            rows = normalize.model_rows(sources, targets, p.max_pairs, p.seed, p.table)
            contexts = normalize.inputs(train_table[spec.group_column], sources, p.context_words, rows)
            sources, targets = [sources[i] for i in rows], [targets[i] for i in rows]
            train = text.tokenize(tokenizer, contexts, p.max_length, key, log=s.log, what="inputs")
            labels = text.tokenize(tokenizer, targets, p.max_new_tokens, key, log=s.log, what="answers")
            groups = train_table[spec.group_column].astype(str).to_numpy()[rows]
            recipe = {"target": base.target_record(target), "prior": [0.0], "max_length": p.max_length,
                      "max_new_tokens": p.max_new_tokens, "context_words": p.context_words, "table_on": p.table,
                      "tokenizer": key, "table_pairs": len(lookup), "lookup": LOOKUP,
                      "lookup_digest": normalize.digest(lookup)}  # the table itself: a file in the run (run_files)
            identity = runs.digest(pd.util.hash_pandas_object(train_table[[spec.group_column, word, spec.target_column]],
                                                              index=False).to_numpy(),
                                   np.array([fingerprint(folder, key), str(p.max_length), str(p.context_words),
                                             str(p.max_pairs), str(p.seed)]))
        if recipe.get("tokenizer") not in (None, key):
            raise KitError(f"model folder {folder}: its tokenizer is not the one the training run used; attach the "
                           "model folder the training kernel had")
        use_table = recipe.get("table_on", p.table) if s.trained is not None else p.table
        routes = normalize.route(before, lookup, use_table)
        s.log(f"routes         test tokens: {normalize.counts(routes)} (copy: always unchanged in training; table: "
              f"the most frequent answer of {len(lookup)} tokens seen; model: the rest)")
        ask = np.flatnonzero(routes == normalize.MODEL)
        contexts = normalize.inputs(test[spec.group_column], before, recipe["context_words"], ask)
        test_tokens = text.tokenize(tokenizer, contexts, recipe["max_length"], key, log=s.log, what="test inputs")
        data = Seq2SeqData(train, labels, test_tokens, sources, targets, normalize.answers(before, routes, lookup), ask,
                           where, target, sample, tokenizer.pad_token_id, folder, recipe, lookup, identity, groups)
        s.log(self.describe(data))
        return data

    def check_data(self) -> None:
        self._required()
        self._table(self.spec.train, "training table", [self.spec.target_column])

    def _required(self) -> None:
        spec = self.spec
        if len(spec.text_columns) != 1 or not spec.group_column or not spec.order_column:
            raise KitError("[data] text_columns (one: the tokens), group_column (the sentence) and order_column (the "
                           "token's place) must be set: the seq2seq template reads tokens in their sentences, such as "
                           'text_columns = ["before"], group_column = "sentence_id", order_column = "token_id"')
        if not spec.test or not spec.id_column:
            raise KitError("[data] test and id_column must be set: each test token's sample row is found by its id")

    def _table(self, name: str, what: str, extra: list[str]) -> tuple[pd.DataFrame, Path]:
        """A table of tokens in sentence order (as the competition's files list them), checked."""
        spec, s = self.spec, self.session
        path = archives.find_file(s.data_dir, name, what, log=s.log)
        table = tables.read_table(path, spec.id_column)
        tables.require_columns(table, [spec.group_column, spec.order_column, *spec.text_columns, *extra], path)
        order = np.lexsort((pd.to_numeric(table[spec.order_column], errors="coerce").to_numpy(),
                            pd.to_numeric(table[spec.group_column], errors="coerce").to_numpy()))
        return table.iloc[order].reset_index(drop=True), path

    def _sample_rows(self, test: pd.DataFrame, path: Path, sample: pd.DataFrame, sample_path: Path) -> np.ndarray:
        spec = self.spec
        ids = test[spec.group_column].astype(str) + "_" + test[spec.order_column].astype(str)
        where = pd.Index(sample[spec.id_column].astype(str)).get_indexer(ids)
        if (where < 0).any() or len(test) != len(sample):
            detail = (f"id '{ids[where < 0].iloc[0]}' is not in {sample_path.name}" if (where < 0).any()
                      else f"{len(test)} rows, the sample {len(sample)}")
            raise KitError(f"{path.name}: {detail}; each test token's id is '<{spec.group_column}>_{spec.order_column}>' "
                           "and the test table and the sample must list the same ids")
        return where.astype(np.int64)

    def describe(self, data: Seq2SeqData) -> str:
        lines = [f"model          {data.folder}"]
        if data.train is not None:
            changed = sum(a != b for a, b in zip(data.sources, data.targets))
            lines.append(f"train          {len(data.train)} pairs for the model ({changed} changed), "
                         f"{int(data.train.lengths.max(initial=0))} input tokens at most")
        lines.append(f"test           {len(data.test)} tokens for the model of {len(data.answers)}")
        lines.append(f"target         texts of '{data.target.columns[0]}', metric {self.spec.metric}")
        return "\n".join(lines)

    def show_samples(self, data: Seq2SeqData, n: int = 3):
        """The model's inputs' lengths in tokens against max_length, and its answers'."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 3))
        inputs = data.train if data.train is not None else data.test
        axes[0].hist(inputs.lengths, bins=40, color="tab:blue")
        axes[0].set(xlabel="tokens per input", ylabel="rows", title="inputs")
        if data.labels is not None:
            axes[1].hist(data.labels.lengths, bins=40, color="tab:green")
        axes[1].set(xlabel="tokens per answer", ylabel="rows", title="answers")
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def run_files(self, data: Seq2SeqData, folder: Path) -> None:
        """The table, once, in the run's folder: each fold checkpoint's recipe names it instead of carrying it
        (at text normalization's size, ~10 MB a checkpoint)."""
        normalize.save(data.lookup, folder / LOOKUP)

    def split(self, data: Seq2SeqData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds of whole sentences."""
        return cv.make_folds(len(data.train), self.p.folds, self.p.seed, groups=data.groups)

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: Seq2SeqData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        model = Seq2SeqModel(data.folder, data.pad_id, pretrained, self.p.gradient_checkpointing)
        return model.to(self.session.device)

    def objective(self, data: Seq2SeqData) -> Seq2SeqObjective:
        if getattr(self, "tokenizer", None) is None:  # a worker process's pipeline, handed the data without `load`
            self.tokenizer = load_tokenizer(data.folder)
        return Seq2SeqObjective(self.tokenizer, data.targets, data.sources, data.recipe["max_new_tokens"], self.p.num_beams)

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: Seq2SeqData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        return PairBatches(data.test if test else data.train, rows, None if test else data.labels, batch_size,
                           shuffle=train, device=self.session.device, pad_id=data.pad_id, seed=seed, shard=shard,
                           max_length=data.recipe["max_length"])

    def host_bytes(self, data: Seq2SeqData) -> int:
        return 3 * sum(t.ids.nbytes + t.offsets.nbytes for t in (data.train, data.labels, data.test) if t is not None)

    def trial_rows(self, data: Seq2SeqData) -> np.ndarray:
        """The longest inputs: a batch size that fits them fits every bucket."""
        return np.argsort(-data.train.lengths, kind="stable")[:256]

    def predict_rows(self, data: Seq2SeqData) -> int:
        return len(data.test)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: Seq2SeqData, precision, batch_size: int) -> TopK:
        """Each model row's generated text as a vote: (rows, 1) its number among the texts generated so far."""
        if getattr(self, "tokenizer", None) is None:
            self.tokenizer = load_tokenizer(data.folder)
        index = np.full((len(data.test), 1), -1, np.int32)
        batches = self.batches(data, np.arange(len(data.test)), train=False, batch_size=batch_size, test=True)
        new_tokens, beams = data.recipe["max_new_tokens"], self.p.num_beams
        for batch, ids in base.predictions(model, batches, precision, lambda m, b: m.generate(b["input_ids"], new_tokens,
                                                                                              beams)):
            for r, t in zip(batch["row"].cpu().numpy(), decode(self.tokenizer, ids)):
                index[r, 0] = self.known.setdefault(t, len(self.known))
        return TopK(index, np.ones(index.shape, np.float32), 2**31 - 1)

    def judge(self, data: Seq2SeqData, rows: dict, metric: str) -> base.Judged:
        """The out-of-fold exact-match accuracy on the model's rows, against copying each token."""
        pred = np.asarray(rows["pred"]).reshape(-1, 2)
        return base.Judged(float(pred[:, 0].mean()), float(pred[:, 1].mean()), "copying each token")

    def cut(self, data: Seq2SeqData, pred, oof: list[dict]) -> np.ndarray:
        """(sample rows, 1) the texts: copy's and the table's, and the folds' most voted text for the model's tokens
        (the token itself where no fold predicted, or the vote is an empty text)."""
        answers = list(data.answers)
        if isinstance(pred, TopK) and len(data.model_positions):
            texts = {i: t for t, i in self.known.items()}
            for position, best in zip(data.model_positions, pred.argmax()):
                if best >= 0 and texts[int(best)].strip():  # an empty text reads back as NaN: the token stays
                    answers[position] = texts[int(best)]
        out = np.empty((len(data.sample), 1), dtype=object)
        out[data.sample_positions, 0] = answers
        return out


class PairBatches(TextBatches):
    """Text batches of inputs with their answers' ids ("labels", (B, T) padded with IGNORE) and each row's number."""

    def __init__(self, tokens: Tokens, rows: np.ndarray, labels: Tokens | None, batch_size: int, **kw):
        super().__init__(tokens, rows, None, batch_size, **kw)
        self.labels = labels

    def fields(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        batch = super().fields(rows)
        batch["row"] = torch.from_numpy(np.asarray(rows, np.int64))
        if self.labels is not None:
            batch["labels"] = torch.from_numpy(self.labels.padded(rows, IGNORE, multiple=1))
        return batch
