"""The gallery's sound competitions: their MLE-bench public folders (names, archives, nested folders) at smoke
size, each label audible in its synthetic clips (kit.smoke.audio)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import packing
from kit.smoke.audio import noise, to_int16, tone, upsweep, write, write_aiff

WHALE_DATES = ("20090328", "20090329", "20090330", "20090331")  # MLE-bench: the first two train, the last two test


def whale(folder: Path, seed: int = 0, train: int = 48, test: int = 16, rate: int = 2000, seconds: float = 2.0) -> None:
    """train2.zip and test2.zip, each holding its folder (shutil.make_archive(public/"train2", "zip", public,
    "train2")): train2/<date>_<HHMMSS>_<s>s<ms>ms_TRAIN<idx>_<0|1>.aif over two days, idx in time order, and
    test2/<same prefix>_Test<idx>.aif over the next two; 2 s of 16-bit mono AIFF at 2 kHz, a positive carrying a
    60 to 250 Hz upsweep in noise; sampleSubmission.csv clip,probability=0."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    clips = []
    for split, count, dates in (("train2", train, WHALE_DATES[:2]), ("test2", test, WHALE_DATES[2:])):
        stamps = sorted((dates[k % 2], int(rng.integers(0, 86400))) for k in range(count))
        for idx, (date, secs) in enumerate(stamps):
            offset = rng.uniform(0, 900)
            prefix = f"{date}_{secs // 3600:02d}{secs // 60 % 60:02d}{secs % 60:02d}_{int(offset):03d}s{int(offset * 10) % 10}ms"
            label = int(rng.random() < 0.4)
            wave = upsweep(rng, seconds, rate, 60.0, 250.0) if label else noise(rng, seconds, rate, 0.08)
            name = f"{prefix}_TRAIN{idx}_{label}.aif" if split == "train2" else f"{prefix}_Test{idx}.aif"
            write_aiff(staging / split / name, to_int16(wave), rate)
            if split == "test2":
                clips.append(name)
        packing.write_zip(staging / split, folder / f"{split}.zip", prefix=split)
    shutil.rmtree(staging)
    pd.DataFrame({"clip": clips, "probability": 0}).to_csv(folder / "sampleSubmission.csv", index=False)


SPEECH_WORDS = ("yes", "no", "up", "down", "left")  # five of the 30 words


def speech(folder: Path, seed: int = 0, per_word: int = 6, rate: int = 16000) -> None:
    """train/audio/<word>/<8 hex>_nohash_<k>.wav (1 s of 16-bit PCM at 16 kHz) for five words, train/audio/
    _background_noise_/ with two 3 s noise files, test/audio/clip_<8 digits>.wav (a word each, and a 3 s noise
    file: MLE-bench's 10% split draws from every folder), sample_submission.csv fname,label=silence. A word is
    a pitch (and its octave)."""
    rng = np.random.default_rng(seed)
    audio = folder / "train" / "audio"

    def word(k: int) -> np.ndarray:
        hz = 300.0 + 180.0 * k
        return tone(rng, 1.0, rate, hz) + 0.5 * tone(rng, 1.0, rate, 2 * hz)

    for k, w in enumerate(SPEECH_WORDS):
        for j in range(per_word):
            write(audio / w / f"{rng.integers(0, 2**32):08x}_nohash_{j}.wav", word(k), rate)
    for name in ("white_noise.wav", "running_tap.wav"):
        write(audio / "_background_noise_" / name, noise(rng, 3.0, rate, 0.25), rate)
    tests = [word(k % len(SPEECH_WORDS)) for k in range(10)] + [noise(rng, 3.0, rate, 0.25)]
    order = rng.permutation(len(tests))
    names = [f"clip_{str(i).zfill(8)}.wav" for i in range(len(tests))]
    for i, k in enumerate(order):
        write(folder / "test" / "audio" / names[i], tests[k], rate)
    pd.DataFrame({"fname": names, "label": "silence"}).to_csv(folder / "sample_submission.csv", index=False)
