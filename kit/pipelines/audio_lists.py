"""The audio template's labels held as lists (kit.data.label_lists), read into what the pipeline reads from a table.

- `label_lists` (mlsp-2013-birds): ragged lines `id,label...` (`id,?` a test recording), clip names from
  `clip_table`, the test recordings checked against `split_table`'s fold 1, and a melted sample submission (one row
  per recording and label, kit.train.audio_kinds): the model predicts each test recording once, and `clips` maps
  each sample row to its recording.
- `label_separator` (freesound-audio-tagging-2019): one column of labels joined by it, spread into one 0/1 column per
  class of the sample submission (a "multi" target)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, label_lists, layouts, tables
from kit.errors import KitError
from kit.pipelines import base
from kit.runtime.session import Session
from kit.train.audio_kinds import decode
from kit.train.kinds import Target


def spread(table: pd.DataFrame, classes: list[str], column: str, separator: str, where: str) -> pd.DataFrame:
    """`table` with one 0/1 column per class from `column`'s `separator`-joined labels."""
    tables.require_columns(table, [column], Path(where))
    rows = label_lists.label_rows(table[column], tuple(classes), f"{where}, column '{column}'", separator)
    return pd.concat([table.drop(columns=[c for c in classes if c in table.columns]),
                      pd.DataFrame(rows, columns=classes, index=table.index)], axis=1)


def read(s: Session) -> tuple:
    """(sample, training table, target, fold keys, train source, test source, clips): the ragged labels' training
    recordings as a table of one 0/1 column per label, the sample's test recordings, and each sample row's
    recording (its row of the test source)."""
    spec = s.spec
    sample, sample_path = base.read_sample(s)
    target, recordings, clips = melted(s, sample, sample_path)
    path = archives.find_file(s.data_dir, spec.train, "training labels", log=s.log)
    ragged = label_lists.read_ragged(path)
    hidden = {i for i, t in zip(ragged.ids, ragged.test) if t}
    check_split(s, hidden, path.name)
    absent = [r for r in recordings if r not in hidden]
    if absent:
        raise KitError(f"{sample_path.name}: recording {absent[0]} is not a test line (`{absent[0]},?`) of {path.name} "
                       f"({len(absent)} such recordings)")
    rows = [k for k, t in enumerate(ragged.test) if not t]
    labels = label_lists.label_rows([ragged.labels[k] for k in rows], target.classes, path.name)
    table = pd.DataFrame(labels, columns=list(target.classes))
    table.insert(0, spec.id_column, [ragged.ids[k] for k in rows])
    groups, assigned = base.fold_keys(spec, table, path)
    names = clip_names(s, [*table[spec.id_column], *recordings])
    train = source(s, spec.train_images, "train_images", [names[i] for i in table[spec.id_column]], path.name)
    test = source(s, spec.test_images, "test_images", [names[r] for r in recordings], sample_path.name)
    return sample, table, target, (groups, assigned), train, test, clips


def read_test(s: Session, sample: pd.DataFrame, sample_path: Path, target: Target) -> tuple:
    """Predict mode: the test recordings the sample's ids name, and each sample row's."""
    _, recordings, clips = melted(s, sample, sample_path, target)
    names = clip_names(s, recordings)
    return source(s, s.spec.test_images, "test_images", [names[r] for r in recordings], sample_path.name), clips


def melted(s: Session, sample: pd.DataFrame, sample_path: Path, target: Target | None = None) -> tuple:
    """The melted target (its classes the labels the sample's ids name), the test recordings in the sample's order,
    and each sample row's recording among them."""
    columns = base.sample_targets(sample, s.spec, sample_path)
    if len(columns) != 1:
        raise KitError(f"{sample_path.name}: label_lists reads a melted sample submission (an id column, then one "
                       f"probability column), not {len(columns)} target columns ({', '.join(columns[:3])})")
    recs, labels = decode(sample[s.spec.id_column], sample_path.name)
    if target is None:
        target = Target("melted", (columns[0],), tuple(str(c) for c in np.unique(labels)))
    recordings = [str(r) for r in dict.fromkeys(recs.tolist())]
    index = {r: k for k, r in enumerate(recordings)}
    return target, recordings, np.array([index[str(r)] for r in recs], np.int64)


