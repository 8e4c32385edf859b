"""Imputation: restore the one word missing from each test sentence (billion-word-imputation), with a Hugging Face
masked language model (BERT, RoBERTa, DeBERTa from an attached folder) and a gap head beside its own.

The training file is sentences one a line, with none missing (train_v2.txt: 30 million, 4 GB): `train_rows` of them
are drawn at random as the file streams by (from its zip, nothing unpacked: kit.data.gaps), and each batch removes an
inner word from each of its sentences afresh (never the first or the last, as MLE-bench's prepare.py made the test),
so an epoch of a million sentences is a million new pairs. The model learns where the word went (the gap head's
softmax over a sentence's gaps) and what it was (the masked-LM head at a mask in the true gap). A sentence is
restored in two passes: the likeliest gap, then the likeliest whole word at a mask there, inserted only where that
saves Levenshtein distance in expectation (kit.train.imputation.gain): a wrong word at the right gap costs less
than the missing one, at a wrong gap more. The validation rows are restored so (their removed word drawn once, by
the seed), and the epoch's score is the competition's mean Levenshtein distance, beside the sentences left as
they are. [data] test is the test table ("id","sentence", one word gone: text_columns its sentence), sample_submission
the table whose rows the submission fills, target_column its column of sentences: the same file in MLE-bench's layout
(its sentences as they are: the baseline).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import archives, gaps, tables
from kit.data.gaps import GapBatches, GapCoder
from kit.data.text import tokenizer_key
from kit.errors import KitError
from kit.models.gaps import GapModel
from kit.models.text import WEIGHTS, checked_positions, fingerprint
from kit.pipelines import base, footprints
from kit.pipelines.text import load_tokenizer
from kit.runtime import paths, runs
from kit.runtime.resources import Limits, Need, Sizes
from kit.spec import Spec
from kit.train import cv, imputation
from kit.train.imputation import GUESS, SENTENCE, GapObjective
from kit.train.targets import Target


@dataclass
class GapData:
    sentences: list[list[str]]  # the training sentences' words (empty in predict mode)
    gone: np.ndarray  # (sentences,) the word each loses when it is validated (drawn once, by the seed)
    test: list[list[str]]  # the test sentences' words, one missing
    test_positions: np.ndarray  # (test sentences,) the sample row of each
    target: Target  # kind "sentence": the sample's one column
    sample: pd.DataFrame
    folder: Path
    recipe: dict  # the target, max_length, the tokenizer's key, the mean inner word's length ("mean_word")
    identity: str = ""

    @property
    def y(self) -> np.ndarray | None:  # the rows' numbers: what the folds split
        return np.arange(len(self.sentences)) if self.sentences else None


class ImputationPipeline(base.Pipeline):
    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> GapData:
        s, spec, p = self.session, self.spec, self.p
        self._required()
        if not p.model_path:
            raise KitError("model_path is empty; set it to the Hugging Face masked language model's folder (config, "
                           "weights, tokenizer) that an attached dataset or model holds")
        folder = paths.find_model(p.model_path)
        if not any((folder / name).is_file() for name in WEIGHTS):
            raise KitError(f"model folder {folder} has no weights (none of {', '.join(WEIGHTS)}); attach the folder "
                           "saved with the model's save_pretrained")
        key = tokenizer_key(folder)
        recipe = s.trained.recipe if s.trained is not None else {}
        max_length = recipe.get("max_length") or checked_positions(folder, p.max_length)
        self.coder = GapCoder(load_tokenizer(folder), max_length)
        sample, sample_path = base.read_sample(s)
        column = list(spec.submission_columns) or [spec.target_column]
        tables.require_columns(sample, column, sample_path, "[data] target_column")
        if len(column) != 1:
            raise KitError(f"{sample_path.name}: the imputation template fills one column, and [data] submission_columns "
                           f"names {column}; name the sample's column of sentences in target_column")
        target = Target(SENTENCE.name, tuple(column))
        test, positions = self._test(sample, sample_path)
        sentences: list[list[str]] = []
        gone = np.zeros(0, np.int64)
        identity = ""
        if s.trained is None:
            lines = gaps.sample_lines(s.data_dir, spec.train, p.train_rows, p.seed, s.log)
            sentences = [line.split() for line in lines]
            gone = gaps.draw(np.array([len(w) for w in sentences]), np.random.default_rng(p.seed))
            recipe = {"target": base.target_record(target), "prior": [0.0], "max_length": max_length, "tokenizer": key,
                      "mean_word": imputation.mean_word(sentences)}
            identity = runs.digest(np.array(lines, dtype=object),
                                   np.array([fingerprint(folder, key), str(max_length), str(p.seed)]))
        elif recipe.get("tokenizer") != key:
            raise KitError(f"model folder {folder}: its tokenizer is not the one the training run used; attach the model "
                           "folder the training kernel had")
        data = GapData(sentences, gone, test, positions, target, sample, folder, recipe, identity)
        s.log(self.describe(data))
        return data

    def check_data(self) -> None:
        self._required()
        with gaps.open_lines(self.session.data_dir, self.spec.train, "training sentences"):
            pass
        sample, path = base.read_sample(self.session)
        self._test(sample, path)

    def _required(self) -> None:
        spec = self.spec
        if len(spec.text_columns) != 1 or not spec.test or not spec.id_column:
            raise KitError("[data] test, id_column and text_columns (one: the sentence) must be set: the imputation "
                           'template reads the test sentences so, such as test = "test_v2.txt", id_column = "id", '
                           'text_columns = ["sentence"]')

    def _test(self, sample: pd.DataFrame, sample_path: Path) -> tuple[list[list[str]], np.ndarray]:
        """The test sentences' words and each one's sample row (by id)."""
        spec, s = self.spec, self.session
        path = archives.find_file(s.data_dir, spec.test, "test table", log=s.log)
        table = tables.read_table(path, spec.id_column)
        tables.require_columns(table, [spec.id_column, spec.text_columns[0]], path)
        where = pd.Index(sample[spec.id_column].astype(str)).get_indexer(table[spec.id_column].astype(str))
        if (where < 0).any() or len(table) != len(sample):
            detail = (f"id '{table[spec.id_column][where < 0].iloc[0]}' is not in {sample_path.name}" if (where < 0).any()
                      else f"{len(table)} rows, the sample {len(sample)}")
            raise KitError(f"{path.name}: {detail}; the test table and the sample must list the same ids")
        words = [str(t).split() for t in table[spec.text_columns[0]].fillna("").astype(str)]
        return words, where.astype(np.int64)

    def describe(self, data: GapData) -> str:
        lines = [f"model          {data.folder}: {int(self.coder.candidates.sum())} whole words of "
                 f"{len(self.coder.candidates)} tokens may be inserted"]
        if data.sentences:
            counts = np.array([len(w) for w in data.sentences])
            single = self.coder.word_ids([w[int(a)] for w, a in zip(data.sentences[:2000], data.gone[:2000])])
            lines.append(f"train          {len(data.sentences)} sentences, {int(np.median(counts))} words at the median; "
                         f"an inner word {data.recipe['mean_word']:.2f} characters on average, "
                         f"{(single >= 0).mean():.0%} of them one token")
        lines.append(f"test           {len(data.test)} sentences, a word missing from each")
        lines.append(f"target         sentences of '{data.target.columns[0]}', metric {self.spec.metric}")
        return "\n".join(lines)

    def show_samples(self, data: GapData, n: int = 3):
        """The sentences' lengths in words, training and test."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3))
        if data.sentences:
            ax.hist([len(w) for w in data.sentences], bins=40, color="tab:blue", alpha=0.6, label="train", density=True)
        ax.hist([len(w) for w in data.test], bins=40, color="tab:green", alpha=0.6, label="test (a word missing)",
                density=True)
        ax.set(xlabel="words per sentence", ylabel="share", title="sentences")
        ax.legend()
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: GapData) -> list[tuple[np.ndarray, np.ndarray]]:
        return cv.make_folds(len(data.sentences), self.p.folds, self.p.seed)

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: GapData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        return GapModel(data.folder, pretrained, self.p.gradient_checkpointing).to(self.session.device)

    def objective(self, data: GapData) -> GapObjective:
        self._coder(data)
        return GapObjective(self.coder, data.sentences, data.gone, data.recipe["mean_word"])

    def _coder(self, data: GapData) -> GapCoder:
        if getattr(self, "coder", None) is None:  # a worker process's pipeline, handed the data without `load`
            self.coder = GapCoder(load_tokenizer(data.folder), data.recipe["max_length"])
        return self.coder

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: GapData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        if test:
            return GapBatches(self._coder(data), data.test, rows, None, batch_size, False, self.session.device, seed, shard)
        return GapBatches(self._coder(data), data.sentences, rows, None if train else data.gone, batch_size, train,
                          self.session.device, seed, shard)

    def host_bytes(self, data: GapData) -> int:
        return sum(footprints.STRING_BYTES * len(w) for w in (*data.sentences, *data.test))

    def trial_rows(self, data: GapData) -> np.ndarray:
        """The longest sentences: a batch size that fits them fits every bucket."""
        return np.argsort(-np.array([len(w) for w in data.sentences]), kind="stable")[:256]

    def predict_rows(self, data: GapData) -> int:
        return len(data.test)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: GapData, precision, batch_size: int) -> np.ndarray:
        """(sample rows, 1, GUESS) each test sentence's guess (kit.train.imputation.guess): the gap, its chance, the
        word, its chance."""
        coder = self._coder(data)
        out = np.zeros((len(data.sample), 1, GUESS), np.float32)
        candidates = torch.from_numpy(coder.candidates).to(self.session.device)
        batches = self.batches(data, np.arange(len(data.test)), train=False, batch_size=batch_size, test=True)

        def forward(m, b):
            return imputation.guess(m, coder, [data.test[r] for r in b["row"].cpu().numpy()], b, candidates)

        for batch, pred in base.predictions(model, batches, precision, forward):
            out[data.test_positions[batch["row"].cpu().numpy()], 0] = pred
        return out

    def fold_sum(self, total, pred):
        """The folds' guesses side by side (weighed by `cut`)."""
        return pred if total is None else np.concatenate([total, pred], axis=1)

    def fold_mean(self, total, n: int):
        return total

    def judge(self, data: GapData, rows: dict, metric: str) -> base.Judged:
        """The out-of-fold mean Levenshtein distance, against leaving each sentence as it is."""
        pred = np.asarray(rows["pred"]).reshape(-1, 2)
        return base.Judged(float(pred[:, 0].mean()), float(pred[:, 1].mean()), "each sentence as it is")

    def cut(self, data: GapData, pred, oof: list[dict]) -> np.ndarray:
        """(sample rows, 1) the sentences: each fold's guess of a sentence is worth its expected gain, a guess the folds
        share the mean of theirs (a fold that guessed otherwise adds nothing to it); the best goes in where that mean
        is positive. Every sentence as it is where no fold predicted (the prior's rows)."""
        out = np.empty((len(data.sample), 1), dtype=object)
        sentences = [" ".join(w) for w in data.test]
        if np.ndim(pred) == 3 and len(data.test):
            coder, mean = self._coder(data), data.recipe["mean_word"]
            guesses = np.asarray(pred, np.float64)[data.test_positions]  # (test, folds, GUESS)
            lengths = np.array([[len(coder.words[int(w)]) for w in row] for row in guesses[:, :, 2]])
            worth = imputation.gain(guesses[:, :, 1], guesses[:, :, 3], lengths, mean)
            folds = guesses.shape[1]
            for i, (row, value) in enumerate(zip(guesses, worth)):
                sums: dict[tuple[int, int], float] = {}
                for (at, _, word, _), v in zip(row, value):
                    sums[(int(at), int(word))] = sums.get((int(at), int(word)), 0.0) + v / folds
                (at, word), best = max(sums.items(), key=lambda kv: kv[1])
                if best > 0 and 1 <= at < len(data.test[i]):
                    words = data.test[i]
                    sentences[i] = " ".join(words[:at] + [coder.words[word]] + words[at:])
        out[data.test_positions, 0] = sentences
        return out


class Footprint(footprints.Text):
    """The sentences in memory as Python strings (a word a string, the training sample's and the test's); tokens are
    made batch by batch."""

    @staticmethod
    def sizes(session, data: GapData) -> Sizes:
        folder = data.folder / "config.json"
        parameters = footprints.Text.from_config(json.loads(folder.read_text())) if folder.is_file() else 0
        words = int(np.mean([len(w) for w in data.test])) if data.test else 0
        return Sizes(len(data.sentences), len(data.test), 1, data.target.kind, tokens=words, model_size=parameters)

    @staticmethod
    def needs(sizes: Sizes, p, spec: Spec, limits: Limits) -> list[Need]:
        words = sizes.tokens or 27  # the one billion word benchmark's sentences: ~27 words
        sentences = min(sizes.train_rows, p.train_rows) if p.train_rows else sizes.train_rows
        return [Need("the sentences, a string a word", "ram", (sentences + sizes.test_rows) * words * footprints.STRING_BYTES,
                     note=f"{words} words a sentence")]
