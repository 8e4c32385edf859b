"""Telling an out-of-memory error or a failed compile from other failures, giving the memory back, the libraries'
objects frozen out of the collector's reach once they are imported (`settle_imports`), and the one
halve-on-out-of-memory policy that the training step, validation and prediction share (`halving`)."""
from __future__ import annotations

import ctypes
import functools
import gc
from collections.abc import Callable
from typing import TypeVar

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


COMPILER_MODULES = ("torch._dynamo", "torch._inductor", "triton")


def is_compile_error(error: BaseException) -> bool:
    """Whether `error` comes from torch.compile's machinery (Dynamo, Inductor, Triton) rather than from the
    model: then eager mode runs the same model. A pure function of the exception and its causes."""
    seen = 0
    while error is not None and seen < 8:
        if any(c.__module__.startswith(COMPILER_MODULES) for c in type(error).__mro__):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def describe_error(error: BaseException, width: int = 160) -> str:
    """`Type: the message's first line`, for the one line that says what was turned off and why."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:width] if text else ''}".rstrip(": ")


def free_memory() -> None:
    """Collect garbage, give the heap's freed pages back to the system and cached blocks back to the driver (a fold's
    end, a fold's prediction). Call it after leaving the `except` block: inside it, the traceback still holds the
    frames (and tensors) of the failed step."""
    gc.collect()
    trim_heap()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


@functools.cache
def settle_imports() -> None:
    """Once a process, when the template's libraries are imported (kit.pipelines.create_pipeline), after the garbage
    so far is collected: what is alive (torch's, timm's and the others' ~500,000 objects, the session) is frozen out
    of the collector's reach (gc.freeze), so that no full collection in training and no `free_memory` walks it
    again, forked loader workers' collections do not write to its pages, and the kernel's exit does not sweep it (a
    kernel that had imported torch took 2.9 to 4.3 s to stop, 1.6 s so). Only once: a second pipeline in an
    interactive session must not freeze the first one's data, which a cycle would then keep after it is dropped."""
    gc.collect()
    gc.freeze()


@functools.cache
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (macOS): its allocator gives pages back its own way
        return None


def trim_heap() -> None:
    """glibc's malloc_trim(0): arrays under its mmap threshold (which rises to 32 MB as large arrays are freed) come
    from a heap that keeps freed pages, so a run's resident memory would ratchet up fold by fold past its plan."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


T = TypeVar("T")


def halving(attempt: Callable[[int], T], size: int, on_halve: Callable[[int, int], None] = lambda old, new: None,
            before_retry: Callable[[], None] = lambda: None) -> tuple[T, int]:
    """`attempt(size)`, and for as long as it runs out of memory, again at half the size: accelerate's
    `find_executable_batch_size` for one call. Returns the result and the size that worked (callers keep it
    for the calls after). Any other error, or running out of memory at a size of 1, is raised.
    `before_retry` undoes what the failed attempt left (gradients, a scaler mid-step); `on_halve(old, new)`
    says so."""
    while True:
        try:
            return attempt(size), size
        except Exception as e:  # noqa: BLE001 - only out-of-memory errors are retried, the rest re-raised
            if not is_oom(e) or size <= 1:
                raise
        # here, outside the except block, the failed attempt's frames and tensors are gone
        before_retry()
        free_memory()
        old, size = size, size // 2
        on_halve(old, size)
