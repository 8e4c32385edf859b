"""The audio template's EEG recordings ([data] image_ext = ".parquet": hms-harmful-brain-activity-classification),
read into what the pipeline reads from sound files.

train.csv holds a row per labelled 50 s window (`eeg_label_offset_seconds` into its recording, the experts' votes
about its central 10 s), many windows a recording. Training keeps one row per recording (`id_column`): its votes
summed over its windows (a soft target: kit.train.kinds' "soft", the votes' distribution) and one clip, the span
from its first window's start to its last window's end (at most max_seconds), which training crops at random, so
that each epoch sees another of the windows the votes were given for. Folds group by [data] group_column
(patient_id): a recording's rows are one row, so no recording is on both sides either. The test recordings are
the sample's ids (a row per test window in MLE-bench's split, several sharing a recording and no offset): each
recording whole (at most max_seconds), its windows predicted and averaged, the result repeated on its rows.
Each clip is the double-banana montage's 16 bipolar channels (kit.data.eeg), one log-mel image a channel."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, eeg, images, layouts, tables
from kit.data.audio import Header
from kit.errors import KitError
from kit.pipelines import base
from kit.runtime import paths, runs
from kit.train import targets
from kit.train.kinds import Target
from kit.train.objectives import moments

OFFSET = "eeg_label_offset_seconds"  # each labelled window's start in its recording, seconds
WINDOW_S = 50.0  # seconds each labelled window lasts


def grouped(rows: pd.DataFrame, id_column: str, columns: list[str], keep: list[str]) -> pd.DataFrame:
    """One row per recording, in first-seen order: the mean of its windows' vote distributions (each window's votes
    over their sum, as the grader reads each row: the mean is the distribution whose KL divergence, averaged over
    the windows, is least), its first and last window's offset, and the first value of each `keep` column."""
    by = rows.groupby(id_column, sort=False)
    votes = rows[columns].astype(np.float64)
    shares = votes.div(votes.sum(axis=1).where(lambda total: total > 0), axis=0)  # a window without votes: left out
    table = shares.groupby(rows[id_column], sort=False).mean()
    table["first_offset"] = by[OFFSET].min()
    table["last_offset"] = by[OFFSET].max()
    for c in keep:
        table[c] = by[c].first()
    return table.reset_index()


def read(s, target: Target | None = None) -> tuple:
    """(sample, training table (one row a recording), target, fold keys, training windows, test windows, clips):
    `clips` maps each sample row to its test recording. Predict mode (`target` given): no training table."""
    spec, cap = s.spec, int(round(s.params.max_seconds * eeg.RATE))
    sample, sample_path = base.read_sample(s)  # its ids repeat: [data] sample_repeats
    columns = list(target.columns) if target else base.sample_targets(sample, spec, sample_path)
    absent = [c for c in columns if c not in sample.columns]
    if absent:
        raise KitError(f"{sample_path.name}: no column '{absent[0]}' of the {len(columns)} the model was trained for "
                       f"({', '.join(columns[:3])} ...); predict with this competition's model")
    recordings = [str(r) for r in dict.fromkeys(sample[spec.id_column].astype(str))]
    index = {r: k for k, r in enumerate(recordings)}
    clips = np.array([index[r] for r in sample[spec.id_column].astype(str)], np.int64)
    test_dir = layouts.image_dir(s.data_dir, spec.test_images, "test_images", s.log)
    layouts.check_image_files(test_dir, spec.test_images, recordings, spec.image_ext, sample_path.name, "test_images")
    test = [eeg.Window(str(test_dir / f"{r}{spec.image_ext}"), 0, cap) for r in recordings]
    if target is not None:
        return sample, None, target, (None, None), [], test, clips
    path = archives.find_file(s.data_dir, spec.train, "training labels", log=s.log)
    rows = tables.read_table(path)
    tables.require_columns(rows, [spec.id_column, OFFSET, *columns], path)
    target = targets.multi(spec.metric, rows, columns, spec.target_column, path.name)
    if target is None or not target.record.soft:
        raise KitError(f"{path.name}: EEG recordings (image_ext .parquet) are read as votes of a soft target, scored by "
                       f"{', '.join(targets.SOFT_METRICS)}; metric {spec.metric} is not one")
    keep = [c for c in (spec.group_column, spec.fold_column) if c and c in rows.columns]
    table = grouped(rows, spec.id_column, columns, keep)
    groups, assigned = base.fold_keys(spec, table, path)
    ids = table[spec.id_column].astype(str).tolist()
    train_dir = layouts.image_dir(s.data_dir, spec.train_images, "train_images", s.log)
    layouts.check_image_files(train_dir, spec.train_images, ids, spec.image_ext, path.name, "train_images")
    first = np.rint(table["first_offset"].to_numpy(np.float64) * eeg.RATE).astype(np.int64)
    span = np.rint((table["last_offset"].to_numpy(np.float64) + WINDOW_S) * eeg.RATE).astype(np.int64) - first
    span = np.minimum(span, cap) if cap else span
    train = [eeg.Window(str(train_dir / f"{i}{spec.image_ext}"), int(a), int(n)) for i, a, n in zip(ids, first, span)]
    s.log(f"recordings     {len(rows):,} labelled windows of {len(table):,} recordings: one row a recording, its votes "
          f"summed")
    return sample, table, target, (groups, assigned), train, test, clips


