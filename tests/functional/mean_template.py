"""A template from outside kit, in the test suite: one learnt constant per target column, trained in kit's loop
(it converges to the training mean), on a table of ids and values. Its rooms are this module (params, pipeline,
footprint) and its record `MEAN`, which `kit.templates.register("mean_template:MEAN")` adds; its notebook is kit's
skeleton's. Nothing in kit names it."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit import params, templates
from kit.data import tables
from kit.data.rows import RowBatches
from kit.pipelines import base
from kit.runtime import paths, runs
from kit.runtime.resources import Need, Sizes
from kit.train import cv, targets
from kit.train.objectives import Regression, moments

READS = ("train", "test", "sample_submission", "id_column", "target_column")


@dataclass(frozen=True)
class MeanParams(params.TrainParams):
    pass  # the contract's parameters are all it has


@dataclass
class MeanData:
    y: np.ndarray | None  # (train rows,) the target; None in predict mode
    test_rows: int
    target: targets.Target
    sample: pd.DataFrame
    recipe: dict
    identity: str = ""


class Constant(nn.Module):
    """A learnt value per output, whatever the row: its input is only how many rows there are."""

    def __init__(self, outputs: int):
        super().__init__()
        self.value = nn.Parameter(torch.zeros(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.value.expand(len(x), -1)  # (B, outputs)


class MeanPipeline(base.Pipeline):
    def load(self) -> MeanData:
        s, spec = self.session, self.spec
        sample, sample_path = base.read_sample(s)
        test_rows = len(tables.read_table(paths.require_file(s.data_dir, spec.test, "test table"), spec.id_column))
        if s.trained is not None:
            return MeanData(None, test_rows, targets.Target(**s.trained.recipe["target"]), sample, s.trained.recipe)
        train_path = paths.require_file(s.data_dir, spec.train, "training table")
        train = tables.read_table(train_path, spec.id_column)
        columns = base.sample_targets(sample, spec, sample_path)
        target = targets.infer(spec.metric, train[spec.target_column], columns, train_path.name, ())
        y = targets.encode(target, train[spec.target_column])
        mean, std = moments(y, spec.metric)
        recipe = {"target": base.target_record(target), "prior": targets.prior(target, y, spec.metric).tolist(),
                  "y_mean": mean, "y_std": std}
        s.log(f"train          {len(y)} rows, test {test_rows} rows: one constant learnt")
        return MeanData(y, test_rows, target, sample, recipe, runs.digest(y))

    def show_samples(self, data: MeanData, n: int = 12):
        return None

    def split(self, data: MeanData) -> list[tuple[np.ndarray, np.ndarray]]:
        return cv.make_folds(len(data.y), self.p.folds, self.p.seed)

    def model(self, data: MeanData, pretrained: bool = True, fit_rows: np.ndarray | None = None) -> Constant:
        return Constant(data.target.outputs).to(self.session.device)

    def objective(self, data: MeanData) -> Regression:
        return Regression(data.recipe["y_mean"], data.recipe["y_std"], self.spec.metric, input_key="x")

    def batches(self, data: MeanData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0, test: bool = False,
                shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None) -> RowBatches:
        count = data.test_rows if test else len(data.y)
        tensors = {"x": torch.zeros(count, 1)}
        if not test:
            tensors["target"] = torch.from_numpy(np.asarray(data.y, np.float32))
        return RowBatches({k: v.to(self.session.device) for k, v in tensors.items()}, rows, batch_size, train, seed, shard)

    def predict_rows(self, data: MeanData) -> int:
        return data.test_rows

    def predict(self, model: Constant, data: MeanData, precision, batch_size: int) -> np.ndarray:
        objective = self.objective(data)
        batches = self.batches(data, np.arange(data.test_rows), False, batch_size, test=True)
        pred = np.concatenate([p for _, p in base.predictions(model, batches, precision,
                                                               lambda m, b: objective.predict(m(b["x"])))])
        return pred.reshape(len(pred), -1)  # the test table's rows are the sample's, in its order


class Footprint:
    """Its part of the resource plan: a few numbers per row."""

    @staticmethod
    def sizes(session, data: MeanData) -> Sizes:
        return Sizes(len(data.y) if data.y is not None else 0, data.test_rows, data.target.outputs, data.target.kind)

    @staticmethod
    def parameters(p: params.TrainParams, sizes: Sizes) -> int:
        return sizes.outputs

    @staticmethod
    def needs(sizes: Sizes, p: params.TrainParams, spec, limits) -> list[Need]:
        return [Need("the target and the rows", "ram", (sizes.train_rows + sizes.test_rows) * 8)]


MEAN = templates.Template("mean", MeanParams, READS, READS, "mean_template:MeanPipeline", smoke="", names="",
                          footprint="mean_template:Footprint")
CNN_AGAIN = replace(MEAN, name="cnn")  # a name kit knows: register refuses it
