"""Smoke data for the sequence templates: ventilator breaths simulated on a single-compartment lung, or any
other long table a config describes, as noisy waves whose class (or value) sets their frequency."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kit.spec import Spec


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    """ventilator-pressure-prediction's layout for its slug, else the long table the config describes."""
    if spec.slug == "ventilator-pressure-prediction":
        make_ventilator(spec, folder, seed)
    elif spec.step_columns:
        make_steps(spec, folder, seed)
    else:
        make_sequences(spec, folder, seed)


def breath(rng: np.random.Generator, R: int, C: int, steps: int = 80) -> dict[str, np.ndarray]:
    """One breath of a pressure-controlled ventilator on a single-compartment lung.

    Inspiration (u_out = 0, about the first second): the inspiratory valve opens u_in percent; the flow
    Q = q * u_in (L/s) fills the lung, and the airway pressure is PEEP + R * Q + V / C (R in cmH2O/L/s,
    C in mL/cmH2O, V the inhaled volume in L). Expiration (u_out = 1): the expiratory valve opens, the lung
    empties through it with time constant R * C, and the pressure falls back to PEEP."""
    dt = 0.0331 + rng.normal(0, 0.0005, steps).clip(-0.001, 0.001)
    t = np.concatenate([[0.0], np.cumsum(dt[:-1])])
    t_insp = rng.uniform(0.8, 1.2)
    u_out = (t >= t_insp).astype(np.int64)
    peak, rise, decay = rng.uniform(10, 60), rng.uniform(0.05, 0.2), rng.uniform(0.4, 2.0)
    u_in = peak * (1 - np.exp(-t / rise)) * np.exp(-t / decay) + rng.normal(0, 0.5, steps)
    u_in = np.where(u_out == 1, rng.uniform(0, 5) * np.exp(-(t - t_insp) / 0.3), u_in).clip(0, 100)
    peep, q, compliance = rng.uniform(4.5, 6.5), 0.012, C / 1000.0
    volume, pressure = 0.0, np.zeros(steps)
    for i in range(steps):
        if u_out[i] == 0:
            flow = q * u_in[i]
            volume += flow * dt[i]
            pressure[i] = peep + R * flow + volume / compliance
        else:
            volume *= np.exp(-dt[i] / (R * compliance + 0.05))
            pressure[i] = peep + volume / compliance * 0.6
    return {"time_step": t, "u_in": u_in, "u_out": u_out, "pressure": pressure + rng.normal(0, 0.1, steps)}


