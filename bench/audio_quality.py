"""`make quality`'s audio row: kit's audio template against the plain loop, on synthetic calls and tones.

  calls   2 s clips at 8 kHz in speech commands' folder layout (train/<class>/<k>.wav, test/<id>.wav): four classes,
          a low tone, a high tone, an up-call and a down-call (kit.smoke.audio's tone and upsweep), each at a random
          place, length and (faint) level in noise; 192 training clips and 200 held out, whose labels only this file
          knows. A short look through the package index's lists found no labelled recordings shipped inside a
          package (librosa's and soundata's examples are downloaded on first use), so the sounds are made.

kit runs the built notebook (`kit run`: its default recipe, SpecAugment, gain, EMA, early stopping; the model, the
spectrogram's sizes, the epochs, batch 32 and folds = 1 given, as the gunpoint row: a fifth of the clips choose the
best epoch; docs/benchmarks.md says what two folds and the time masks cost here). The plain loop: the
same log-mel (kit.data.spectra.LogMel, computed on the CPU in a Dataset: torchaudio is not in the dev environment),
the same timm test model from random init, Adam with a cosine schedule on every training clip, no augmentation, the
last epoch kept. Accuracy on the 200 held-out clips.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

RATE, SECONDS, TRAIN, TEST = 8000, 2.0, 192, 200
CLASSES = ("low", "high", "up", "down")
FRONTEND = dict(n_fft=256, hop=128, n_mels=32)
EPOCHS, MODEL = 16, "test_resnet"
CONFIG = """[competition]
slug = "calls-and-tones"
template = "audio"
metric = "accuracy"

[data]
layout = "folders"
train_images = "train"
test_images = "test"
sample_submission = "sample_submission.csv"
id_column = "fname"
target_column = "label"
image_ext = ""

[kernel]
title = "Quality calls and tones"
"""


def call(rng: np.random.Generator, label: str) -> np.ndarray:
    """A 2 s clip of one class: its sound over 0.4 to 1 s somewhere in it, at a random level, in noise."""
    from kit.smoke.audio import noise, tone, upsweep

    n = int(SECONDS * RATE)
    out = noise(rng, SECONDS, RATE, 0.1)
    seconds = float(rng.uniform(0.4, 1.0))
    if label in ("low", "high"):
        sound = tone(rng, seconds, RATE, (400.0 if label == "low" else 1200.0) * rng.uniform(0.95, 1.05), level=1.0)
    else:
        sound = upsweep(rng, seconds, RATE, 300.0, 1500.0, level=1.0)
        sound = sound[::-1].copy() if label == "down" else sound
    start = int(rng.integers(0, n - len(sound) + 1))
    out[start:start + len(sound)] += float(rng.uniform(0.04, 0.15)) * sound  # faint: neither loop is perfect
    return out


def make_calls(folder: Path, seed: int = 0) -> pd.DataFrame:
    """train/<class>/<k>.wav, test/<id>.wav, sample_submission.csv (fname,label) and competition.toml in `folder`;
    returns the held-out labels (id, answer)."""
    from kit.smoke.audio import write

    rng = np.random.default_rng(seed)
    for k in range(TRAIN):
        label = CLASSES[k % len(CLASSES)]
        write(folder / "train" / label / f"{k:04d}.wav", call(rng, label), RATE)
    answers = []
    for k in range(TEST):
        label = CLASSES[int(rng.integers(0, len(CLASSES)))]
        write(folder / "test" / f"t{k:04d}.wav", call(rng, label), RATE)
        answers.append((f"t{k:04d}.wav", label))
    pd.DataFrame({"fname": [a for a, _ in answers], "label": CLASSES[0]}).to_csv(folder / "sample_submission.csv", index=False)
    (folder / "competition.toml").write_text(CONFIG)
    return pd.DataFrame(answers, columns=["id", "answer"])


class MelClips(torch.utils.data.Dataset):
    """Each clip's log-mel, made on the CPU when read (the plain loop's input pipeline)."""

    def __init__(self, paths: list[Path]):
        from kit.data.spectra import Frontend, LogMel

        self.paths = paths
        self.mel = LogMel(Frontend(RATE, int(SECONDS * RATE), fmin=0.0, fmax=RATE / 2, top_db=80.0, **FRONTEND))

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> torch.Tensor:
        from scipy.io import wavfile

        _, x = wavfile.read(self.paths[i])
        with torch.no_grad():
            return self.mel(torch.from_numpy(x.astype(np.float32) / 32768.0)[None])[0][None]  # (1, mels, frames)


def plain_audio(folder: Path, loop: Callable, lr: float = 1e-3, batch: int = 32) -> dict[str, str]:
    """The plain loop on every training clip; {fname: label} of the held-out ones."""
    import timm

    paths = sorted((folder / "train").glob("*/*.wav"))
    y = torch.tensor([CLASSES.index(p.parent.name) for p in paths])
    x = torch.stack(list(torch.utils.data.DataLoader(MelClips(paths), batch_size=None)))
    test = sorted((folder / "test").glob("*.wav"))
    xt = torch.stack(list(torch.utils.data.DataLoader(MelClips(test), batch_size=None)))
    torch.manual_seed(0)
    model = timm.create_model(MODEL, pretrained=False, num_classes=len(CLASSES), in_chans=1)
    loop(model, torch.optim.Adam(model.parameters(), lr=lr), len(x), lambda idx: F.cross_entropy(model(x[idx]), y[idx]),
         EPOCHS, batch)
    with torch.no_grad():
        pred = torch.cat([model(b) for b in xt.split(128)]).argmax(1).numpy()
    return {p.name: CLASSES[k] for p, k in zip(test, pred)}


def accuracy(labels: dict[str, str], answers: pd.DataFrame) -> float:
    return float((answers["id"].map(labels) == answers["answer"]).mean())


def rows(work: Path, run_kit: Callable, make_row: Callable, loop: Callable) -> list:
    """One row: kit's accuracy, the plain loop's, and their seconds. `run_kit`, `make_row` and `loop` are quality.py's."""
    folder = work / "calls"
    answers = make_calls(folder)
    params = dict(model_name=MODEL, pretrained=False, epochs=EPOCHS, folds=1, batch_size=32, device="cpu", sample_rate=RATE,
                  window_s=SECONDS, **FRONTEND)
    sub, kit_s = run_kit(str(folder / "competition.toml"), folder, work / "kit-audio", params)
    started = time.time()
    plain = plain_audio(folder, loop)
    return [make_row("calls and tones 2 s", "audio", "accuracy", accuracy(dict(zip(sub["fname"], sub["label"])), answers),
                     accuracy(plain, answers), kit_s, time.time() - started)]
