"""What a training process asks of its peers: nothing in a single process, torch.distributed's collectives
(NCCL on GPUs, gloo on the CPU) in a DDP or fold-parallel worker (kit.runtime.workers starts them)."""
from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

# BatchNorm statistics from fewer rows than this per GPU are noisy enough to cost accuracy (Wu and He, Group
# Normalization, 2018: ResNet-50's error rises from 8 images per GPU down); above it, SyncBatchNorm's blocking
# all-reduce in every BatchNorm layer (~100 a step on efficientnet_b0, over PCIe on a T4 x2) buys nothing
SYNC_BN_BELOW = 16


def sync_batchnorm(choice: bool | str, per_gpu_batch: int) -> tuple[bool, str]:
    """(whether DDP normalises each batch over every GPU's rows, why): `choice` as set, or for "auto" only
    where a GPU's own batch is small (SYNC_BN_BELOW)."""
    if choice != "auto":
        return bool(choice), "as set"
    if per_gpu_batch < SYNC_BN_BELOW:
        return True, f"{per_gpu_batch} rows per GPU are too few for BatchNorm's statistics"
    return False, f"{per_gpu_batch} rows per GPU; each GPU's statistics are averaged at each epoch's end"


def main_only(log: Callable[[str], None], peers: Collective) -> Callable[[str], None]:
    """`log` on the main process, which speaks for its peers (a line each rank printed would repeat); on the others
    a log that says nothing."""
    return log if peers.main else _silent


def _silent(message: str) -> None:
    """Another rank's line: the main process says it."""


def norm_statistics(module: nn.Module) -> list[torch.Tensor]:
    """The running statistics of `module`'s BatchNorm layers, each 1-D: what DDP ranks average."""
    return [b for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
            for b in (m.running_mean, m.running_var) if b is not None]


class Collective:
    """What the training loop asks of its peers; a single process has none, so every answer is its own."""

    rank, world = 0, 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def any(self, flag: bool) -> bool:
        return flag

    def gather(self, obj: Any) -> list[Any]:
        return [obj]

    def broadcast(self, obj: Any) -> Any:
        return obj

    def barrier(self) -> None:
        pass

    def wrap(self, model: nn.Module, sync_bn: bool = False) -> nn.Module:
        return model

    def average_norm_statistics(self, module: nn.Module) -> None:
        """One process's BatchNorm statistics are everyone's."""


class TorchCollective(Collective):
    """torch.distributed (NCCL on GPUs, gloo on the CPU) for a DistributedDataParallel worker."""

    def __init__(self, rank: int, world: int, device: torch.device):
        self.rank, self.world, self.device = rank, world, device

    def any(self, flag: bool) -> bool:
        t = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        dist.barrier()

    def wrap(self, model: nn.Module, sync_bn: bool = False) -> nn.Module:
        """DDP of `model`, as timm trains it: gradients written straight into the all-reduce buckets
        (`gradient_as_bucket_view`: no copy of every gradient into them a step), and BatchNorm buffers left
        per rank (`broadcast_buffers=False`: rank 0's were sent to every rank before every forward) and averaged
        at each epoch's end instead (`average_norm_statistics`); DDP's defaults cost efficientnet_b0 0.69 of
        its ceiling at world_size=1 on an H100. `sync_bn`: SyncBatchNorm, its statistics over every GPU's rows
        (`sync_batchnorm` chooses), on CUDA."""
        from torch.nn.parallel import DistributedDataParallel

        if sync_bn and self.device.type == "cuda" and norm_statistics(model):
            # timm's converter keeps the activation of its fused BatchNormAct layers (torch's would silently drop it)
            from timm.layers import convert_sync_batchnorm

            model = convert_sync_batchnorm(model)
        # channels_last weights whose strides are ambiguous (a size-1 dimension, depthwise convolutions) make the
        # reducer warn once that the layouts differ; they are the same memory order (pytorch/pytorch#47163)
        warnings.filterwarnings("ignore", message="Grad strides do not match bucket view strides", category=UserWarning)
        # torch 2.14 renamed the flag (its new one still sends rank 0's buffers once, at the start, as wanted)
        renamed = "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
        buffers = {"forward_sync_buffers": False} if renamed else {"broadcast_buffers": False}
        # device_ids=None: batches are on the device already, and a sequence batch's `lengths` must stay on the
        # host (DDP would move every input tensor to the device)
        return DistributedDataParallel(model, device_ids=None, gradient_as_bucket_view=True, **buffers)

    def average_norm_statistics(self, module: nn.Module) -> None:
        """Every rank's BatchNorm running statistics set to their mean over the ranks (timm's distribute_bn), in
        one all-reduce: validation and checkpoints then see the statistics of all the training rows."""
        stats = norm_statistics(module)
        if not stats:
            return
        with torch.no_grad():
            flat = torch.cat(stats)
            dist.all_reduce(flat)
            flat /= self.world
            torch._foreach_copy_(stats, list(flat.split([s.numel() for s in stats])))
