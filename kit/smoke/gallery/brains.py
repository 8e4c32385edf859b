"""hms-harmful-brain-activity-classification's MLE-bench public folder at smoke size: train.csv (a row per labelled
50 s window, several a recording, the six vote columns), test.csv (spectrogram_id, eeg_id, patient_id: a row per
test window, several sharing a recording), sample_submission.csv (eeg_id + the six votes = 1/6, test.csv's rows),
train_eegs/ and test_eegs/ (<eeg_id>.parquet: the 19 electrodes and EKG at 200 Hz, float32), train_spectrograms/ and
test_spectrograms/ (<spectrogram_id>.parquet: time and the four chains' bands; the template reads the EEGs), and
example_figures/. A recording's class is a rhythm of its own frequency on its electrodes, each electrode at its own
amplitude (so that the bipolar differences keep it); its windows' votes lean to that class, with dissenting votes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

VOTES = ("seizure_vote", "lpd_vote", "gpd_vote", "lrda_vote", "grda_vote", "other_vote")
CONSENSUS = ("Seizure", "LPD", "GPD", "LRDA", "GRDA", "Other")
ELECTRODES = ("Fp1", "F3", "C3", "P3", "F7", "T3", "T5", "O1", "Fz", "Cz", "Pz", "Fp2", "F4", "C4", "P4", "F8", "T4",
              "T6", "O2", "EKG")  # Kaggle's column order
RATE = 200
RHYTHMS = (2.0, 5.0, 8.0, 11.0, 14.0, 17.0)  # Hz: each class's, within the template's 0.5 to 20 Hz
WINDOW_S = 50


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def recording(rng: np.random.Generator, cls: int, seconds: float) -> pd.DataFrame:
    """A recording of `cls`'s rhythm in noise (microvolts), a few samples missing (NaN) as real ones have."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    gains = rng.uniform(10.0, 60.0, len(ELECTRODES))
    phase = rng.uniform(0, 2 * np.pi)
    rhythm = np.sin(2 * np.pi * RHYTHMS[cls] * t + phase)
    x = rng.normal(0.0, 12.0, (n, len(ELECTRODES))) + gains[None, :] * rhythm[:, None]
    x[:, -1] = 300.0 * np.sin(2 * np.pi * 1.2 * t)  # EKG: the heart's beat, not a montage channel
    x[rng.integers(0, n, 5), rng.integers(0, len(ELECTRODES) - 1, 5)] = np.nan
    return pd.DataFrame(x.astype(np.float32), columns=list(ELECTRODES))


def spectrogram(rng: np.random.Generator, seconds: int) -> pd.DataFrame:
    columns = {"time": np.arange(1, seconds // 2 + 1, dtype=np.float64) * 2}
    for chain in ("LL", "RL", "LP", "RP"):
        for f in ("0.59", "0.78", "0.98", "1.17"):
            columns[f"{chain}_{f}"] = rng.gamma(2.0, 5.0, seconds // 2).astype(np.float32)
    return pd.DataFrame(columns)


def votes(rng: np.random.Generator, cls: int) -> list[int]:
    v = (rng.random(6) < 0.3) * rng.integers(1, 3, 6)
    v[cls] += int(rng.integers(2, 6))
    return v.tolist()


def hms(folder: Path, seed: int = 0, train: int = 36, test: int = 10) -> None:
    """`train` training recordings and `test` test recordings, each of one to three labelled windows, 10 per
    patient-free split as MLE-bench splits by spectrogram (disjoint recordings and spectrograms)."""
    rng = np.random.default_rng(seed)
    rows, test_rows = [], []
    label_id = 1000
    for k in range(train + test):
        eeg_id, spectrogram_id, patient = 1000 + 37 * k, 50000 + 53 * k, 200 + k // 3
        cls = k % len(VOTES)
        offsets = sorted({0, *(int(o) for o in rng.integers(0, 12, int(rng.integers(0, 3))))})
        seconds = offsets[-1] + WINDOW_S
        split = "test" if k >= train else "train"
        write_parquet(folder / f"{split}_eegs" / f"{eeg_id}.parquet", recording(rng, cls, seconds))
        write_parquet(folder / f"{split}_spectrograms" / f"{spectrogram_id}.parquet", spectrogram(rng, seconds + 550))
        for sub, offset in enumerate(offsets):
            v = votes(rng, cls)
            label_id += 1 + int(rng.integers(0, 90))
            row = {"eeg_id": eeg_id, "eeg_sub_id": sub, "eeg_label_offset_seconds": float(offset),
                   "spectrogram_id": spectrogram_id, "spectrogram_sub_id": sub,
                   "spectrogram_label_offset_seconds": float(offset), "label_id": label_id, "patient_id": patient,
                   "expert_consensus": CONSENSUS[int(np.argmax(v))], **dict(zip(VOTES, v))}
            (test_rows if split == "test" else rows).append(row)
    pd.DataFrame(rows).to_csv(folder / "train.csv", index=False)
    answers = pd.DataFrame(test_rows)
    answers[["spectrogram_id", "eeg_id", "patient_id"]].to_csv(folder / "test.csv", index=False)
    sample = answers[["eeg_id"]].copy()
    for c in VOTES:
        sample[c] = 1 / len(VOTES)
    sample.to_csv(folder / "sample_submission.csv", index=False)
    (folder / "example_figures").mkdir()
    (folder / "example_figures" / "README.txt").write_text("the competition's example figures (PNG) sit here\n")
