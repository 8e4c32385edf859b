"""The submission a competitor gets from the training labels alone, for a run where no model can give one: the
data cannot be read for training (MLE-bench's invasive-species archives hold no image), no fold trained, or
every fold failed before its first checkpoint. Each row gets the constant the metric scores best (the class
prior, whose likeliest class a label metric writes; each label's frequency; the mean, or under mae the median),
in the sample's ids and columns, under a banner that says so and a `fallback` line in kit.log.
`fallback = "none"` turns it off: then such a run stops in one line and writes no submission."""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kit import files, templates
from kit.data import archives, frames, tables
from kit.errors import KitError
from kit.pipelines import base
from kit.pipelines.base import Pipeline
from kit.runtime.session import Session
from kit.train import metrics, targets, topk
from kit.train.targets import Target

PRIOR_ROWS = 1_000_000  # a training table larger than this gives its prior from a sample of this many rows
RULE = "#" * 110


@dataclass(frozen=True)
class LabelsOnly:
    """A run's data where the competition's files could not be read for training: the sample submission, the
    target, the prior (a recipe as a pipeline's holds them: the training labels', or in predict mode the
    training run's) and what stopped the data."""

    sample: pd.DataFrame
    target: Target | None  # None: a template whose labels are no table of values (masks, boxes, spans, texts)
    recipe: dict
    why: str


def load_data(session: Session, pipe: Pipeline) -> Any:
    """The notebook's data step: `pipe.load()` (the competition's files read and checked) and a few of its rows
    shown (`pipe.show_samples`, samples.png). Where the files cannot be read for training and `fallback` is
    "prior", the training labels alone (LabelsOnly), which the later steps read as "nothing trains, submit the
    prior"; under "none" the error stands."""
    try:
        data = pipe.load()
    except Exception as e:  # noqa: BLE001  any failure: a run that cannot train still submits, if it may
        if session.params.fallback == "none":
            raise
        why = f"{type(e).__name__}: {e}" if not isinstance(e, KitError) else str(e)
        try:
            data = labels_only(session, why)
        except Exception:  # noqa: BLE001  the labels cannot be read either: the data's own error is the one to see
            raise e from None
        if not isinstance(e, KitError):  # a failure kit did not foresee: its traceback, for a report
            session.log("".join(traceback.format_exception(e)).rstrip())
        session.warn(f"the data cannot be trained on: {why}; nothing trains, and the submission will be "
                     f"{describe(session, data)} (fallback = \"prior\")")
        return data
    pipe.show_samples(data)
    return data


def labels_only(session: Session, why: str) -> LabelsOnly:
    """The sample submission and the prior of the training labels (in predict mode, of the training run's
    checkpoints), read on their own: the training table ([data] train, a sample of it when large) and the sample."""
    if not templates.get(session.template).labels_table:  # masks, boxes, spans, texts: no prior of values to take,
        sample, _ = base.read_sample(session)  # and the competition's own sample is a submission its grader reads
        session.log(f"fallback       the {session.template} template's labels are no table of values to take a prior "
                    "from: the sample submission's own cells")
        return LabelsOnly(sample, None, {}, why)
    if session.trained is not None:
        sample, _, target = base.trained_sample(session)
        return LabelsOnly(sample, target, {"target": base.target_record(target), "prior": session.trained.recipe["prior"]}, why)
    spec = session.spec
    sample, sample_path = base.read_sample(session)
    path = archives.find_file(session.data_dir, spec.train, "training table", log=session.log)
    large = path.suffix.lower() == ".csv" and path.stat().st_size > frames.LARGE_BYTES
    table = (frames.read_table(path, spec.id_column or None, PRIOR_ROWS, session.params.seed, session.log) if large
             else tables.read_table(path, spec.id_column or None))
    columns = base.sample_targets(sample, spec, sample_path, test_columns(session))
    target = targets.multi(spec.metric, table, columns, spec.target_column, path.name, spec.identity_columns,
                           spec.target_range)
    if target is None:
        tables.require_columns(table, [spec.target_column], path)
        table = table[table[spec.target_column].notna()]
        target = targets.infer(spec.metric, table[spec.target_column], columns, f"{path.name}, column "
                               f"'{spec.target_column}'", spec.target_range)
    y = targets.encode(target, table if target.by_column else table[spec.target_column])
    known = targets.prior(target, y, spec.metric)
    session.log(f"fallback       the prior of {len(y):,} training labels in {path.name}: "
                f"{targets.prior_name(target, spec.metric)}")
    return LabelsOnly(sample, target, {"target": base.target_record(target), "prior": known.tolist()}, why)


