"""Precision, TF32, channels_last and the architecture check, for faked devices."""
import pytest

from kit.errors import KitError
from kit.runtime import hardware
from kit.runtime.hardware import Hardware

KAGGLE_TORCH = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")


@pytest.mark.parametrize(
    "device, capability, expected",
    [
        ("cpu", None, "fp32"),
        ("cuda", (6, 0), "fp32"),  # P100
        ("cuda", (7, 0), "fp16"),  # V100
        ("cuda", (7, 5), "fp16"),  # T4: bf16 would be emulated
        ("cuda", (8, 0), "bf16"),  # A100
        ("cuda", (8, 9), "bf16"),  # L4
        ("cuda", (9, 0), "bf16"),  # H100
    ],
)
def test_precision_by_capability(device, capability, expected):
    assert hardware.choose_precision(device, capability) == expected


def test_plan_for_kaggle_t4_and_cpu():
    t4 = Hardware("cuda", "Tesla T4", 2, (7, 5), 14.7, cpu_count=4, ram_gb=29.0, arch_list=KAGGLE_TORCH)
    assert hardware.setup(t4) == hardware.Setup(precision="fp16", tf32=False, channels_last=True, compile_ok=True, workers=4,
                                              prefetch=True, monitor=True, autotune=True)
    a100 = Hardware("cuda", "A100", 1, (8, 0), 40, cpu_count=12)
    assert hardware.setup(a100).tf32 and hardware.setup(a100).workers == 8
    cpu = Hardware("cpu", cpu_count=2)
    assert hardware.setup(cpu) == hardware.Setup("fp32", False, False, False, 0)
    assert hardware.setup(cpu, num_workers=3).workers == 3


@pytest.mark.parametrize("asked", ["fp32", "fp16", "bf16"])
def test_precision_asked_for_is_honoured_on_every_device(asked):
    t4 = Hardware("cuda", "Tesla T4", 2, (7, 5), 14.7, cpu_count=4)
    for hw in (t4, Hardware("cpu", cpu_count=2)):
        plan = hardware.setup(hw, precision=asked)
        assert plan.precision == asked
        assert "(as asked)" in hardware.describe(hw, plan, precision_asked=asked)
    assert "emulated" in hardware.precision_note(t4, hardware.setup(t4, precision="bf16"), "bf16")
    assert hardware.precision_note(t4, hardware.setup(t4, precision="fp16"), "fp16") == ""


@pytest.mark.parametrize(
    "capability, arch_list, ok",
    [
        ((6, 0), KAGGLE_TORCH, False),  # P100 on Kaggle's current image
        ((7, 5), KAGGLE_TORCH, True),
        ((8, 9), KAGGLE_TORCH, True),  # sm_86 cubin runs on 8.9
        ((7, 0), KAGGLE_TORCH, False),  # V100: no sm_70, and PTX only for 12.0
        ((13, 0), KAGGLE_TORCH, True),  # newer than all: the compute_120 PTX is JIT-compiled
        ((6, 0), ("sm_60", "sm_70"), True),
        ((6, 1), ("sm_60",), True),
        ((7, 5), ("sm_80", "compute_80"), False),
    ],
)
def test_arch_supported(capability, arch_list, ok):
    assert hardware.arch_supported(capability, arch_list) is ok


def test_p100_stops_with_one_line():
    p100 = Hardware("cuda", "Tesla P100-PCIE-16GB", 1, (6, 0), 16, arch_list=KAGGLE_TORCH)
    with pytest.raises(KitError, match=r"Tesla P100-PCIE-16GB \(sm_60\) is not supported .* choose the GPU T4 x2 accelerator"):
        hardware.check_arch(p100)
    hardware.check_arch(Hardware("cuda", "Tesla T4", 2, (7, 5), 15, arch_list=KAGGLE_TORCH))


def test_detect_cpu_and_refuse_missing_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    hw = hardware.detect("auto")
    assert hw.device == "cpu" and hw.cpu_count >= 1 and hw.ram_gb > 0
    with pytest.raises(KitError, match="device='cuda' but no CUDA GPU is visible"):
        hardware.detect("cuda")


def test_describe_mentions_every_decision():
    t4 = Hardware("cuda", "Tesla T4", 2, (7, 5), 14.7, cpu_count=4, ram_gb=29.0)
    text = hardware.describe(t4, hardware.setup(t4))
    assert "2 x Tesla T4 (compute 7.5, 14.7 GB)" in text and "fp16 autocast with loss scaling (GradScaler) (auto)" in text
    assert "channels_last  on" in text and "loader workers 4" in text


def test_a_template_probes_only_the_accelerants_its_data_path_uses():
    """On a T4 text batches are neither images (channels_last) nor copied on a side stream: the preflight used
    to try both on every text run."""
    from kit import templates
    from kit.run.start import accelerants

    t4 = hardware.setup(Hardware("cuda", "Tesla T4", 2, (7, 5), 15.0, 4, 29.0))
    assert t4.channels_last and t4.prefetch
    text = accelerants(t4, templates.get("text"))
    assert not text.channels_last and not text.prefetch and text.precision == "fp16"
    assert accelerants(t4, templates.get("cnn")) == t4
    assert not accelerants(t4, templates.get("lstm")).channels_last and accelerants(t4, templates.get("lstm")).prefetch
