"""The checks the tabular template makes of its tables before it trains, and what they decide: the target, the
training columns it is read from, the features' recipe. kit init runs them on a draft's first rows
(kit.build.draft_check)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from kit.data import features, joins, tables
from kit.errors import KitError
from kit.pipelines import base, confidence
from kit.spec import Spec
from kit.train import targets
from kit.train.targets import Target


def require_test(spec: Spec) -> None:
    if not spec.test and not spec.test_series:
        raise KitError("[data] test is empty: the tabular template needs the test table's file name (or, for rows of "
                       "series files, test_series: the test rows are then the sample's ids)")


def checked(spec: Spec, train: pd.DataFrame, test: pd.DataFrame, sample: pd.DataFrame, where: tuple[Path, Path, Path],
            log: Callable[[str], None]) -> tuple[Target, list[str], dict]:
    """The checks the template makes of its tables before it trains, and what they decide: the target, the
    training columns it is read from, and the features' recipe (kit.data.features.infer). `where` is the
    training, test and sample files' paths, for the errors. kit init runs them on a draft's first rows."""
    train_path, test_path, sample_path = where
    columns = base.sample_targets(sample, spec, sample_path, test.columns)
    if confidence.wanted(spec):
        confidence.column(spec, sample, columns, sample_path)
    if spec.score_groups:
        tables.require_columns(train, [spec.score_groups], train_path, "[data] score_groups")
    target = targets.multi(spec.metric, train, columns, spec.target_column, train_path.name, (), spec.target_range)
    if target is None:
        tables.require_columns(train, [spec.target_column], train_path)
        target = targets.infer(spec.metric, train[spec.target_column], columns,
                               f"{train_path.name}, column '{spec.target_column}'", spec.target_range)
    if target.record.spaced:
        raise KitError(f"{train_path.name}: metric {spec.metric} scores label sets, which the tabular template does "
                       "not predict; give each label a 0/1 column in the sample submission")
    sources = list(target.sources) if target.by_column else [spec.target_column]
    for column in sources:
        tables.require_filled(train, column, train_path)
    exclude = {spec.id_column, spec.target_column, spec.group_column, spec.fold_column, *columns, *sources,
               *spec.drop_columns, joins.ROWS_AFTER}
    return target, sources, features.infer(train, test, spec.features, spec.categorical, exclude, train_path, test_path, log)
