"""Sound classification (or regression) with a timm 2-D CNN on log-mel spectrograms.

The clips are found as the cnn template finds images (kit.data.layouts: a table, class folders, labels in file
names; archives unpacked once), then decoded once into a flat int16 cache at one sample rate
(`kit.data.waves`). Loaders cut windows of it on the host (random in training, fixed windows in prediction,
averaged per clip) and the device makes and augments the spectrograms (`kit.data.spectra`). Folds, the model's
making, the objective and the rest of the contract are the cnn template's.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from torch import nn

from kit.data import audio, images, layouts, series, waves
from kit.data.loaders import DeviceLoader, host_loader
from kit.data.spectra import AudioTransform, Augment, Frontend, LogMel
from kit.errors import KitError
from kit.pipelines import audio_eeg, audio_lists, base
from kit.pipelines.cnn import CnnPipeline, ImageData, TransformImages, sample_label
from kit.runtime import paths, runs
from kit.train import targets
from kit.train.objectives import moments

MAX_BAD_SHARE = 0.01  # stop when more than this share of a split's clips cannot be decoded
LAYOUTS = ("files", "folders", "names")  # kit.data.layouts' layouts of files
MAX_WINDOW_S = 10.0  # window_s auto: the clips' median length, at most this


@dataclass
class AudioData(ImageData):
    # a melted sample's (label_lists): each sample row's recording, a row of test_cache; None: a clip per sample row
    clips: np.ndarray | None = None
    # [data] extra_train's rows (a noisy set: trained on with noisy_weight, never validated), True per training row
    extra: np.ndarray | None = None


class AudioPipeline(CnnPipeline):
    # -- data -------------------------------------------------------------------------------------------
    def load(self) -> ImageData:
        """Read and check the training labels (by layout) and the sample submission, settle the spectrogram's
        frontend from the clips' headers, then decode every clip once (predict mode: the test clips only)."""
        s, spec = self.session, self.session.spec
        if self.recordings():
            return (audio_eeg.load_test(self, s.trained.recipe, check_bad, AudioData) if s.trained is not None
                    else audio_eeg.load(self, check_bad, AudioData))
        if s.trained is not None:
            return self._load_test(s.trained.recipe)
        sample, table, target, (groups, assigned), train, test, clips = self._read()
        columns = series.columns_of(train.paths) if self.series() and train.paths else []
        found = {name: self._headers(src.paths, columns) for name, src in (("train", train), ("test", test))}
        frontend = self.frontend(found["train"][0], train.names)
        train_cache, test_cache = self._decode({"train": train, "test": test}, frontend.rate, found, columns)
        check_bad(train_cache, train.names, "train", "are left out of training", s.log)
        check_bad(test_cache, test.names, "test", "are predicted with the training prior", s.log)
        y = targets.encode(target, table if target.by_column else table[spec.target_column])
        ids = table[spec.id_column].to_numpy(dtype=str)
        usable = np.array([i for i in range(len(ids)) if i not in train_cache.bad], dtype=np.int64)
        identity = runs.digest(ids, y, usable, np.array(target.columns), train.stamps())
        recipe = {"target": base.target_record(target), "prior": targets.prior(target, y[usable], spec.metric),
                  **dict(zip(("y_mean", "y_std"), moments(y[usable], spec.metric))),
                  "channels": max(1, len(columns)), "frontend": frontend.as_dict(), "kept": 0,
                  **({"series_columns": columns} if columns else {})}
        extra = np.arange(len(ids)) >= len(ids) - table.attrs.get("extra", 0)
        data = AudioData(ids, y, usable, target, sample, train_cache, test_cache, recipe, identity, groups, assigned, clips,
                         extra)
        s.log(self.describe(data))
        if columns:
            s.log(f"series         {len(columns)} columns a file ({', '.join(columns[:3])}{' ...' if len(columns) > 3 else ''}), "
                  "one log-mel image a column")
        s.log(f"spectrogram    {frontend.rate} Hz, windows of {frontend.length / frontend.rate:g} s, n_fft {frontend.n_fft}, "
              f"hop {frontend.hop}: {frontend.n_mels} mel bands x {frontend.frames} frames")
        return data

    def check_data(self) -> None:
        """The tables, the layout and the clips' suffixes; no clip is decoded."""
        if self.recordings():
            audio_eeg.read(self.session)
            return
        self._read()

    def recordings(self) -> bool:
        """[data] image_ext = ".parquet": EEG recordings read as montages (kit.pipelines.audio_eeg), not sound files."""
        return self.session.spec.image_ext.lower() == ".parquet"

    def series(self) -> bool:
        """[data] image_ext = ".csv": series tables, a column a channel (kit.data.series), not sound files."""
        return self.session.spec.image_ext.lower() == series.SUFFIX

    def _headers(self, paths: list, columns: list[str]) -> tuple:
        workers = self.session.hardware.cpu_count
        return series.headers(paths, len(columns), workers) if columns else waves.headers(paths, workers)

    def _read(self):
        spec = self.session.spec
        if spec.layout not in LAYOUTS:
            raise KitError(f'[data] layout = "{spec.layout}": the audio template reads sound files ({", ".join(LAYOUTS)})')
        if (spec.clip_table or spec.split_table) and not spec.label_lists:
            raise KitError("[data] clip_table and split_table name the recordings of ragged label lists: set label_lists "
                           "= true, or remove them")
        read = audio_lists.read(self.session) if spec.label_lists else (*super()._read(), None)
        if spec.extra_train:
            read = audio_lists.with_extra(self.session, read, self.label_columns)
        for source in (read[4], read[5]) if not self.series() else ():
            for suffix in sorted({Path(p).suffix.lower() for p in source.paths}):
                why = audio.refusal(suffix)
                if why:
                    example = next(n for n, p in zip(source.names, source.paths) if Path(p).suffix.lower() == suffix)
                    raise KitError(f"{example}: {why}")
        return read

    def split(self, data: ImageData) -> list[tuple[np.ndarray, np.ndarray]]:
        """The folds of the training rows (cnn's); [data] extra_train's rows join every fold's training rows where
        noisy_weight is above 0, and are never validated."""
        extra = getattr(data, "extra", None)
        if extra is None or not extra.any():
            return super().split(data)
        noisy = data.usable[extra[data.usable]] if self.p.noisy_weight > 0 else np.zeros(0, np.int64)
        folds = super().split(dataclasses.replace(data, usable=data.usable[~extra[data.usable]]))
        return [(np.concatenate([tr, noisy]), v) for tr, v in folds]

    def label_columns(self, table: pd.DataFrame, target_columns: list[str], where: str) -> pd.DataFrame:
        """[data] label_separator: target_column's lists spread into one 0/1 column per sample column."""
        spec = self.session.spec
        if not spec.label_separator:
            return table
        return audio_lists.spread(table, target_columns, spec.target_column, spec.label_separator, where)

    def frontend(self, found: list, names: list[str]) -> Frontend:
        """The frontend the parameters say, "auto" settled from the training clips' headers."""
        p = self.p
        good = [h for h in found if h is not None and h.frames]
        if not good:
            raise KitError(f"none of the {len(names)} training clips could be read (such as {names[0] if names else '-'}); "
                           "check the files and train_images in [data]")
        rate = p.sample_rate if p.sample_rate != "auto" else Counter(h.rate for h in good).most_common(1)[0][0]
        if not rate:
            raise KitError("the clips do not say their sample rate (.npy, .csv): set sample_rate in [params]")
        seconds = p.window_s if p.window_s != "auto" else min(MAX_WINDOW_S, float(np.median([h.frames / (h.rate or rate)
                                                                                              for h in good])))
        n_fft = p.n_fft if p.n_fft != "auto" else int(2 ** round(np.log2(max(rate * 0.032, 16))))
        hop = p.hop if p.hop != "auto" else max(1, n_fft // 4)
        fmax = min(float(p.fmax), rate / 2) if p.fmax != "auto" else rate / 2
        if p.fmin >= fmax:
            raise KitError(f"[params] fmin = {p.fmin:g} Hz is not below fmax ({fmax:g} Hz at {rate} Hz); lower fmin")
        return Frontend(int(rate), max(n_fft, int(round(seconds * rate))), int(n_fft), int(hop), p.n_mels, float(p.fmin),
                        float(fmax), float(p.top_db), bool(p.level))

    def _load_test(self, recipe: dict) -> ImageData:
        s, spec = self.session, self.session.spec
        sample, sample_path, target = base.trained_sample(s)
        clips = None
        if spec.label_lists:
            test, clips = audio_lists.read_test(s, sample, sample_path, target)
        else:
            test = layouts.test_source(spec, s.data_dir, sample, sample_path, log=s.log)
        (test_cache,) = self._decode({"test": test}, recipe["frontend"]["rate"], columns=recipe.get("series_columns", []))
        check_bad(test_cache, test.names, "test", "are predicted with the training prior", s.log)
        none = np.zeros(0, np.int64)
        data = AudioData(none.astype(str), none, none, target, sample, None, test_cache, recipe, clips=clips)
        s.log(self.describe(data))
        return data

    def _decode(self, splits: dict[str, layouts.Source], rate: int, found: dict | None = None,
                columns: list[str] = ()) -> list:
        """Each split's clips decoded once into the wave cache (each its first max_seconds), or streamed where the
        disk or RAM has no room (`found`: each split's headers, where read already); series files' `columns` (a
        channel each) read into a cache of their own, which has no streaming fallback."""
        s = self.session
        workers, cache_dir, most = s.hardware.cpu_count, paths.scratch_dir(), int(round(self.p.max_seconds * rate))
        found = found or {name: self._headers(src.paths, columns) for name, src in splits.items()}
        need = sum(waves.bytes_of(found[name][0], rate, most) * max(1, len(columns)) for name, src in splits.items()
                   if not (series.complete(src.paths, columns, rate, cache_dir, most) if columns
                           else waves.complete(src.paths, rate, cache_dir, most)))
        refusal = images.cache_refusal(need, cache_dir) if need else ""
        if refusal and columns:
            raise KitError(f"no room for the series cache: {refusal}; free space, or lower max_seconds in [params]")
        if columns:
            return [series.build_cache(src.paths, columns, rate, cache_dir, workers, f"read {name}", s.log, most)
                    for name, src in splits.items()]
        if refusal:
            s.warn(f"no decoded-clip cache: {refusal}; streaming from the sound files instead (each epoch decodes them "
                   "again: free space, or lower sample_rate or max_seconds)")
            return [waves.WaveFiles([str(p) for p in src.paths], rate, found[name][1],
                                    np.array([waves.frames_of(h, rate, most) for h in found[name][0]]), most)
                    for name, src in splits.items()]
        return [waves.build_cache(src.paths, rate, cache_dir, workers, f"decode {name}", s.log, most)
                for name, src in splits.items()]

    def describe(self, data: ImageData) -> str:
        return super().describe(data).replace(" images", " clips").replace(" per image", " per clip")

    def frontend_of(self, data: ImageData) -> Frontend:
        return Frontend(**data.recipe["frontend"])

    def show_samples(self, data: ImageData, n: int = 12):
        """Log-mel spectrograms of a few clips of each class (test clips in predict mode), saved as samples.png."""
        import matplotlib.pyplot as plt

        predict = data.train_cache is None
        cache = data.test_cache if predict else data.train_cache
        pool = np.arange(data.test_cache.count) if predict else data.usable
        if not predict and data.target.classification:  # a few of each class, the first classes first
            per = max(1, n // max(1, min(data.target.outputs, n)))
            rows = np.array([r for c in range(data.target.outputs) for r in pool[data.y[pool] == c][:per]][:n], np.int64)
        else:
            rows = pool[np.linspace(0, len(pool) - 1, min(n, len(pool))).astype(int)]
        f = self.frontend_of(data)
        waves_ = waves.WaveRows(cache, rows, f.length).__getitems__(list(range(len(rows))))["wave"]
        specs = LogMel(f)(waves_.float() / 32768.0).numpy() if len(rows) else []
        cols = min(4, max(1, len(rows)))
        lines = max(1, (len(rows) + cols - 1) // cols)
        fig, axes = plt.subplots(lines, cols, figsize=(3.0 * cols, 2.4 * lines), squeeze=False)
        for ax in axes.flat:
            ax.axis("off")
        for ax, r, picture in zip(axes.flat, rows, specs):
            picture = picture.reshape(-1, picture.shape[-1])  # several channels (an EEG montage): stacked
            ax.imshow(picture, origin="lower", aspect="auto", cmap="magma")
            label = data.sample[self.session.spec.id_column].iloc[r] if predict else sample_label(data.target, data.y[r])
            ax.set_title(str(label)[:28], fontsize=8)
        fig.tight_layout()
        fig.savefig(self.session.output_dir / "samples.png", dpi=80)
        return fig

    def takes_image_size(self) -> bool:
        return False  # spectrograms of any width: a 2-D CNN

    def prediction_views(self, data: ImageData) -> list:
        return [("plain", lambda x: x)]  # a window is predicted as it is; windows, not views, are averaged

    # -- batches ----------------------------------------------------------------------------------------
    def batches(self, data: ImageData, rows: np.ndarray, train: bool, batch_size: int, seed: int = 0,
                test: bool = False, shard: tuple[int, int] = (0, 1), precision=None, workers: int | None = None,
                starts: np.ndarray | None = None) -> DeviceLoader:
        """Device batches of log-mel windows of `rows`: a random crop of each in training, the centred window (or the
        window at `starts`) otherwise."""
        s, p = self.session, self.p
        f = self.frontend_of(data)
        cache = data.test_cache if test else data.train_cache
        extra = getattr(data, "extra", None)
        weights = np.where(extra[rows], p.noisy_weight, 1.0) if train and extra is not None and extra.any() else None
        dataset = waves.WaveRows(cache, rows, f.length, None if test else data.y[rows], train=train, starts=starts, seed=seed,
                                 weights=weights)
        loader = host_loader(dataset, batch_size, shuffle=train, workers=s.setup.workers if workers is None else workers,
                             pin=s.device.type == "cuda", seed=seed, drop_last=train, shard=shard, repeat=train)
        augment = Augment(p.gain_db, p.shift, p.freq_masks, p.freq_width, p.time_masks, p.time_width)
        transform = AudioTransform(f, s.device, train=train, augment=augment, seed=seed, precision=precision or s.precision,
                                   channels_last=s.setup.channels_last)
        return DeviceLoader(loader, s.device, TransformImages(transform, self.mixer(data) if train else None, key="wave"),
                            prefetch=s.setup.prefetch)

    def predict_rows(self, data: ImageData) -> int:
        f = self.frontend_of(data)
        return len(waves.window_rows(data.test_cache.lengths(), np.arange(data.test_cache.count), f.length,
                                     self.hop_of(f))[0])

    def hop_of(self, f: Frontend) -> int:
        return max(1, int(round(self.p.tta_hop * f.length)))

    # -- prediction -------------------------------------------------------------------------------------
    def predict(self, model: nn.Module, data: ImageData, precision, batch_size: int) -> np.ndarray:
        """(test rows, outputs) float32: each clip's windows (`tta_hop` apart, the last flush with its end)
        predicted and averaged."""
        objective = self.objective(data)
        f = self.frontend_of(data)
        rows, starts = waves.window_rows(data.test_cache.lengths(), np.arange(data.test_cache.count), f.length,
                                         self.hop_of(f))
        batches = self.batches(data, rows, train=False, batch_size=batch_size, test=True, precision=precision,
                               starts=starts)
        pred = np.concatenate([p for _, p in base.predictions(model, batches, precision,
                                                              lambda m, b: objective.predict(m(b["image"])))])
        total = np.zeros((data.test_cache.count, *pred.shape[1:]), np.float64)
        np.add.at(total, rows, pred)  # (clips, outputs...): each clip's windows summed
        counts = np.bincount(rows, minlength=data.test_cache.count).reshape(-1, *[1] * (pred.ndim - 1))
        out = (total / counts).astype(np.float32)
        for r in sorted(data.test_cache.bad):
            out[r] = base.prior(data)
        return out if data.clips is None else out[data.clips]  # melted: each sample row its recording's outputs


def check_bad(cache, names: list[str], what: str, outcome: str, log) -> None:
    """Warn, naming them, about clips that could not be decoded; stop if more than MAX_BAD_SHARE failed."""
    if not cache.bad:
        return
    rows = sorted(cache.bad)
    listed = "; ".join(f"{names[i]}: {cache.bad[i]}" for i in rows[:5]) + ("; ..." if len(rows) > 5 else "")
    share = len(rows) / max(cache.count, 1)
    if share > MAX_BAD_SHARE:
        raise KitError(f"{len(rows)} of {cache.count} {what} clips could not be decoded ({share:.1%}, more than "
                       f"{MAX_BAD_SHARE:.0%}): {listed}; replace or remove those files")
    log(f"WARNING: {len(rows)} of {cache.count} {what} clips could not be decoded and {outcome}: {listed}")