def make_ventilator(spec: Spec, folder: Path, seed: int = 0, train: int = 240, test: int = 40) -> pd.DataFrame:
    """ventilator-pressure-prediction's layout: train.csv id,breath_id,R,C,time_step,u_in,u_out,pressure;
    test.csv without pressure; sample_submission.csv id,pressure; 80 rows per breath. Returns the test rows
    with their pressure (what `make quality` scores against)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows, row_id = {"train": [], "test": []}, 1
    for split, count in (("train", train), ("test", test)):
        for b in range(count):
            R, C = int(rng.choice([5, 20, 50])), int(rng.choice([10, 20, 50]))
            sim = breath(rng, R, C)
            n = len(sim["u_in"])
            frame = pd.DataFrame({"id": np.arange(row_id, row_id + n), "breath_id": b * 3 + 1 + (split == "test"),
                                  "R": R, "C": C, "time_step": sim["time_step"], "u_in": sim["u_in"],
                                  "u_out": sim["u_out"], "pressure": sim["pressure"]})
            rows[split].append(frame)
            row_id += n
    train_df = pd.concat(rows["train"], ignore_index=True)
    answers = pd.concat(rows["test"], ignore_index=True)
    test_df = answers.drop(columns="pressure")
    train_df.to_csv(folder / spec.train, index=False)
    test_df.to_csv(folder / spec.test, index=False)
    pd.DataFrame({spec.id_column: test_df["id"], spec.target_column: 0.0}).to_csv(folder / spec.sample_submission, index=False)
    return answers


def make_sequences(spec: Spec, folder: Path, seed: int = 0, train: int = 160, test: int = 40) -> None:
    """Any other sequence layout the config describes: variable-length sequences whose features are noisy
    waves; per sequence, the class (or value) sets the wave's frequency; per step, the target follows the
    running sum of the first feature."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    regression = spec.metric in ("mae", "rmse")
    classes = ["walk", "run", "sit"] if spec.metric in ("accuracy", "log_loss") else ["0", "1"]
    per_step = spec.task == "per_step"
    frames = {"train": [], "test": []}
    row_id = 0
    for split, count in (("train", train), ("test", test)):
        for s in range(count):
            n = int(rng.integers(20, 60))
            k = int(rng.integers(len(classes)))
            t = np.arange(n)
            frame = {spec.sequence_column: f"{split[:2]}{s:04d}", spec.order_column: t}
            for j, name in enumerate(spec.features):
                frame[name] = np.sin(2 * np.pi * (k + 1) * t / 20 + rng.uniform(0, 6) + j) + rng.normal(0, 0.3, n)
            for name in spec.categorical:
                frame[name] = int(rng.integers(3))
            if per_step:
                frame[spec.id_column] = np.arange(row_id, row_id + n)
                row_id += n
                first = frame[spec.features[0]]
                if regression:
                    frame[spec.target_column] = np.cumsum(first) / 5
                else:
                    frame[spec.target_column] = np.where(np.cumsum(first) > 0, classes[1], classes[0])
            else:
                frame[spec.target_column] = (k * 1.5 + rng.normal(0, 0.1)) if regression else classes[k]
            frames[split].append(pd.DataFrame(frame))
    train_df = pd.concat(frames["train"], ignore_index=True)
    test_df = pd.concat(frames["test"], ignore_index=True).drop(columns=spec.target_column)
    train_df.to_csv(folder / spec.train, index=False)
    test_df.to_csv(folder / spec.test, index=False)
    ids = test_df[spec.id_column] if per_step else pd.unique(test_df[spec.sequence_column])
    sample = pd.DataFrame({spec.id_column: ids})
    if spec.metric == "log_loss" and not per_step:
        for c in classes:
            sample[c] = 1 / len(classes)
    else:
        sample[spec.target_column] = 0.0 if regression or spec.metric == "auc" else classes[0]
    sample.to_csv(folder / spec.sample_submission, index=False)


BASES, PAIRS, LOOPS = "ACGU", "(.)", "SMIBHEX"


def make_steps(spec: Spec, folder: Path, seed: int = 0, train: int = 80, test: int = 16, length: int = 40,
               scored: int = 28) -> None:
    """stanford-covid-vaccine's layout: train.json and test.json as JSON lines, one RNA a line: id, sequence,
    structure, predicted_loop_type (strings, one character a position), seq_length, seq_scored, and in train
    each target (the step columns that are neither features nor categorical) as a list of the first `scored`
    positions' values; sample_submission.csv id_seqpos ("<id>_<position>", every position) and the targets
    at 0. A position's targets follow its base and its pairing, with noise."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    strings = [c for c in spec.step_columns if c in spec.categorical]
    targets = [c for c in spec.step_columns if c not in spec.categorical and c not in spec.features]
    effect = {c: rng.normal(0, 1, (len(BASES), len(PAIRS))) for c in targets}
    rows = {"train": [], "test": []}
    for split, count in (("train", train), ("test", test)):
        for _ in range(count):
            seq = "".join(rng.choice(list(BASES), length))
            pairs = "".join(rng.choice(list(PAIRS), length))
            row = {"index": len(rows[split]), "id": f"id_{rng.bytes(5).hex()[:9]}"}
            for k, column in enumerate(strings):
                row[column] = (seq, pairs, "".join(rng.choice(list(LOOPS), length)))[k % 3]
            row.update({"seq_length": length, "seq_scored": scored})
            if split == "train":
                base, pair = [BASES.index(b) for b in seq[:scored]], [PAIRS.index(p) for p in pairs[:scored]]
                for column in targets:
                    values = effect[column][base, pair] + rng.normal(0, 0.2, scored)
                    row[column] = values.round(4).tolist()
            rows[split].append(row)
    for split, name in (("train", spec.train), ("test", spec.test)):
        pd.DataFrame(rows[split]).to_json(folder / name, orient="records", lines=True)
    ids = [f"{r['id']}_{p}" for r in rows["test"] for p in range(length)]
    pd.DataFrame({spec.id_column: ids, **{c: 0.0 for c in targets}}).to_csv(folder / spec.sample_submission, index=False)
