"""Text competitions: a table of texts (one or several text columns) and targets, a Hugging Face encoder
fine-tuned on them.

Single-label classification, multi-label, regression of one value or several, and ordinal scores under
quadratic weighted kappa (a regression written as whole scores) follow from the metric and the sample
submission, as in the other templates (kit.train.targets). The model folder is found under /kaggle/input
and read with `local_files_only=True`; texts are tokenized once (kit.data.text) and batched by length.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from torch import nn

from kit.data import archives, tables, text
from kit.data.text import TOKENIZER_VOCABS, TextBatches, Tokens
from kit.errors import KitError
from kit.models.text import TextModel, checked_positions, fingerprint
from kit.pipelines import base
from kit.runtime import paths, runs
from kit.runtime.session import Session
from kit.train import cv, targets
from kit.train.objectives import Classification, MultiLabel, Regression, moments
from kit.train.targets import Target

AUTO_LENGTH = 512  # max_length = "auto": the model's positions, but no more than this (and the longest text)
# training rows whose text is empty are left out with a warning up to this share of the rows (movie-review's few
# phrases that pandas reads as NaN: "null", "NA"); more is an error, which says more than a model of blanks
MAX_EMPTY_SHARE = 0.01


@dataclass
class TextData:
    train: Tokens | None  # None in predict mode
    test: Tokens
    y: np.ndarray | None  # encoded targets of the training texts
    target: Target
    sample: pd.DataFrame
    test_positions: np.ndarray  # (test texts,) the sample row of each
    pad_id: int
    folder: Path  # the model folder
    # what prediction needs beside the model folder and a fold's weights: the target, the prior, the target's
    # scale, max_length and the tokenizer's key (the training run's in predict mode)
    recipe: dict
    identity: str = ""
    groups: np.ndarray | None = None  # [data] group_column's value of each training text
    assigned: np.ndarray | None = None  # [data] fold_column's value of each training text
    ids: np.ndarray | None = None  # each training text's id ([data] id_column, else its row number): oof.csv's


def load_tokenizer(folder: Path):
    """The folder's tokenizer with the Auto class, offline; one line when the folder has none."""
    from transformers import AutoTokenizer

    config = folder / "tokenizer_config.json"  # ByT5's bytes need no vocabulary file
    byte_level = config.is_file() and "ByT5Tokenizer" in config.read_text(errors="replace")
    if not byte_level and not any((folder / name).is_file() for name in TOKENIZER_VOCABS):
        raise KitError(f"model folder {folder} has no tokenizer files (none of {', '.join(TOKENIZER_VOCABS[:4])}, ...); "
                       "attach a model folder saved with its tokenizer (tokenizer.save_pretrained) or copy them into it")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # a tokenizer class that needs a library the image lacks, a broken file, ...
        why = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        raise KitError(f"model folder {folder}: its tokenizer does not load ({why})") from None
    if tokenizer.pad_token_id is None:  # GPT-style tokenizers have none; padding is masked out anyway
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def empty_texts(table: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Each row: whether all its text columns are empty (missing or blank)."""
    return table[list(columns)].fillna("").astype(str).apply(lambda c: c.str.strip() == "").all(axis=1).to_numpy()


def _empty_line(blank: np.ndarray, columns: Sequence[str], path: Path) -> str:
    row = int(np.flatnonzero(blank)[0]) + 2  # the file's line: its header is line 1
    return (f"{path.name}: the text is empty in row {row} (columns {', '.join(columns)}; {int(blank.sum())} such rows, "
            f"{blank.mean():.1%} of {len(blank)})")


def without_empty_texts(table: pd.DataFrame, columns: Sequence[str], path: Path, warn: Callable[[str], None]) -> pd.DataFrame:
    """The training rows that have a text: up to MAX_EMPTY_SHARE of them empty are left out with one warning, more
    is a KitError."""
    blank = empty_texts(table, columns)
    if not blank.any():
        return table
    line = _empty_line(blank, columns, path)
    if blank.mean() > MAX_EMPTY_SHARE:
        raise KitError(f"{line}; drop those rows or fill them (up to {MAX_EMPTY_SHARE:.0%} of the rows are left out with a "
                       "warning)")
    warn(f"{line}; they are left out of training")
    return table[~blank]


class TextPipeline(base.Pipeline):
    def __init__(self, session: Session):
        super().__init__(session)
        self._announced = False

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> TextData:
        s, spec, p = self.session, self.spec, self.p
        self._required()
        if not p.model_path:
            raise KitError("model_path is empty; set it to the Hugging Face model folder (config, weights, tokenizer) "
                           "that an attached dataset or model holds")
        folder = paths.find_model(p.model_path)
        tokenizer, key = load_tokenizer(folder), text.tokenizer_key(folder)
        if s.trained is not None:
            return self._load_test(s.trained.recipe, folder, tokenizer, key)
        limit = checked_positions(folder, p.max_length)
        cut = min(limit or AUTO_LENGTH, AUTO_LENGTH) if p.max_length == "auto" else p.max_length
        train, train_path, sample, sample_path, test, test_path, target, (groups, assigned) = self._read()
        y = targets.encode(target, train if target.by_column else train[spec.target_column])
        texts = self._texts(train, train_path, tokenizer)
        data_test, test_positions, sample = self._test(test, test_path, sample, sample_path, tokenizer, cut, key)
        tokens = text.tokenize(tokenizer, texts, cut, key, log=s.log, what="train")
        max_length = cut
        if p.max_length == "auto":  # no longer than the longest text: nothing is cut that a longer length would keep
            max_length = int(max(tokens.lengths.max(initial=1), data_test.lengths.max(initial=1)))
            s.log(f"max_length     auto: {max_length} tokens, the longest text (the model has "
                  f"{f'{limit} positions' if limit else 'no position limit'}; at most {AUTO_LENGTH} when it is auto)")
        regression = not (target.classification or target.multilabel)
        mean, std = moments(y, spec.metric) if regression else ([0.0], [1.0])
        recipe = {"target": base.target_record(target), "prior": targets.prior(target, y, spec.metric), "y_mean": mean,
                  "y_std": std, "max_length": max_length, "tokenizer": key}
        # the model folder's identity too: another version found under the same model_path trains afresh
        identity = runs.digest(pd.util.hash_pandas_object(train[[*spec.text_columns, *self._target_columns(target)]],
                                                          index=False).to_numpy(), np.array(target.columns),
                               np.array([fingerprint(folder, key)]))
        ids = (train[spec.id_column] if spec.id_column in train.columns else pd.Series(range(len(train)))).astype(str)
        data = TextData(tokens, data_test, y, target, sample, test_positions, tokenizer.pad_token_id, folder, recipe, identity,
                        groups, assigned, ids.to_numpy())
        s.log(self.describe(data))
        return data

    def check_data(self) -> None:
        self._required()
        self._read()

    def _required(self) -> None:
        if not self.spec.text_columns:
            raise KitError("[data] text_columns is empty; name the column(s) holding the texts, such as "
                           "text_columns = [\"full_text\"]")
        if not self.spec.test:
            raise KitError("[data] test is empty: the text template needs the test table's file name")

    def _read(self) -> tuple:
        """The training table, the sample, the test table (each with its path), the target and the fold keys,
        read and checked: what load reads before the texts are tokenized."""
        s, spec = self.session, self.spec
        train_path = archives.find_file(s.data_dir, spec.train, "training table", log=s.log)
        train = tables.read_table(train_path, spec.id_column or None)
        tables.require_columns(train, spec.text_columns, train_path)
        train = without_empty_texts(train, spec.text_columns, train_path, s.warn)
        sample, sample_path = base.read_sample(s)
        test, test_path = self._test_table()
        columns = base.sample_targets(sample, spec, sample_path, test.columns)
        where = f"{train_path.name}"
        target = targets.multi(spec.metric, train, columns, spec.target_column, where, spec.identity_columns,
                               spec.target_range)
        if target is None:
            tables.require_columns(train, [spec.target_column], train_path)
            tables.require_filled(train, spec.target_column, train_path)
            target = targets.infer(spec.metric, train[spec.target_column], columns, f"{where}, column '{spec.target_column}'",
                                   spec.target_range)
        return train, train_path, sample, sample_path, test, test_path, target, base.fold_keys(spec, train, train_path)

    def _target_columns(self, target: Target) -> list[str]:
        return list(target.sources) if target.by_column else [self.spec.target_column]

    def _texts(self, table: pd.DataFrame, path: Path, tokenizer) -> list[str]:
        """The rows' texts; an empty one (left in the test table: training's are gone) is predicted, with a warning."""
        blank = empty_texts(table, self.spec.text_columns)
        if blank.any():
            self.session.warn(f"{_empty_line(blank, self.spec.text_columns, path)}; they are predicted from the special "
                              "tokens alone")
        sep = tokenizer.sep_token or tokenizer.eos_token or "\n"
        return text.join_columns(table, self.spec.text_columns, f" {sep} ")

    def _test_table(self) -> tuple[pd.DataFrame, Path]:
        spec = self.spec
        test_path = archives.find_file(self.session.data_dir, spec.test, "test table", log=self.session.log)
        test = tables.read_table(test_path, spec.id_column or None)
        tables.require_columns(test, [*([spec.id_column] if spec.id_column else []), *spec.text_columns], test_path)
        if spec.id_column:
            tables.require_unique(test, spec.id_column, test_path)
        return test, test_path

    def _test(self, test: pd.DataFrame, test_path: Path, sample: pd.DataFrame, sample_path: Path, tokenizer,
              max_length: int, key: str) -> tuple[Tokens, np.ndarray, pd.DataFrame]:
        """The test texts, tokenized, the sample row each goes to, and the sample: found by id, or the same row
        where [data] id_column is empty (the test table and the sample list the rows in one order). The two must
        match, but in predict mode the test table's rows make the submission's where they do not."""
        spec, trained = self.spec, self.session.trained is not None
        if not spec.id_column:
            if len(test) != len(sample) and not trained:
                raise KitError(f"{test_path.name}: {len(test)} rows, {sample_path.name} {len(sample)}; with no id_column "
                               "the test table's row k is the sample's row k, so both must list the same rows")
            if len(test) != len(sample):
                sample = base.rows_of_the_test(sample, range(len(test)), "", test_path.name, self.session.log)
            where = np.arange(len(test))
        else:
            ids = test[spec.id_column].astype(str)
            where = pd.Index(sample[spec.id_column].astype(str)).get_indexer(ids)
            if ((where < 0).any() or len(test) != len(sample)) and trained:
                sample = base.rows_of_the_test(sample, ids, spec.id_column, test_path.name, self.session.log)
                where = np.arange(len(test))
            if (where < 0).any() or len(test) != len(sample):
                missing = test[spec.id_column].astype(str).to_numpy()[where < 0]
                if len(missing):
                    detail = f"id '{missing[0]}' is not in {sample_path.name}"
                else:
                    detail = f"{len(test)} rows, the sample {len(sample)}"
                raise KitError(f"{test_path.name}: {detail}; the test table and the sample submission must list the same ids")
        texts = self._texts(test, test_path, tokenizer)
        tokens = text.tokenize(tokenizer, texts, max_length, key, log=self.session.log, what="test")
        return tokens, where.astype(np.int64), sample

    def _load_test(self, recipe: dict, folder: Path, tokenizer, key: str) -> TextData:
        """Predict mode: the test table and the sample submission, tokenized as the training run did."""
        s = self.session
        if recipe.get("tokenizer") not in (None, key):
            raise KitError(f"model folder {folder}: its tokenizer is not the one the training run used; attach the "
                           "model folder the training kernel had (its ids would mean other words)")
        sample, sample_path, target = base.trained_sample(s)
        test, test_path = self._test_table()
        tokens, where, sample = self._test(test, test_path, sample, sample_path, tokenizer, recipe["max_length"], key)
        data = TextData(None, tokens, None, target, sample, where, tokenizer.pad_token_id, folder, recipe)
        s.log(self.describe(data))
        return data

    def describe(self, data: TextData) -> str:
        t, test = data.target, data.test.lengths
        lines = [f"model          {data.folder}"]
        if data.train is not None:
            n = data.train.lengths
            lines.append(f"train          {len(n)} texts, {int(np.median(n))} tokens at the median, {int(n.max())} at most")
        here = "" if data.train is not None else " (predict mode: no training data here)"
        lines += [f"test           {len(test)} texts{here}",
                  f"target         {base.describe_target(t)}, metric {self.spec.metric}"]
        return "\n".join(lines)

    def show_samples(self, data: TextData, n: int = 3):
        """The texts' lengths in tokens against max_length, and the targets' distribution."""
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 3))
        tokens = data.train if data.train is not None else data.test
        axes[0].hist(tokens.lengths, bins=40, color="tab:blue")
        longest = data.recipe["max_length"]
        axes[0].axvline(longest, color="black", ls="--", label=f"max_length {longest}")
        axes[0].set(xlabel="tokens per text", ylabel="texts", title="lengths (batches pad to their own longest)")
        axes[0].legend(fontsize=7)
        if data.y is not None and data.y.ndim == 1:
            values, counts = np.unique(data.y, return_counts=True)
            if data.target.classification:
                labels = [str(data.target.classes[int(v)]) for v in values]
            else:
                labels = [f"{v:g}" for v in values]
            if len(values) <= 30:
                axes[1].bar(labels, counts, color="tab:green")
            else:
                axes[1].hist(data.y, bins=40, color="tab:green")
        axes[1].set(title=f"target ({', '.join(data.target.columns[:3])})", ylabel="texts")
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: TextData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds: [data] fold_column's, or grouped by group_column, stratified by class (by whole score under
        qwk, by label for multi-label) where they can be."""
        t = data.target
        classes = data.y if t.classification else np.rint(data.y).astype(np.int64) if t.record.scores else None
        return cv.make_folds(len(data.y), self.p.folds, self.p.seed, classes=classes, groups=data.groups,
                             labels=data.y if t.multilabel else None, assigned=data.assigned)

    def validation_rows(self, data: TextData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, targets) of validation texts `rows` in the order validation batches them: longest first
        (kit.data.text.bucketed without a generator; the stable sort keeps equal lengths in row order)."""
        order = rows[np.argsort(-data.train.lengths[rows], kind="stable")]
        return data.ids[order], data.y[order]

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: TextData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        """The encoder with its head, on the device; `pretrained=False` builds it from the folder's config
        alone, for a fold checkpoint's weights to be loaded next."""
        if pretrained and not self._announced:
            self.session.log(f"pretrained weights: {data.folder} (local files only)")
            self._announced = True
        model = TextModel(data.folder, data.target.outputs, data.pad_id, pretrained=pretrained,
                          gradient_checkpointing=self.p.gradient_checkpointing)
        return model.to(self.session.device)

    def objective(self, data: TextData):
        t, r = data.target, data.recipe
        if t.classification:
            return Classification(input_key="input_ids")
        if t.multilabel:
            return MultiLabel(input_key="input_ids")
        mean, std = (r["y_mean"][0], r["y_std"][0]) if not t.by_column else (r["y_mean"], r["y_std"])  # "values": a pair a column
        return Regression(mean, std, self.spec.metric, input_key="input_ids", limits=t.limits)

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: TextData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None) -> TextBatches:
        """Batches of texts `rows`, padded to each batch's longest (token ids need no precision or workers)."""
        tokens, y = (data.test, None) if test else (data.train, data.y)
        return TextBatches(tokens, rows, y, batch_size, shuffle=train, device=self.session.device, pad_id=data.pad_id,
                           seed=seed, shard=shard, max_length=data.recipe["max_length"])

    def host_bytes(self, data: TextData) -> int:
        arrays = [a for t in (data.train, data.test) if t is not None for a in (t.ids, t.offsets)]
        return 3 * sum(a.nbytes for a in arrays) + (data.y.nbytes if data.y is not None else 0)

    def trial_rows(self, data: TextData) -> np.ndarray:
        """The longest training texts: a batch size that fits them fits every bucket."""
        return np.argsort(-data.train.lengths, kind="stable")[:256]

    def predict_rows(self, data: TextData) -> int:
        return len(data.test)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: TextData, precision, batch_size: int) -> np.ndarray:
        """(sample rows, outputs): probabilities or values, in the sample submission's row order."""
        objective = self.objective(data)
        out = np.zeros((len(data.sample), data.target.outputs), np.float64)
        batches = self.batches(data, np.arange(len(data.test)), train=False, batch_size=batch_size, test=True)
        for batch, pred in base.predictions(model, batches, precision, lambda m, b: objective.predict(m(b["input_ids"]))):
            out[data.test_positions[batch["index"].cpu().numpy()]] = pred.reshape(len(pred), -1)
        return out