def check_split(s: Session, hidden: set[str], where: str) -> None:
    """split_table's fold 1 recordings are the `?` lines."""
    if not s.spec.split_table:
        return
    path = archives.find_file(s.data_dir, s.spec.split_table, "split table", log=s.log)
    folds = tables.read_table(path)
    tables.require_columns(folds, ["fold"], path, "[data] split_table")
    ids = folds.iloc[:, 0].astype(str)
    test = set(ids[folds["fold"].astype(str) == "1"])
    if test != hidden:
        odd = sorted(test ^ hidden, key=str)[0]
        raise KitError(f"{path.name}: its fold 1 recordings are not the test lines (`id,?`) of {where}; recording {odd} "
                       f"is in one and not the other ({len(test ^ hidden)} such)")


def clip_names(s: Session, ids: list[str]) -> dict[str, str]:
    """Each id's clip name: clip_table's second column, or the id itself."""
    if not s.spec.clip_table:
        return {i: i for i in ids}
    path = archives.find_file(s.data_dir, s.spec.clip_table, "clip table", log=s.log)
    table = tables.read_table(path)
    if table.shape[1] < 2:
        raise KitError(f"{path.name}: holds {table.shape[1]} column; clip_table is id,file name")
    names = dict(zip(table.iloc[:, 0].astype(str), table.iloc[:, 1].astype(str)))
    absent = [i for i in ids if i not in names]
    if absent:
        raise KitError(f"{path.name}: no file name for recording {absent[0]} ({len(absent)} such recordings)")
    return {i: names[i] for i in ids}


def source(s: Session, folder_name: str, key: str, names: list[str], where: str) -> layouts.Source:
    spec = s.spec
    folder = layouts.image_dir(s.data_dir, folder_name, key, s.log)
    layouts.check_image_files(folder, folder_name, names, spec.image_ext, where, key)
    return layouts.Source([f"{folder_name}/{n}{spec.image_ext}" for n in names],
                          paths=[folder / f"{n}{spec.image_ext}" for n in names])


def with_extra(s: Session, read: tuple, label_columns) -> tuple:
    """`read` with [data] extra_train's rows after the training table's (freesound's noisy set: the same columns, its
    clips in extra_images); the table's attrs["extra"] counts them. `label_columns` spreads their label lists."""
    spec = s.spec
    sample, table, target, (groups, assigned), train, test, clips = read
    if spec.label_lists:
        raise KitError("[data] extra_train is read as a table, as train is; ragged label_lists take none")
    other = dataclasses.replace(spec, train=spec.extra_train, train_images=spec.extra_images or spec.train_images)
    extra, where = layouts.training_table(other, s.data_dir, sample, s.log)
    extra = label_columns(extra, list(target.columns), where)
    columns = [spec.id_column, *(target.sources if target.by_column else (spec.target_column,))]
    tables.require_columns(extra, columns, Path(where), "[data] extra_train")
    if not target.by_column:
        strange = sorted(set(extra[spec.target_column].dropna().astype(str)) - {str(c) for c in target.classes})
        if strange:
            raise KitError(f"{where}: label '{strange[0]}' is not a class of {spec.train} ({len(strange)} such labels)")
    twice = set(extra[spec.id_column].astype(str)) & set(table[spec.id_column].astype(str))
    if twice:
        raise KitError(f"{where}: id {sorted(twice)[0]} is in {spec.train} too ({len(twice)} such ids); the two training "
                       "sets hold different clips")
    source = layouts.training_source(other, s.data_dir, extra, where, None, s.log)
    both = pd.concat([table, extra[[c for c in table.columns if c in extra.columns]]], ignore_index=True)
    both.attrs["extra"] = len(extra)
    pad = np.full(len(extra), "", dtype=object)
    keys = tuple(None if k is None else np.concatenate([k, pad]) for k in (groups, assigned))
    train = layouts.Source(train.names + source.names, paths=list(train.paths) + list(source.paths))
    s.log(f"extra train    {len(extra):,} clips of {where}, trained on with noisy_weight, never validated")
    return sample, both, target, keys, train, test, clips
