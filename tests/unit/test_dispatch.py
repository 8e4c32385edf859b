"""What a training batch asks of the device and the host, counted op by op on the CPU (a TorchDispatchMode sees
every aten call): the device-side transforms neither wait for the device nor copy from pageable memory once
warm, on a non-CPU device (meta: the shapes without the data, where a CUDA batch takes the same branch), and
kit's training step dispatches little more than a bare forward, backward and fused AdamW step of the same model.
On a fast GPU each op is a kernel launch, and a step that launches too many waits on the host, not the GPU."""
from __future__ import annotations

import collections

import pytest
import timm
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from kit.data.augment import ImageTransform
from kit.data.mask_augment import PairTransform, lookup
from kit.runtime.precision import Precision
from kit.train.objectives import Classification
from kit.train.step import make_optimizer, train_step

# what makes the host wait for the device: reading a value back, or a result whose size depends on the data
WAITS = {"aten._local_scalar_dense", "aten.nonzero", "aten.is_nonzero", "aten.equal", "aten.item"}


class Dispatched(TorchDispatchMode):
    """Counts the aten ops run inside it; lists each host-to-device copy (pinned or pageable), and each op that
    makes the host wait. Pinning is faked (the CPU has no page-locked memory without a GPU) and remembered."""

    def __init__(self):
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()
        self.pinned: list[torch.Tensor] = []  # held, so that an id is never reused while the mode runs
        self.copies: list[tuple[str, bool]] = []  # (op, whether its source was pinned)
        self.waits: list[str] = []

    def is_pinned(self, t) -> bool:
        return any(t is p for p in self.pinned)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket)
        self.ops[name] += 1
        if name == "aten.is_pinned":
            return self.is_pinned(args[0])
        if name == "aten._pin_memory":
            self.pinned.append(args[0].clone())
            return self.pinned[-1]
        if name in WAITS:
            self.waits.append(name)
        source = args[1] if name == "aten.copy_" else args[0] if name == "aten._to_copy" else None
        target = args[0].device if name == "aten.copy_" else kwargs.get("device") if source is not None else None
        if source is not None and target is not None and source.device.type == "cpu" and torch.device(target).type != "cpu":
            self.copies.append((name, self.is_pinned(source)))
        if source is not None and target is not None and source.device.type != "cpu" and torch.device(target).type == "cpu":
            self.waits.append(f"{name} to the host")
        return func(*args, **kwargs)

    @property
    def pageable(self) -> list[str]:
        return [op for op, pinned in self.copies if not pinned]

    @property
    def total(self) -> int:
        return sum(self.ops.values())


META = torch.device("meta")


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_the_image_transform_neither_waits_nor_copies_from_pageable_memory(train):
    transform = ImageTransform(32, (0.5,) * 3, (0.25,) * 3, train=train, hflip=0.5, vflip=0.5, rotate90=True)
    images = torch.empty((8, 40, 40, 3), dtype=torch.uint8, device=META)
    with Dispatched():
        transform(images)  # the first batch on a device copies the constants there, once
    with Dispatched() as d:
        for _ in range(3):
            out = transform(images)
    assert out.shape == (8, 3, 32, 32) and out.device == META
    assert d.waits == [] and d.pageable == []
    assert len(d.copies) == (3 if train else 0)  # a batch's crop parameters, from page-locked memory


@pytest.mark.parametrize("kind", ["binary", "classes"])
def test_the_mask_transform_neither_waits_nor_copies_from_pageable_memory(kind):
    transform = PairTransform(kind, lookup(kind, [0, 255], 2), 1, (0.5,) * 3, (0.25,) * 3, train=True, size=32,
                              scale=(0.25, 1.0), hflip=0.5, vflip=0.5, rotate90=True)
    batch = {"image": torch.empty((4, 40, 40, 3), dtype=torch.uint8, device=META),
             "mask": torch.empty((4, 40, 40, 1), dtype=torch.uint8, device=META)}
    with Dispatched():
        transform(batch)
    with Dispatched() as d:
        out = transform(batch)
    assert out["image"].shape == (4, 3, 32, 32) and out["target"].device == META
    assert d.waits == [] and d.pageable == [] and len(d.copies) == 1


@pytest.fixture
def one_thread():
    """The counts do not depend on threads; the time does: two threads on two shared cores took 26 s, one 2 s."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_training_step_dispatches_at_most_a_tenth_more_than_a_bare_step(one_thread):
    """efficientnet_b0's BatchNorm statistics were kept safe from an overflowing forward with a `where` and a
    `copy_` per buffer: 24% more ops than the bare step. The bare step: forward, loss, backward, the same fused
    AdamW, zero_grad. kit's adds the scaler's check for non-finite gradients, clipping, and the statistics' guard."""
    fp32 = Precision("fp32", "cpu")
    batch = {"image": torch.randn(2, 3, 32, 32), "target": torch.randint(0, 5, (2,))}

    def model():
        torch.manual_seed(0)
        return timm.create_model("efficientnet_b0", num_classes=5)

    kit_model = model()
    optimizer, scaler = make_optimizer(kit_model, 1e-3, 0.05), fp32.grad_scaler()
    train_step(kit_model, Classification(), batch, optimizer, scaler, fp32, 1.0)  # Adam allocates its state
    with Dispatched() as kit:
        train_step(kit_model, Classification(), batch, optimizer, scaler, fp32, 1.0)

    bare_model = model()
    optimizer = make_optimizer(bare_model, 1e-3, 0.05)

    def bare_step():
        F.cross_entropy(bare_model(batch["image"]), batch["target"]).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    bare_step()
    with Dispatched() as bare:
        bare_step()
    assert kit.waits == [] and bare.total > 500  # a model's worth of ops
    assert kit.total <= 1.10 * bare.total, (kit.total, bare.total, (kit.ops - bare.ops).most_common(12))
