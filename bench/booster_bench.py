"""Boosters' rounds per second through kit's adapters (kit.models.boosters), on the CPU and, where there is one,
on the GPU: XGBoost (device="cuda") and CatBoost (task_type="GPU") against their CPU runs, LightGBM on the CPU.

A synthetic table of ROWS x FEATURES (numbers and a few categories), a binary target, ROUNDS rounds without
early stopping, every thread of the machine on the CPU; `python bench/booster_bench.py` prints one table, and
make gpu-report takes `figures()` as its boosters section (ratios against the CPU in the note).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kit.models import boosters  # noqa: E402
from kit.models.boosters import Settings, Task  # noqa: E402

ROWS, FEATURES, CATEGORIES, ROUNDS = 500_000, 40, 4, 200


def table(rows: int, categories: str, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, FEATURES)).astype(np.float32)
    frame = pd.DataFrame(x, columns=[f"x{j}" for j in range(FEATURES)])
    signal = x[:, 0] + 0.5 * x[:, 1] * x[:, 2]
    for j in range(CATEGORIES):
        codes = rng.integers(0, 8, rows)
        signal += 0.2 * (codes == j)
        frame[f"c{j}"] = pd.Categorical.from_codes(codes, categories=range(8)) if categories == "category" \
            else codes.astype(np.int32)
    return frame, (signal + rng.normal(0, 0.5, rows) > 0).astype(np.int64)


def rate(name: str, device: str, rows: int = ROWS, rounds: int = ROUNDS) -> float:
    """Rounds per second of `name` on `device` ("cpu" or "cuda:0"), setting up the data excluded."""
    settings = Settings(learning_rate=0.1, early_stopping_rounds=0, threads=os.cpu_count() or 1, device=device)
    booster = boosters.create(name, Task("binary"), settings)
    x, y = table(rows, booster.categories)
    cut = int(0.8 * rows)
    started = time.time()
    booster.fit(x.iloc[:cut], y[:cut], x.iloc[cut:], y[cut:], rounds, lambda done: False)
    return booster.rounds / (time.time() - started)


def figures(rows: int = ROWS, rounds: int = ROUNDS) -> list[dict]:
    """make gpu-report's figures: each library's rounds per second, the GPU's against the CPU's."""
    gpu = torch.cuda.is_available()
    out = []
    for name in ("xgboost", "catboost", "lightgbm"):
        cpu = rate(name, "cpu", rows, rounds)
        out.append({"section": "boosters", "name": f"{name} on the CPU", "value": cpu, "unit": "rounds/s",
                    "note": f"{rows:,} rows x {FEATURES + CATEGORIES} columns"})
        if gpu and name != "lightgbm":
            cuda = rate(name, "cuda:0", rows, rounds)
            out.append({"section": "boosters", "name": f"{name} on the GPU", "value": cuda, "unit": "rounds/s",
                        "note": f"{cuda / cpu:.1f}x the CPU"})
    return out


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else ROWS
    for f in figures(size):
        print(f"{f['name']:<22}{f['value']:>10.1f} {f['unit']}  {f['note']}")
