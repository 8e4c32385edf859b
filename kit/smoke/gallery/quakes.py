"""The gallery's competition of sensor series a row: predict-volcanic-eruptions-ingv-oe, ten seismic sensors around a
volcano, ten minutes a segment, and the time until its next eruption."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SENSORS = [f"sensor_{k}" for k in range(1, 11)]  # Kaggle's files' columns (MLE-bench's description names none)
LONGEST = 49_000_000  # time_to_eruption's largest, about, in Kaggle's train.csv (its unit is unstated)


def volcano(folder: Path, seed: int = 0, segments: int = 40, steps: int = 2000) -> None:
    """MLE-bench's split of predict-volcanic-eruptions-ingv-oe: a tenth of Kaggle's training segments held out;
    train.csv segment_id,time_to_eruption; sample_submission.csv the held-out ids, time_to_eruption=0;
    train/<segment_id>.csv and test/<segment_id>.csv, sensor_1..sensor_10 of `steps` steps (Kaggle's: 60,001) in the
    int16 range, with nulls (a few steps; a whole sensor in some segments). As an eruption nears, the tremor grows:
    each sensor's noise louder and a 2-4 Hz band (at 100 Hz) stronger."""
    rng = np.random.default_rng(seed)
    ids = 10**6 + rng.choice(2 * 10**9, segments, replace=False)  # Kaggle's ids: up to 10 digits
    left = rng.uniform(0.01, 1.0, segments)  # the share of LONGEST left before the eruption
    table = pd.DataFrame({"segment_id": ids, "time_to_eruption": (left * LONGEST).round().astype(np.int64)})
    held = rng.permutation(segments)[: max(2, segments // 10)]
    is_test = np.isin(np.arange(segments), held)
    table[~is_test].to_csv(folder / "train.csv", index=False)
    table[is_test].assign(time_to_eruption=0).to_csv(folder / "sample_submission.csv", index=False)
    t = np.arange(steps) / 100.0  # seconds at 100 Hz
    for k, (segment, share) in enumerate(zip(ids, left)):
        near = 1.0 - share  # 0: far, 1: about to erupt
        gain = rng.uniform(0.5, 2.0, len(SENSORS))  # (sensors,) each sensor its own scale
        noise = rng.normal(0, 1, (steps, len(SENSORS))) * (80 + 400 * near) * gain
        tremor = np.sin(2 * np.pi * rng.uniform(2, 4) * t + rng.uniform(0, 6.3))[:, None] * 600 * near ** 2 * gain
        values = np.clip(noise + tremor, -32767, 32767).round()  # (steps, sensors)
        values[rng.integers(0, steps, steps // 200), rng.integers(0, len(SENSORS))] = np.nan  # stray nulls
        if k % 5 == 1:  # a sensor that recorded nothing in this segment: a column of nulls
            values[:, rng.integers(0, len(SENSORS))] = np.nan
        split = folder / ("test" if is_test[k] else "train")
        split.mkdir(exist_ok=True)
        # whole numbers, a null an empty cell, as Kaggle's files hold them
        pd.DataFrame(values, columns=SENSORS).to_csv(split / f"{segment}.csv", index=False, float_format="%.0f")
