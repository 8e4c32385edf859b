"""kit init's last look at a draft before it is shown: the kernel's own data checks, run on the first rows of
the tables the draft names, so that a draft which would stop at the kernel's first cell is never offered as if
it would train; one line says what the kernel would say instead."""
from __future__ import annotations

from pathlib import Path

from kit.build.survey import HEAD, Survey
from kit.data import layouts
from kit.errors import KitError
from kit.pipelines import tabular
from kit.spec import Spec


def check(spec: Spec, survey: Survey) -> None:
    """A KitError where the kernel's data checks refuse the draft's tables: the tabular template's (a test table,
    the target, features both tables hold) and the pixel layout's (every column but the ids, labels and groups
    is a pixel of a square image). The other readings look their files up as the kernel does."""
    try:
        if spec.template == "tabular":
            tabular.require_test(spec)
            names = (spec.train, spec.test, spec.sample_submission)
            train, test, sample = (survey.typed(n) for n in names)
            tabular.checked(spec, train, test, sample, tuple(Path(n) for n in names), lambda line: None)
        elif spec.template == "cnn" and spec.layout == "pixels":
            train, sample = survey.typed(spec.train), survey.read(spec.sample_submission)
            others = [spec.id_column, spec.target_column, spec.group_column, spec.fold_column, *sample.columns]
            layouts.pixel_columns(train, [c for c in dict.fromkeys(others) if c], spec.train)
    except KitError as e:
        raise KitError(f"{survey.data_dir}: kit init's draft (template {spec.template}) would stop at the kernel's data "
                       f"checks (run on the tables' first {HEAD:,} rows): {e}") from None
