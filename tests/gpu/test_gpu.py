"""What only a CUDA GPU shows: the precision policy on the device, batch autotune, the monitor's line.

Run with `.venv/bin/pytest -m gpu` on a machine with a GPU; deselected by default (and skipped without one).
"""
import sys
from pathlib import Path

import pytest
import torch
from logs import SAID, said

from kit import config, smoke
from kit.build import execute, notebook

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
sys.path.insert(0, str(Path(__file__).parents[1] / "functional"))


def test_hardware_profile_and_precision_on_this_gpu():
    from kit.runtime import hardware

    hw = hardware.detect("cuda")
    plan = hardware.setup(hw)
    hardware.check_arch(hw)
    assert plan.precision == hardware.choose_precision("cuda", hw.capability) != "fp32"
    with torch.autocast("cuda", dtype=torch.float16 if plan.precision == "fp16" else torch.bfloat16):
        y = torch.nn.Linear(64, 64).cuda()(torch.randn(8, 64, device="cuda"))
    assert y.dtype in (torch.float16, torch.bfloat16)


def test_notebook_on_cuda_autotunes_and_monitors(tmp_path):
    cfg = config.load("dog-breed")
    data = tmp_path / "input" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, data)
    built = tmp_path / "kernel.ipynb"
    params = {**cfg.parameters(smoke=True), "device": "cuda", "batch_size": "auto", "epochs": 2}
    built.write_text(notebook.dumps(notebook.build("cnn", params)))
    out = tmp_path / "out"
    execute.run(built, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out)}, cwd=tmp_path)
    log = (out / "kit.log").read_text()
    assert "precision      fp16 autocast with loss scaling" in log or "precision      bf16 autocast" in log, said(log)
    assert "batch_size auto:" in log and "samples/s, peak" in log, said(log)
    assert " | gpu " in log and " | mem " in log, said(log)
    assert "preflight:" not in log and "channels_last  on" in log, said(log)  # every accelerant passed its try
    assert (out / "submission.csv").exists() and (out / "history.png").exists()


def test_cpu_and_gpu_augmentation_agree_for_a_seed():
    from kit.data.augment import ImageTransform

    x = torch.randint(0, 256, (8, 73, 73, 3), dtype=torch.uint8)
    for train in (True, False):
        cpu = ImageTransform(64, (0.5,) * 3, (0.25,) * 3, train=train, seed=7)(x)
        gpu = ImageTransform(64, (0.5,) * 3, (0.25,) * 3, train=train, seed=7)(x.cuda()).cpu()
        assert torch.allclose(cpu, gpu, atol=1e-3)


def run_smoke_notebook(tmp_path, comp, env=None, **params):
    cfg = config.load(comp)
    data = tmp_path / "input" / cfg.spec.slug
    smoke.make_dataset(cfg.spec, data)
    built = tmp_path / "kernel.ipynb"
    values = {**cfg.parameters(smoke=True), "device": "cuda", **params}
    built.write_text(notebook.dumps(notebook.build(cfg.spec.template, values)))
    out = tmp_path / "out"
    execute.run(built, tmp_path / "executed.ipynb", {"data_dir": str(data), "output_dir": str(out)}, cwd=tmp_path, env=env)
    assert (out / "submission.csv").exists()
    return (out / "kit.log").read_text()


def test_sequence_tables_on_the_gpu(tmp_path):
    log = run_smoke_notebook(tmp_path, "ventilator-lstm", batch_size="auto", epochs=2)
    assert "resident on the GPU" in log and "preflight:" not in log, said(log, (*SAID, "sequences "))


@pytest.mark.parametrize("fault", ["oom.unscale:3", "oom.step:3", "nan.amp:1-", "oom.predict:1"])
def test_faults_on_the_gpu_under_mixed_precision(tmp_path, fault):
    # fp16 with a live GradScaler: what a T4 (no native bf16) trains in, whatever this GPU would choose
    log = run_smoke_notebook(tmp_path, "dog-breed", env={"KIT_FAULTS": fault}, epochs=2, precision="fp16")
    assert "fp16 autocast with loss scaling" in log and "preflight:" not in log, said(log)
    assert "fold 2/2 epoch" in log and "predicted the test set with fold 2" in log, said(log, (*SAID, "fold "))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("mode", ["folds", "ddp"])
def test_both_gpus(tmp_path, mode):
    log = run_smoke_notebook(tmp_path, "dog-breed", parallel=mode, world_size=2, batch_size="auto", epochs=2)
    assert f"parallel: {mode} on 2 workers" in log and "from folds [1, 2]" in log


def test_text_in_fp16_with_autotune_accumulation_and_checkpointing(tmp_path):
    result = smoke.run("learning-agency-lab-automated-essay-scoring-2", root=tmp_path, overrides={
        "device": "cuda", "precision": "fp16", "batch_size": "auto", "accumulate": 2, "gradient_checkpointing": True,
        "layer_decay": 0.9})
    log = (result.submission.parent / "kit.log").read_text()
    assert "fp16 autocast with loss scaling" in log and "preflight:" not in log, said(log)
    assert "batch_size auto:" in log and " | gpu " in log, said(log)
    assert result.score > result.baseline + 0.2, (result.score, result.baseline, said(log))