def check_room(s, windows: list[eeg.Window]) -> None:
    """A one-line stop where scratch has no room for the montages (the test recordings' lengths from their footers)."""
    frames = sum(w.frames or eeg.frames(w.path) for w in windows if Path(w.path).is_file())
    refusal = images.cache_refusal(frames * len(eeg.PAIRS) * 2, paths.scratch_dir())
    if refusal:
        raise KitError(f"no room for the EEG montage cache: {refusal}; lower max_seconds in [params]")


def load(pipe, check_bad, data_type) -> object:
    """The training and test recordings read once into montage caches; the data the audio pipeline trains on."""
    s = pipe.session
    sample, table, target, (groups, assigned), train, test, clips = read(s)
    frontend = pipe.frontend([Header(eeg.RATE, len(eeg.PAIRS), w.frames) for w in train],
                             table[s.spec.id_column].astype(str).tolist())
    if frontend.rate != eeg.RATE:
        raise KitError(f"[params] sample_rate = {frontend.rate}: EEG recordings are read at {eeg.RATE} Hz (auto)")
    check_room(s, train + test)
    workers, scratch = s.hardware.cpu_count, paths.scratch_dir()
    train_cache = eeg.build_cache(train, scratch, workers, "read train", s.log)
    test_cache = eeg.build_cache(test, scratch, workers, "read test", s.log)
    names = [Path(w.path).name for w in train]
    check_bad(train_cache, names, "train", "are left out of training", s.log)
    check_bad(test_cache, [Path(w.path).name for w in test], "test", "are predicted with the training prior", s.log)
    y = targets.encode(target, table)
    ids = table[s.spec.id_column].astype(str).to_numpy()
    usable = np.array([i for i in range(len(ids)) if i not in train_cache.bad], dtype=np.int64)
    windows = np.array([f"{w.path}|{w.start}|{w.frames}|{Path(w.path).stat().st_size}" for w in train])
    identity = runs.digest(ids, y, usable, np.array(target.columns), windows)
    recipe = {"target": base.target_record(target), "prior": targets.prior(target, y[usable], s.spec.metric),
              **dict(zip(("y_mean", "y_std"), moments(y[usable], s.spec.metric))),
              "channels": len(eeg.PAIRS), "frontend": frontend.as_dict(), "kept": 0}
    data = data_type(ids, y, usable, target, sample, train_cache, test_cache, recipe, identity, groups, assigned, clips)
    s.log(pipe.describe(data).replace(" clips", " recordings").replace(" per clip", " per recording"))
    s.log(f"montage        {len(eeg.PAIRS)} bipolar channels (LL, LP, RP, RL) at {eeg.RATE} Hz; spectrogram windows of "
          f"{frontend.length / frontend.rate:g} s, n_fft {frontend.n_fft}, hop {frontend.hop}: {frontend.n_mels} mel "
          f"bands ({frontend.fmin:g} to {frontend.fmax:g} Hz) x {frontend.frames} frames a channel")
    return data


def load_test(pipe, recipe: dict, check_bad, data_type) -> object:
    """Predict mode: the sample's test recordings only."""
    s = pipe.session
    target = Target(**s.trained.recipe["target"])
    sample, _, target, _, _, test, clips = read(s, target)
    check_room(s, test)
    test_cache = eeg.build_cache(test, paths.scratch_dir(), s.hardware.cpu_count, "read test", s.log)
    check_bad(test_cache, [Path(w.path).name for w in test], "test", "are predicted with the training prior", s.log)
    none = np.zeros(0, np.int64)
    return data_type(none.astype(str), none, none, target, sample, None, test_cache, recipe, clips=clips)
