"""Tables of features (template "tabular"): gradient-boosted trees (XGBoost, LightGBM, CatBoost) or a tabular
network, chosen by model_name.

The training table (sampled to train_rows where asked) and the test table are read with their numbers
downcast; the features are decided once from the training table (kit.data.features: numbers, categories,
datetimes' parts, codes' characters) and read the same way in predict mode from the recipe. The target follows
from the metric and the sample submission as in every template. The boosters train each fold in
kit.train.boosting (`fit_fold`), the network in the one training loop; both write the same fold checkpoints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kit.data import features, frames, joins, sequences, signal_features, tables
from kit.data.features import Encoded
from kit.data.rows import RowBatches
from kit.errors import KitError
from kit.metric_records import absolute, metric_record
from kit.models import boosters
from kit.models.tabular import TabularNet, statistics
from kit.pipelines import base, confidence, tabular_checks
from kit.runtime import paths, runs
from kit.runtime.budget import Budget
from kit.runtime.run_folder import FoldFiles
from kit.runtime.session import Session
from kit.train import boosting, cv, per_group, targets
from kit.train.boosting import BoostConfig
from kit.train.kinds import classes_text
from kit.train.objectives import Classification, MultiLabel, Regression, moments
from kit.train.results import FitConfig, FitResult
from kit.train.targets import Target


@dataclass
class TableData:
    train: Encoded | None  # None in predict mode
    test: Encoded
    y: np.ndarray | None  # the encoded target (kit.train.targets.encode)
    target: Target
    sample: pd.DataFrame
    where: np.ndarray  # (test rows,) the sample row each test row goes to
    # what prediction needs from the training data: the target, the prior, the features' kinds and levels, the
    # target's scale (the training run's in predict mode)
    recipe: dict
    identity: str = ""  # what decides training: the training table's values (kit.runtime.runs)
    groups: np.ndarray | None = None  # [data] group_column's values, fold_column's: the folds follow them
    assigned: np.ndarray | None = None
    ids: np.ndarray | None = None  # the training rows' ids (their row numbers without an id column): oof.csv's rows
    placed: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)  # the mlp's tensors on the device
    score_groups: np.ndarray | None = None  # (training rows,) [data] score_groups' values: a grouped metric's groups
    weight: np.ndarray | None = None  # (training rows,) 1 where a row counts in the metric ([data] score_mask), else 0


def pipeline(session: Session) -> TabularPipeline:
    """The session's tabular pipeline: the boosters', or the network's (model_name = "mlp")."""
    return MlpPipeline(session) if session.params.model_name == "mlp" else BoosterPipeline(session)


