"""What a training process asks of its peers: nothing in a single process, torch.distributed's collectives
(NCCL on GPUs, gloo on the CPU) in a DDP or fold-parallel worker (kit.runtime.workers starts them)."""
from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist


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

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        return model


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

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        from torch.nn.parallel import DistributedDataParallel

        if self.device.type == "cuda" and any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
            # per-GPU batches are half the batch: BatchNorm statistics over both GPUs' samples. timm's converter
            # keeps the activation of its fused BatchNormAct layers (torch's would silently drop it).
            from timm.layers import convert_sync_batchnorm

            model = convert_sync_batchnorm(model)
        # device_ids=None: batches are on the device already, and a sequence batch's `lengths` must stay on the
        # host (DDP would move every input tensor to the device)
        return DistributedDataParallel(model, device_ids=None)
