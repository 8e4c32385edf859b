"""The segmentation template on a CUDA GPU in fp16, as a T4 trains it: the TGS smoke with autocast and a live
GradScaler, the batch autotuned, channels_last and every accelerant passing its preflight, then learning clearly
more than empty masks; and an out-of-memory step and an overflowing forward in fp16, each survived with no fold
lost. smp comes from a local index holding the installed package's wheel, as the kernel installs it offline.

Run with `.venv/bin/pytest -m gpu` (or `make gpu-report`) on a machine with a GPU; skipped without one."""
import pytest
import torch
import wheels
from logs import said

from kit import smoke

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
COMP = "tgs-salt-identification-challenge"


@pytest.fixture(scope="module")
def smp_index(tmp_path_factory):
    index = tmp_path_factory.mktemp("smp-index")
    wheels.wheel_of_installed("segmentation-models-pytorch", index)
    return wheels.local_index_env(index)


def run(tmp_path, monkeypatch, smp_index, faults: str = "", **overrides):
    for key, value in {**smp_index, **({"KIT_FAULTS": faults} if faults else {})}.items():
        monkeypatch.setenv(key, value)
    result = smoke.run(COMP, root=tmp_path, overrides={"device": "cuda", "precision": "fp16", **overrides})
    return result, (result.submission.parent / "kit.log").read_text()


def test_segmentation_trains_in_fp16_with_autotune_and_channels_last(tmp_path, monkeypatch, smp_index):
    """It failed on an H100 with its message lost. Read against a CUDA run's log: the set-up lines are there as
    written; ' | gpu ' is in an epoch line only where an NVML sample fell inside the epoch, and TGS's smoke
    epochs (4 steps of 8 tiles) last milliseconds against a sample a second: kit.runtime.monitor now reads the
    GPU at an epoch's end when none did. Each assertion now says what the log said."""
    result, log = run(tmp_path, monkeypatch, smp_index, batch_size="auto")
    assert "fp16 autocast with loss scaling" in log and "preflight:" not in log, said(log)
    assert "batch_size auto:" in log and "channels_last  on" in log and " | gpu " in log, said(log)
    assert result.score > result.baseline + 0.05, (result.score, result.baseline, said(log))


@pytest.mark.parametrize("fault", ["oom.step:3", "overflow.forward:2"])
def test_segmentation_survives_faults_in_fp16(tmp_path, monkeypatch, smp_index, fault):
    """The path only: two epochs a fold (three took oom.step:3 past 100 s)."""
    result, log = run(tmp_path, monkeypatch, smp_index, faults=fault, epochs=2)
    assert "fold 2/2 epoch" in log and "predicted the test set with fold 2" in log, said(log, ("fold ", "WARNING"))
    assert result.submission.exists()
