"""The cnn pipeline in-process: the streaming fallback when the cache is refused, mixup, and the bench."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit import config, smoke
from kit.data import images
from kit.pipelines import create_pipeline
from kit.run import start, train_folds, write_submission

ROOT = Path(__file__).resolve().parents[2]


def namespace(data_dir: Path, out: Path, **params):
    cfg = config.load("dog-breed")
    return {**cfg.parameters(smoke=True), "data_dir": str(data_dir), "output_dir": str(out), "epochs": 1, **params}


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    smoke.make_dataset(config.load("dog-breed").spec, folder, seed=5)
    return folder


def test_streaming_fallback_trains_and_submits(tmp_path, data, monkeypatch, capsys):
    monkeypatch.setattr(images, "cache_refusal", lambda nbytes, d: "it needs 9.0 GB and /tmp has 1.0 GB free")
    session = start("cnn", namespace(data, tmp_path / "out"))
    pipe = create_pipeline(session)
    loaded = pipe.load()
    assert isinstance(loaded.train_cache, images.ImageFiles) and isinstance(loaded.test_cache, images.ImageFiles)
    assert "no decoded-image cache: it needs 9.0 GB and /tmp has 1.0 GB free; streaming" in capsys.readouterr().out
    cv = train_folds(session, pipe, loaded)
    sub = write_submission(session, pipe, loaded)
    assert cv.finished == [0, 1] and len(sub) == len(pd.read_csv(data / "sample_submission.csv"))


def test_mixup_and_cutmix_train_with_soft_targets(tmp_path, data):
    session = start("cnn", namespace(data, tmp_path / "out", mixup=0.4, cutmix=1.0, batch_size=8))
    pipe = create_pipeline(session)
    loaded = pipe.load()
    batch = next(iter(pipe.batches(loaded, loaded.usable[:16], train=True, batch_size=8)))
    assert batch["target"].shape == (8, 6) and np.allclose(batch["target"].sum(1).numpy(), 1.0)
    cv = train_folds(session, pipe, loaded)
    assert np.isfinite(cv.score)


def test_bench_runs_and_writes_its_json(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "bench"))
    import bench

    monkeypatch.setattr(bench, "ROOT", tmp_path)  # photos under tmp_path/.bench
    out = tmp_path / "bench.json"
    assert bench.main(["--images", "48", "--sequences", "512", "--texts", "64", "--clips", "24", "--out",
                       str(out)]) == 0
    figures = json.loads(out.read_text())
    for key in ("naive_ips", "kit_first_epoch_ips", "kit_cached_ips", "kit_cached_augmented_ips"):
        assert figures["images"][key] > 0
    for key in ("resident_data_steps_per_s", "dataloader_data_steps_per_s", "resident_train_steps_per_s"):
        assert figures["sequences"][key] > 0
    text = figures["text"]  # the same essays, model and steps: bucketed batches hold far less padding
    assert text["bucketed"]["padding_share"] < 0.5 * text["plain"]["padding_share"]
    assert text["bucketed"]["samples"] == text["plain"]["samples"] and text["bucketed"]["samples_per_s"] > 0
    audio = figures["audio"]  # the same clips through both paths, side by side
    assert audio["clips"] == 24 and all(audio[k] > 0 for k in ("cpu_mel_cps", "kit_first_epoch_cps", "kit_cached_cps"))