class TabularPipeline(base.Pipeline):
    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> TableData:
        """Read and check the tables and the sample submission, decide the features and encode both tables
        (in predict mode, the test table and the sample only, read as the training run read its own)."""
        s, spec = self.session, self.spec
        tabular_checks.require_test(spec)
        if s.trained is not None:
            return self._load_test(s.trained.recipe)
        train_path = paths.require_file(s.data_dir, spec.train, "training table")
        train = frames.read_table(train_path, spec.id_column or None, self.p.train_rows, self.p.seed, s.log)
        sample, sample_path = base.read_sample(s)
        read = [c for c in dict.fromkeys([*train.columns, *sample.columns]) if c not in spec.drop_columns]
        test, test_path = self._test_table(read, "every test row is predicted, so it is read whole: lower train_rows to leave "
                                                 "it room, leave out columns the model need not read ([data] drop_columns), "
                                                 "or run where there is more memory")
        train, test = joins.build(spec, s.data_dir, train, test, sample, (train_path.name, test_path.name), s.warn)
        train, test, series = signal_features.joined(spec, s.data_dir, train, test, s.hardware.cpu_count, s.log)
        target, sources, kinds = tabular_checks.checked(spec, train, test, sample, (train_path, test_path, sample_path), s.log)
        if self.p.models_by and (self.p.model_name == "mlp" or self.p.models_by not in kinds["kinds"]):
            raise KitError(f"[params] models_by = '{self.p.models_by}': " + ("the boosters read it, not the mlp" if
                           self.p.model_name == "mlp" else "not a feature the model reads; name one of its features"))
        if self.p.model_name == "mlp" and (metric_record(spec.metric).grouped or spec.score_mask):
            raise KitError(f"metric {spec.metric}" + (f" with score_mask '{spec.score_mask}'" if spec.score_mask else "") +
                           " is scored by the boosters' folds only (the network's validation rows hold no groups or "
                           "mask); set model_name to xgboost, lightgbm or catboost")
        y = targets.encode(target, train if target.by_column else train[spec.target_column])
        groups, assigned = base.fold_keys(spec, train, train_path)
        regression = not (target.classification or target.multilabel)
        mean, std = moments(y, spec.metric) if regression else ([0.0], [1.0])
        prior = targets.prior(target, y, spec.metric)
        scored = sequences.score_rows(train, spec.score_mask, train_path)  # every row without [data] score_mask
        recipe = {"target": base.target_record(target), "prior": prior.tolist(), "features": kinds, "y_mean": mean,
                  "y_std": std}
        if series:  # the series files' columns the features were read from: predict mode reads the same
            recipe["series_columns"] = series
        if confidence.wanted(spec):  # the fallback's confidence, and predict mode's where no fold left oof rows
            recipe["confidence"] = confidence.spread(y[scored], prior)
        used = [*kinds["kinds"], *sources]
        identity = runs.digest(pd.util.hash_pandas_object(train[used], index=False).to_numpy(), np.array(target.columns))
        sample, where = self._where(test, test_path, sample, sample_path)
        data = TableData(features.encode(train, kinds), features.encode(test, kinds, test_path.name, s.warn), y, target,
                         sample, where, recipe, identity, groups, assigned,
                         train[spec.id_column].astype(str).to_numpy() if spec.id_column in train else np.arange(len(train)),
                         score_groups=train[spec.score_groups].astype(str).to_numpy() if spec.score_groups else None,
                         weight=scored.astype(np.float32) if spec.score_mask else None)
        s.log(self.describe(data))
        return data

    def _test_table(self, columns: list[str], whole: str) -> tuple[pd.DataFrame, Path]:
        """The test table's `columns` (those it holds, and its ids): every row, in chunks where it is large; where it
        would not fit the memory, `whole` says what to do (no sample of it will do)."""
        spec = self.spec
        if not spec.test:  # rows of series files and no test table (tabular_checks.require_test): the sample's ids
            sample, sample_path = base.read_sample(self.session)
            return sample[[spec.id_column]].astype(str), sample_path
        test_path = paths.require_file(self.session.data_dir, spec.test, "test table")
        by_id = spec.id_column and not spec.id_parts  # else the test rows are made from the sample's ids (kit.data.joins)
        wanted = [spec.id_column, *columns] if by_id else columns
        test = frames.read_table(test_path, spec.id_column if by_id else None, columns=wanted, whole=whole)
        if by_id:
            tables.require_columns(test, [spec.id_column], test_path)
            tables.require_unique(test, spec.id_column, test_path)
        return test, test_path

    def _where(self, test: pd.DataFrame, test_path, sample: pd.DataFrame, sample_path,
               trained: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
        """(the sample, the sample row of each test row): found by id, or the same row where [data] id_column is
        empty. In predict mode a test table the sample does not cover makes the rows (base.rows_of_the_test)."""
        spec = self.spec
        ids = test[spec.id_column].astype(str) if spec.id_column else None
        where = (pd.Index(sample[spec.id_column].astype(str)).get_indexer(ids) if spec.id_column
                 else np.arange(len(test)))
        if ((where < 0).any() or len(test) != len(sample)) and trained:
            sample = base.rows_of_the_test(sample, ids if spec.id_column else range(len(test)), spec.id_column,
                                           test_path.name, self.session.log)
            return sample, np.arange(len(test))
        if not spec.id_column and len(test) != len(sample):
            raise KitError(f"{test_path.name}: {len(test)} rows, {sample_path.name} {len(sample)}; with no id_column "
                           "the test table's row k is the sample's row k, so both must list the same rows")
        if (where < 0).any() or len(test) != len(sample):
            missing = ids.to_numpy()[where < 0]
            detail = f"id '{missing[0]}' is not in {sample_path.name}" if len(missing) else \
                f"{len(test)} rows, the sample {len(sample)}"
            raise KitError(f"{test_path.name}: {detail}; the test table and the sample submission must list the same ids")
        return sample, where.astype(np.int64)

    def _load_test(self, recipe: dict) -> TableData:
        """Predict mode: the test table and the sample submission, encoded with the training run's recipe."""
        s = self.session
        sample, sample_path, target = base.trained_sample(s)
        read = [*recipe["features"]["kinds"], *joins.sources(self.spec, list(recipe["features"]["kinds"])), *sample.columns]
        test, test_path = self._test_table(read, f"every test row is predicted, so it is read whole (the {len(read)} columns "
                                                 "the model and the sample read): run where there is more memory")
        test = joins.build(self.spec, s.data_dir, None, test, sample, ("", test_path.name), s.warn,
                           tuple(recipe["features"]["kinds"]))[1]
        test = signal_features.joined(self.spec, s.data_dir, None, test, s.hardware.cpu_count, s.log,
                                      recipe.get("series_columns", ()))[1]
        absent = [c for c in recipe["features"]["kinds"] if c not in test.columns]
        if absent:
            raise KitError(f"{test_path.name}: no column '{absent[0]}' the model reads ({len(absent)} such); predict with "
                           "this competition's test table")
        encoded = features.encode(test, recipe["features"], test_path.name, s.warn)
        sample, where = self._where(test, test_path, sample, sample_path, trained=True)
        data = TableData(None, encoded, None, target, sample, where, recipe)
        s.log(self.describe(data))
        return data

    def describe(self, data: TableData) -> str:
        kinds = list(data.recipe["features"]["kinds"].values())
        plural = {"number": "numbers", "category": "categories", "datetime": "datetimes", "code": "codes"}
        counted = {k: sum(1 for v in kinds if v.split(":")[0] == k) for k in plural}
        what = ", ".join(f"{n} {k if n == 1 else plural[k]}" for k, n in counted.items() if n)
        t = data.target
        kind = classes_text(t) if t.classes else t.record.describe(t)  # an ordinal's scores as classes
        rows = f"{len(data.train.numbers):,} rows" if data.train is not None else "predict mode: no training data here"
        return (f"train          {rows}\ntest           {len(data.test.numbers):,} rows\n"
                f"features       {len(kinds)} columns: {what}; {len(data.test.names)} model inputs\n"
                f"target         {kind}, metric {self.spec.metric}\nmodel          {self.model_line()}")

    def model_line(self) -> str:
        return "mlp (a tabular network in the training loop)"

    def show_samples(self, data: TableData, n: int = 12):
        """The target's distribution and each feature's share of missing values, saved as samples.png."""
        import matplotlib.pyplot as plt

        table = data.train if data.train is not None else data.test
        fig, (ax_y, ax_gap) = plt.subplots(1, 2, figsize=(11, 3.6))
        if data.y is not None and data.target.classification:
            counts = np.bincount(data.y, minlength=len(data.target.classes))
            ax_y.bar([str(c) for c in data.target.classes][:30], counts[:30])
        elif data.y is not None:
            ax_y.hist(data.y.reshape(len(data.y), -1), bins=40, label=list(data.target.columns))
            ax_y.legend(fontsize=7)
        ax_y.set(title="target (training rows)" if data.y is not None else "no target in predict mode")
        gaps = np.concatenate([np.isnan(table.numbers).mean(0), (table.codes < 0).mean(0)])
        order = np.argsort(-gaps)[: min(n + 3, len(gaps))]
        ax_gap.barh([table.names[i] for i in order][::-1], gaps[order][::-1])
        ax_gap.set(title="missing values, share of rows", xlim=(0, 1))
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def split(self, data: TableData) -> list[tuple[np.ndarray, np.ndarray]]:
        """Folds stratified by class (multi-label: by label), or by the group or fold column."""
        t = data.target
        return cv.make_folds(len(data.y), self.p.folds, self.p.seed, classes=data.y if t.classification else None,
                             groups=data.groups, labels=data.y if t.multilabel else None, assigned=data.assigned)

    def validation_rows(self, data: TableData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ids, targets) of validation rows `rows`, in their order (a booster predicts them at once, the network's
        validation batches keep it)."""
        return data.ids[rows], data.y[rows]

    def host_bytes(self, data: TableData) -> int:
        """The tables, and the text they were read from, about twice as much again."""
        return 3 * sum(t.nbytes() for t in (data.train, data.test) if t is not None)

    def release(self, data: TableData) -> None:
        data.placed.clear()

    def predict_rows(self, data: TableData) -> int:
        return len(data.test.numbers)

    def cut(self, data: TableData, pred: np.ndarray, oof: list[dict]) -> np.ndarray:
        """Under a metric of a value and a confidence, the confidence fitted on the out-of-fold rows beside the values
        (kit.pipelines.confidence); else the shared cut."""
        if confidence.wanted(self.spec):
            return confidence.cut(pred, oof, data.recipe, self.session.log)
        return super().cut(data, pred, oof)

    def submission(self, data: TableData, pred: np.ndarray) -> pd.DataFrame:
        if confidence.wanted(self.spec):
            column = confidence.column(self.spec, data.sample, list(data.target.columns), Path(self.spec.sample_submission))
            return confidence.frame(data.sample, data.target, pred, column, base.submission_frame)
        return super().submission(data, pred)

    def _in_sample_order(self, data: TableData, pred: np.ndarray) -> np.ndarray:
        out = np.zeros((len(data.sample), pred.shape[1]), np.float64)
        out[data.where] = pred
        return out


class BoosterPipeline(TabularPipeline):
    """XGBoost, LightGBM or CatBoost: a fold trains in kit.train.boosting, one booster per target column where the
    target has several (values, labels) and one for the classes otherwise."""

    fits_folds = True  # kit.train.boosting trains each fold, not kit's loop: no objective, no batches

    def objective(self, data: TableData):
        raise NotImplementedError("boosters train in fit_fold, not in kit's loop")

    def batches(self, data: TableData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0, test: bool = False,
                shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None):
        raise NotImplementedError("boosters train in fit_fold, not in kit's loop")

    def model_line(self) -> str:
        name = self.p.model_name
        device = self.settings(0).device
        where = device if name != "lightgbm" and device != "cpu" else "the CPU"
        return f"{name} {boosters.version(name)} on {where}"

    def settings(self, cells: int) -> boosters.Settings:
        """The boosters' settings, on a table of `cells` values (which decides their threads)."""
        p, device = self.p, self.session.device
        return boosters.Settings(p.learning_rate, p.early_stopping_rounds, p.max_depth, p.num_leaves, p.subsample,
                                 p.colsample, p.seed, boosters.threads(cells, torch.get_num_threads()),
                                 f"cuda:{device.index or 0}" if device.type == "cuda" else "cpu")

    def task(self, target: Target) -> boosters.Task:
        metric = self.spec.metric
        if target.multilabel or (target.classification and target.outputs == 2):
            return boosters.Task("binary")  # stopped on the log loss, even for the AUC (kit.models.boosters)
        if target.classification:
            return boosters.Task("multiclass", classes=target.outputs)
        return boosters.Task("regression", l1=absolute(metric))

    def columns(self, data: TableData, rows: np.ndarray) -> list[np.ndarray]:
        """The target of each booster on `rows`: a column each for several, log1p(y) under rmsle."""
        y = data.y[rows]
        if data.target.by_column and not data.target.classification:  # values, or labels: a booster a column
            y_columns = [y[:, k] for k in range(y.shape[1])]
        else:
            y_columns = [y]
        if self.spec.metric == "rmsle":
            y_columns = [np.log1p(np.maximum(c, 0.0)) for c in y_columns]
        return [np.asarray(c, dtype=np.float32 if not data.target.classification else np.int64) for c in y_columns]

    def convert(self, data: TableData, preds: list[np.ndarray]) -> np.ndarray:
        """The boosters' predictions as the metric and the submission read them: class probabilities, each label's
        probability, or values in the target's units within its limits."""
        t = data.target
        if t.classification:
            p = preds[0]
            return np.stack([1.0 - p, p], 1) if p.ndim == 1 else p
        out = np.stack(preds, 1).astype(np.float64)
        if t.multilabel:
            return out
        if self.spec.metric == "rmsle":
            out = np.expm1(out)
        return targets.clip(t, out)

    def model(self, data: TableData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> FoldBoosters:
        return FoldBoosters(self.settings(data.test.numbers.size + data.test.codes.size))

    def fit_fold(self, data: TableData, train_rows: np.ndarray, val_rows: np.ndarray, cfg: FitConfig, files: FoldFiles,
                 budget: Budget, fold: tuple[int, int], log, desc: str) -> FitResult:
        """A fold's boosters trained and checkpointed (kit.train.boosting), in place of the training loop."""
        columns = self.columns(data, train_rows)
        settings = self.settings(len(train_rows) * len(data.train.names))
        made = [self.booster(self.task(data.target), settings) for _ in columns]
        kind = made[0].categories
        return boosting.fit(made, data.train.frame(train_rows, kind), columns, data.train.frame(val_rows, kind),
                            self.columns(data, val_rows), lambda preds: self.convert(data, preds), data.y[val_rows],
                            BoostConfig(self.p.rounds, self.p.early_stopping_rounds, cfg.metric), files, budget, fold,
                            log, desc, data.score_groups[val_rows] if data.score_groups is not None else None,
                            data.weight[val_rows] if data.weight is not None else None)

    def booster(self, task: boosters.Task, settings: boosters.Settings) -> boosters.Booster:
        """One target column's booster: of model_name, or one of them per value of [params] models_by."""
        if self.p.models_by:
            return per_group.PerGroup(lambda: boosters.create(self.p.model_name, task, settings), self.p.models_by)
        return boosters.create(self.p.model_name, task, settings)

    def predict(self, model: FoldBoosters, data: TableData, precision=None, batch_size: int = 0) -> np.ndarray:
        """(sample rows, outputs): the fold's boosters on the test table, in the sample submission's row order."""
        frame = data.test.frame(categories=model.boosters[0].categories)
        return self._in_sample_order(data, self.convert(data, [b.predict(frame) for b in model.boosters]))


class FoldBoosters:
    """A fold's boosters as the submission step handles a model: state_dict() and load_state_dict() of their
    libraries' serialized models (kit.models.boosters)."""

    def __init__(self, settings: boosters.Settings):
        self.settings = settings
        self.boosters: list[boosters.Booster] = []

    def state_dict(self) -> dict:
        return {"boosters": [b.state() for b in self.boosters]}

    def load_state_dict(self, state: dict) -> None:
        self.boosters = [per_group.restore(s, self.settings) for s in state["boosters"]]


class MlpPipeline(TabularPipeline):
    """The tabular network (kit.models.tabular) in the one training loop: the features' tensors stay on the device
    and batches are gathered there."""

    def load(self) -> TableData:
        data = super().load()
        table = data.train if data.train is not None else data.test
        if self.session.device.type == "cpu" and table.numbers.size + table.codes.size < boosters.PARALLEL_CELLS:
            # a small network's steps are too short to share: two threads took 200 ms a step here, one 8 ms
            torch.set_num_threads(1)
            self.session.log("cpu threads    1: a small table's steps are too short to share between threads")
        return data

    def model(self, data: TableData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> TabularNet:
        p, table = self.p, data.train if data.train is not None else data.test
        model = TabularNet(table.numbers.shape[1], table.cardinalities, data.target.outputs, p.hidden_size, p.num_layers,
                           p.dropout)
        if fit_rows is not None:
            model.set_standardization(*statistics(data.train.numbers, fit_rows))
        return model.to(self.session.device)

    def objective(self, data: TableData):
        t, r = data.target, data.recipe
        if t.classification:
            return Classification("x")
        if t.multilabel:
            return MultiLabel("x")
        return Regression(r["y_mean"], r["y_std"], self.spec.metric, input_key="x", limits=t.limits)

    def batches(self, data: TableData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0, test: bool = False,
                shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None) -> RowBatches:
        split = "test" if test else "train"
        if split not in data.placed:
            table = data.test if test else data.train
            x = np.concatenate([table.numbers, (table.codes + 1).astype(np.float32)], 1)  # codes: exact in float32
            placed = {"x": torch.from_numpy(x)}
            if not test:
                placed["target"] = torch.from_numpy(data.y)
            data.placed[split] = {k: v.to(self.session.device) for k, v in placed.items()}
        return RowBatches(data.placed[split], rows, batch_size, train, seed, shard)

    def trial_rows(self, data: TableData) -> np.ndarray:
        return np.arange(len(data.y))

    def predict(self, model: TabularNet, data: TableData, precision, batch_size: int) -> np.ndarray:
        """(sample rows, outputs): probabilities or values, in the sample submission's row order."""
        objective = self.objective(data)
        batches = self.batches(data, np.arange(len(data.test.numbers)), False, batch_size, test=True)
        pred = np.concatenate([p for _, p in base.predictions(model, batches, precision,
                                                               lambda m, b: objective.predict(m(b["x"])))])
        return self._in_sample_order(data, pred.reshape(len(pred), -1))
