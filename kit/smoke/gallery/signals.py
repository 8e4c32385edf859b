"""The gallery's competitions whose inputs are arrays rather than photos: statoil's radar bands in 7z'd JSON,
seti's .npy cadences, stanford-covid-vaccine's RNA strings and per-position targets in JSON lines."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import inputs, sequences
from kit.spec import Spec


def statoil(folder: Path, seed: int = 0) -> None:
    """train.json.7z, test.json.7z and sample_submission.csv.7z, one file each at the root (kit.smoke.inputs)."""
    spec = Spec(slug="statoil-iceberg-classifier-challenge", layout="arrays", train="train.json", test="test.json",
                id_column="id", target_column="is_iceberg", array_columns=("band_1", "band_2"))
    inputs.make_arrays(spec, folder, seed)


def seti(folder: Path, seed: int = 0) -> None:
    """train_labels.csv id,target, train/<id[0]>/<id>.npy and test/<id[0]>/<id>.npy (float16, 6 channels),
    sample_submission.csv id,target=0.5 (kit.smoke.inputs), and old_leaky_data/ (the pre-relaunch copy)."""
    spec = Spec(slug="seti-breakthrough-listen", train="train_labels.csv", image_path="{id[0]}/{id}.npy",
                id_column="id", target_column="target")
    inputs.make_npy(spec, folder, seed)
    (folder / "old_leaky_data").mkdir()
    pd.read_csv(folder / "train_labels.csv").head(4).to_csv(folder / "old_leaky_data" / "train_labels_old.csv", index=False)


TARGETS = ["reactivity", "deg_Mg_pH10", "deg_pH10", "deg_Mg_50C", "deg_50C"]
STRINGS = ["sequence", "structure", "predicted_loop_type"]
TRAIN_COLUMNS = ["index", "id", *STRINGS, "signal_to_noise", "SN_filter", "seq_length", "seq_scored", "reactivity_error",
                 "deg_error_Mg_pH10", "deg_error_pH10", "deg_error_Mg_50C", "deg_error_50C", *TARGETS]


def stanford_covid(folder: Path, seed: int = 0) -> None:
    """train.json and test.json as JSON lines (train: index, id, the three strings, signal_to_noise, SN_filter,
    seq_length, seq_scored, the five error lists and the five target lists; test: index, id, the strings,
    seq_length, seq_scored), sample_submission.csv id_seqpos + the five targets at 0.0000000000, every position
    of every test sequence in test.json's order (kit.smoke.sequences' RNA, with the columns it lacks)."""
    spec = Spec(slug="stanford-covid-vaccine", template="lstm", metric="rmse", train="train.json", test="test.json",
                id_column="id_seqpos", sequence_column="id", order_column="seqpos", features=("seqpos",),
                categorical=tuple(STRINGS), step_columns=(*STRINGS, *TARGETS))
    sequences.make_steps(spec, folder, seed)
    rng = np.random.default_rng(seed + 1)
    train = pd.read_json(folder / "train.json", lines=True)
    scored = int(train["seq_scored"].iloc[0])
    train["signal_to_noise"] = rng.uniform(0.5, 9.0, len(train)).round(3)
    train["SN_filter"] = (train["signal_to_noise"] > 1).astype(int)
    for target in TARGETS:
        error = target.replace("deg_", "deg_error_") if target != "reactivity" else "reactivity_error"
        train[error] = [rng.uniform(0.05, 0.3, scored).round(4).tolist() for _ in range(len(train))]
    train[TRAIN_COLUMNS].to_json(folder / "train.json", orient="records", lines=True)
    sample = pd.read_csv(folder / "sample_submission.csv")
    sample.to_csv(folder / "sample_submission.csv", index=False, float_format="%.10f")