def test_columns(session: Session) -> list[str]:
    """The columns of the test table's header ([data] test, where it names a CSV or TSV that is found): the
    sample's columns among them are copied through, not predicted."""
    found = archives.locate(session.data_dir, session.spec.test) if session.spec.test else None
    if found is None or found.is_dir() or found.suffix.lower() not in (".csv", ".tsv"):
        return []
    return list(pd.read_csv(found, nrows=0, sep="\t" if found.suffix.lower() == ".tsv" else ",").columns)


def constant(session: Session, data: Any, why: str) -> np.ndarray | topk.TopK:
    """(sample rows, outputs) the prior in every row, under the banner that says the submission is the training
    labels' alone and why; a KitError under fallback = "none"."""
    if session.params.fallback == "none":
        raise KitError(f"{why}, and fallback = \"none\": no submission.csv is written; fix what the lines above name, or "
                       "set fallback = \"prior\" to submit the training labels' own answer")
    what = describe(session, data)
    session.log(f"{RULE}\n# FALLBACK SUBMISSION: no model predicted it ({why}).\n# Every row of submission.csv is "
                f"{what}: valid, and no better than the labels alone.\n# Fix what the lines above name and run again; "
                f"fallback = \"none\" writes no submission instead.\n{RULE}")
    session.log(f"fallback       submission.csv holds {what} in each of its {len(data.sample)} rows: {why}")
    n, t = len(data.sample), data.target
    # not 21 GB of herbarium's prior
    k = data.recipe.get("kept") or topk.kept(t.record.likeliest, t.outputs, session.spec.metric, n)
    return topk.repeat_row(base.prior(data), n, k)


def sample_as_is(session: Session, data: LabelsOnly) -> pd.DataFrame:
    """The sample submission, cell for cell, under the banner (a KitError under fallback = "none")."""
    if session.params.fallback == "none":
        raise KitError(f"the data cannot be trained on: {data.why}, and fallback = \"none\": no submission.csv is "
                       "written; fix what the lines above name")
    session.log(f"{RULE}\n# FALLBACK SUBMISSION: no model predicted it (the data cannot be trained on: {data.why}).\n"
                "# submission.csv is the competition's sample submission, cell for cell: valid, and no better than it.\n"
                f"# Fix what the lines above name and run again; fallback = \"none\" writes no submission instead.\n{RULE}")
    session.log(f"fallback       submission.csv holds the sample submission's own cells in each of its {len(data.sample)} "
                f"rows: the data cannot be trained on: {data.why}")
    return data.sample


def describe(session: Session, data: Any) -> str:
    """What the fallback writes, in words."""
    t = data.target
    if t is None:
        return "the sample submission's own cells"
    if t.record.masks:  # segmentation's masks (kit.pipelines.segmentation)
        return "the training masks' prior (no mask, or the mean page)"
    name, known = targets.prior_name(t, session.spec.metric), base.prior(data)
    return t.record.prior_text(t, name, known)


def write(session: Session, data: LabelsOnly) -> pd.DataFrame:
    """The fallback submission of a run whose data could not be read for training: checked and written whole (the
    sample's own cells where the template's labels are no table of values)."""
    if data.target is None:
        sub = sample_as_is(session, data)
    else:
        pred = constant(session, data, f"the data cannot be trained on: {data.why}")
        if session.spec.metric in metrics.THRESHOLDED and data.target.multilabel:  # each label at the default cut
            pred = metrics.apply_cut(session.spec.metric, pred, metrics.Cut(at_least_one=session.spec.metric != "bias_auc"))
        sub = base.submission_frame(data.sample, data.target, pred)
        base.validate(sub, data.sample, data.target, session.spec.id_column, session.output_dir)
    path = session.output_dir / "submission.csv"
    files.write_text(path, base.csv_text(sub))
    session.log(f"wrote {path}: {len(sub)} rows x {sub.shape[1]} columns, the fallback")
    return sub
