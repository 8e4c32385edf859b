"""Sequence competitions (a long table, one row per time step) with an LSTM or a Transformer.

One output per row (`task = "per_step"`, e.g. ventilator pressure) or per sequence (`"per_sequence"`, e.g.
activity classes); regression or classification follows from the metric and the sample submission. The
padded tensors go to the GPU, when they fit, in the process that first makes batches of them (never in a
notebook that leaves the training to worker processes), and batches are gathered there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data import archives, records, sequences, tables
from kit.data.sequences import SequenceBatches, Sequences
from kit.errors import KitError
from kit.models.sequence import create_model
from kit.pipelines import base
from kit.runtime import runs
from kit.train import cv, targets
from kit.train.objectives import SequenceObjective
from kit.train.targets import Target


@dataclass
class SequenceData:
    train: Sequences | None  # None in predict mode
    test: Sequences
    target: Target
    sample: pd.DataFrame
    per_step: bool
    cardinalities: list[int]
    test_positions: np.ndarray  # per_step: (S, L) sample row of each test row (-1: padding); else (S,)
    # what prediction needs from the training data: the target, the prior, the categories' codes, the padded
    # length and the target's scale (the training run's in predict mode); feature standardisation is in each
    # fold model's own state
    recipe: dict
    identity: str = ""  # what decides training: the training table's values (kit.runtime.runs)
    placed: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)  # "train"/"test" tensors where batches come from
    row_ids: np.ndarray | None = None  # the training table's id of each of its rows (per_step: what oof.csv names)


class SequencePipeline(base.Pipeline):

    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> SequenceData:
        """Read and check the tables and pad them into sequences (in predict mode, only the test table and
        the sample submission, coded as the training run coded its own)."""
        s, spec = self.session, self.spec
        if not spec.sequence_column or not spec.order_column or not spec.features:
            raise KitError("[data] needs sequence_column, order_column and features for a sequence template")
        if not spec.test:
            raise KitError("[data] test is empty: a sequence template needs the test table's file name")
        if not spec.id_column:
            raise KitError("[data] id_column is empty; a sequence template matches its predictions to the sample "
                           "submission's rows by id: name that column")
        if s.trained is not None:
            return self._load_test(s.trained.recipe)
        train_path = archives.find_file(s.data_dir, spec.train, "training table", log=s.log)
        test_path = archives.find_file(s.data_dir, spec.test, "test table", log=s.log)
        sample_path = archives.find_file(s.data_dir, spec.sample_submission, "sample submission", log=s.log)
        train, test = self._read(train_path), self._read(test_path)
        sample = tables.read_table(sample_path, spec.id_column)
        tables.require_columns(sample, [spec.id_column], sample_path)
        tables.require_unique(sample, spec.id_column, sample_path)
        columns = base.sample_targets(sample, spec, sample_path, test.columns)
        per_step = spec.task == "per_step"
        # several per-step target columns (stanford-covid-vaccine's five), when the training table holds them all
        target = targets.multi(spec.metric, train, columns, spec.target_column, train_path.name,
                               target_range=spec.target_range) if per_step else None
        sequences.check_columns(train, spec, train_path, need_target=target is None)
        sequences.check_columns(test, spec, test_path, need_target=False)
        scored = sequences.score_rows(train, spec.score_mask, train_path)
        target_columns = list(target.columns) if target is not None else [spec.target_column]
        if spec.step_columns:  # steps past a target list's end (positions never scored) have no target: not scored
            scored = scored & train[target_columns].notna().all(axis=1).to_numpy()
        else:
            for column in target_columns:
                tables.require_filled(train, column, train_path)
        if target is None:
            if per_step:
                labels = train[spec.target_column]
            else:
                labels = train.groupby(spec.sequence_column, sort=False)[spec.target_column].first()
            target = targets.infer(spec.metric, labels, columns, f"{train_path.name}, column '{spec.target_column}'",
                                   spec.target_range)
        y = targets.encode(target, train if target.by_column else train[spec.target_column].fillna(0))
        y = np.nan_to_num(y) if target.by_column else y  # unscored steps: any number, weighted 0
        codes = sequences.category_codes([train, test], spec.categorical)
        length = int(max(train.groupby(spec.sequence_column).size().max(), test.groupby(spec.sequence_column).size().max()))
        tr = sequences.to_sequences(train, spec, codes, y, scored, per_step, length)
        te = sequences.to_sequences(test, spec, codes, None, np.ones(len(test), np.float32), per_step, length)
        positions = self._sample_positions(te, test, sample, per_step, test_path, sample_path)
        values = tr.y[tr.weight > 0] if per_step else tr.y  # the scored rows
        cardinalities = [len(codes[c]) for c in spec.categorical]
        scale = (values.mean(0).tolist(), values.std(0).tolist()) if target.by_column else (float(values.mean()),
                                                                                            float(values.std()))
        recipe = {"target": base.target_record(target), "prior": targets.prior(target, values, spec.metric),
                  "codes": {c: list(codes[c]) for c in codes}, "cardinalities": cardinalities, "length": tr.length,
                  "y_mean": scale[0] if not target.classification else 0.0,
                  "y_std": scale[1] if not target.classification else 1.0}
        # exploded tables keep other per-row lists (stanford's error columns), which do not hash: the columns read
        used = list(dict.fromkeys([spec.sequence_column, spec.order_column, *spec.features, *spec.categorical,
                                   *target_columns])) if spec.step_columns else list(train.columns)
        data = SequenceData(tr, te, target, sample, per_step, cardinalities, positions, recipe,
                            runs.digest(pd.util.hash_pandas_object(train[used], index=False).to_numpy(),
                                        np.array(target.columns)), row_ids=train[spec.id_column].to_numpy())
        s.log(self.describe(data))
        return data

    def _load_test(self, recipe: dict) -> SequenceData:
        """Predict mode: the test table and the sample submission; categories the training run never saw get
        the padding code, and say so."""
        s, spec = self.session, self.spec
        test_path = archives.find_file(s.data_dir, spec.test, "test table", log=s.log)
        test = self._read(test_path)
        sequences.check_columns(test, spec, test_path, need_target=False)
        sample, sample_path, target = base.trained_sample(s)
        codes = {c: pd.Index(v) for c, v in recipe["codes"].items()}
        for column, known in codes.items():
            unseen = int((~test[column].isin(known) & test[column].notna()).sum())
            if unseen:
                s.warn(f"{test_path.name}: {unseen} rows hold '{column}' values the training run never saw; they are "
                       "coded as padding")
        length = max(recipe["length"], int(test.groupby(spec.sequence_column).size().max()))
        per_step = spec.task == "per_step"
        te = sequences.to_sequences(test, spec, codes, None, np.ones(len(test), np.float32), per_step, length)
        positions = self._sample_positions(te, test, sample, per_step, test_path, sample_path)
        data = SequenceData(None, te, target, sample, per_step, recipe["cardinalities"], positions, recipe)
        s.log(self.describe(data))
        return data

    def _read(self, path) -> pd.DataFrame:
        """A long table: as it is, or with `step_columns` exploded into one row per step (kit.data.records)."""
        spec = self.spec
        table = tables.read_table(path, spec.id_column)
        if not spec.step_columns:
            return table
        held = [c for c in spec.step_columns if c in table.columns]  # the test table lacks the targets' lists
        return records.explode(table, held or spec.step_columns, spec.sequence_column, spec.order_column, spec.id_column,
                               path.name)

    def _sample_positions(self, te: Sequences, test: pd.DataFrame, sample: pd.DataFrame, per_step: bool,
                          test_path, sample_path) -> np.ndarray:
        """Where each test prediction goes in the sample submission; every id on both sides must match."""
        sample_ids = pd.Index(sample[self.spec.id_column].astype(str))
        ids = test[self.spec.id_column].astype(str).to_numpy() if per_step else te.ids
        where = sample_ids.get_indexer(ids)  # -1: not in the sample submission
        if (where < 0).any():
            what = "row id" if per_step else "sequence id"
            raise KitError(f"{test_path.name}: {what} '{ids[np.flatnonzero(where < 0)[0]]}' is not in {sample_path.name} "
                           f"({int((where < 0).sum())} such); the test table and the sample submission must list the same ids")
        covered = np.zeros(len(sample_ids), bool)
        covered[where] = True
        if not covered.all():
            raise KitError(f"{sample_path.name}: id '{sample_ids[np.flatnonzero(~covered)[0]]}' has no rows in {test_path.name}")
        if not per_step:
            return where.astype(np.int64)
        positions = np.full(te.mask.shape, -1, np.int64)
        positions[te.mask] = where[te.row_index[te.mask]]
        return positions

    def describe(self, data: SequenceData) -> str:
        tr, t = data.train, data.target
        if tr is None:
            return (f"test           {len(data.test.ids)} sequences, up to {data.test.length} steps (predict mode: "
                    f"no training data here)\ntarget         {self.spec.task}, metric {self.spec.metric}")
        rows = int(tr.mask.sum())
        scored = ""
        if self.spec.score_mask:
            scored = f", {float((tr.weight > 0).sum()) / rows:.0%} of rows scored ({self.spec.score_mask})"
        kind = base.describe_target(t)
        return (f"train          {len(tr.ids)} sequences, {rows} rows, up to {tr.length} steps{scored}\n"
                f"test           {len(data.test.ids)} sequences\n"
                f"features       {len(self.spec.features)} numeric, {len(self.spec.categorical)} categorical\n"
                f"target         {self.spec.task}, {kind}, metric {self.spec.metric}")

    def show_samples(self, data: SequenceData, n: int = 3):
        """A few training sequences: each feature (standardised for the plot) and the target over time."""
        import matplotlib.pyplot as plt

        tr = data.train
        if tr is None:  # predict mode: the test sequences (no target)
            tr = data.test
        fig, axes = plt.subplots(1, min(n, len(tr.ids)), figsize=(5 * min(n, len(tr.ids)), 3), squeeze=False)
        mean, std = sequences.standardizer(tr, np.arange(len(tr.ids)))
        for ax, i in zip(axes.flat, range(n)):
            real = tr.mask[i]
            for f, name in enumerate(self.spec.features[:6]):
                ax.plot(((tr.x[i, real, f] - mean[f]) / std[f]), lw=0.8, label=name)
            order = self.spec.order_column
            ax.set(xlabel=f"step (by {order})" if order else "step", ylabel="feature (standardised)")
            lines, top = list(ax.get_lines()), ax
            if data.per_step and not data.target.classification and tr.y is not None:
                top = ax.twinx()  # the target in its own units, on the right; drawn over ax, so it holds the legend
                lines += top.plot(tr.y[i, real], color="black", lw=1.2, label=f"{self.spec.target_column} (right axis)")
                top.set_ylabel(self.spec.target_column)
            ax.set_title(f"{self.spec.sequence_column} {tr.ids[i]}", fontsize=9)
            top.legend(lines, [line.get_label() for line in lines], fontsize=6, loc="upper right")
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: SequenceData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds of whole sequences (stratified by class for per-sequence classification)."""
        classes = data.train.y if data.target.classification and not data.per_step else None
        return cv.make_folds(len(data.train.ids), self.p.folds, self.p.seed, classes=classes)

    def validation_rows(self, data: SequenceData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, targets) of validation sequences `rows`: per step, each real step's row id, sequence by sequence
        and step by step (as the objective flattens them); per sequence, the sequence ids."""
        tr = data.train
        if not data.per_step:
            return tr.ids[rows], tr.y[rows]
        real = tr.mask[rows]
        return data.row_ids[tr.row_index[rows][real]], tr.y[rows][real]

    # -- model ------------------------------------------------------------------------------------------
    def model(self, data: SequenceData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> nn.Module:
        """The template's model; `fit_rows` (a fold's training sequences) set its feature standardisation,
        which it keeps in its state, so a fold checkpoint predicts with its own statistics."""
        p = self.p
        model = create_model(
            self.session.template, features=len(self.spec.features), cardinalities=data.cardinalities,
            outputs=data.target.outputs, per_step=data.per_step, d_model=p.d_model, hidden_size=p.hidden_size,
            num_layers=p.num_layers, dropout=p.dropout, nhead=p.nhead, conv_kernel=p.conv_kernel,
        )
        if fit_rows is not None:
            mean, std = sequences.standardizer(data.train, fit_rows)
            model.front.set_standardization(torch.from_numpy(mean), torch.from_numpy(std))
        return model.to(self.session.device)

    def objective(self, data: SequenceData) -> SequenceObjective:
        r = data.recipe
        return SequenceObjective(data.target.classification, data.per_step, self.spec.metric, r["y_mean"], r["y_std"])

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: SequenceData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None,
                workers: int | None = None) -> SequenceBatches:
        """Batches of sequences `rows` (features in float32: autocast casts them where it pays)."""
        split = "test" if test else "train"
        if split not in data.placed:
            seqs = data.test if test else data.train
            log = self.session.log if split == "train" else (lambda message: None)
            data.placed[split] = sequences.place(seqs.tensors(), self.session.device, log)
        return SequenceBatches(data.placed[split], rows, batch_size, shuffle=train, device=self.session.device, seed=seed,
                               shard=shard, prefetch=self.session.setup.prefetch)

    def host_bytes(self, data: SequenceData) -> int:
        """Host memory a process that loads this data needs at its peak: the tables, and the CSVs they were
        built from, about twice as much again."""
        arrays = [a for q in (data.train, data.test) if q is not None
                  for a in (q.x, q.cat, q.mask, q.weight, q.row_index, q.y) if a is not None]
        return 3 * sum(a.nbytes for a in arrays)

    def release(self, data: SequenceData) -> None:
        """Give the device copies back (before worker processes take the GPUs); batches place them again."""
        data.placed.clear()

    def trial_rows(self, data: SequenceData) -> np.ndarray:
        """Training rows a batch-size trial may draw from."""
        return np.arange(len(data.train.ids))

    def predict_rows(self, data: SequenceData) -> int:
        return len(data.test.ids)

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: SequenceData, precision, batch_size: int) -> np.ndarray:
        """(sample rows, outputs): probabilities or values, in the sample submission's row order."""
        objective = self.objective(data)

        def forward(model: nn.Module, batch) -> torch.Tensor:
            return objective.predict(model(batch["x"], batch["cat"], batch["mask"], batch["lengths"]))

        out = np.zeros((len(data.sample), data.target.outputs), np.float64)
        rows = np.arange(len(data.test.ids))
        batches = self.batches(data, rows, train=False, batch_size=batch_size, test=True)
        done = 0
        for _, pred in base.predictions(model, batches, precision, forward):
            n = len(pred)
            where = data.test_positions[done : done + n]
            if data.per_step:
                real = where >= 0
                out[where[real]] = pred.reshape(n, pred.shape[1], -1)[real]
            else:
                out[where] = pred
            done += n
        return out
