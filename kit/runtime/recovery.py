"""Telling an out-of-memory error from other failures, and giving the memory back afterwards."""
from __future__ import annotations

import gc

import torch

OOM_MESSAGES = (
    "CUDA out of memory.",
    "CUDA error: out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",  # what cuDNN says when its workspace cannot be allocated
    "DefaultCPUAllocator: can't allocate memory",
)


def is_oom(error: BaseException) -> bool:
    """Whether `error` means the batch did not fit (a pure function of the exception)."""
    if isinstance(error, getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)):  # torch < 2.5: cuda's
        return True
    return isinstance(error, RuntimeError) and len(error.args) == 1 and any(m in str(error.args[0]) for m in OOM_MESSAGES)


def free_memory() -> None:
    """Collect garbage and return cached blocks to the driver. Call it after leaving the `except` block:
    inside it, the traceback still holds the frames (and tensors) of the failed step."""
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
