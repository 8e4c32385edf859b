"""Worker processes for both GPUs of a T4 x2 session (folds in parallel, or one model under DDP), as
accelerate's `notebook_launcher` runs the function it is handed.

The notebook process never forks: `launch` starts fresh worker processes with torch.multiprocessing's
spawn (safe after CUDA is initialised, and from a Jupyter kernel: a worker imports the function by name),
gives each its GPU and the process group, and runs the function there; the notebook relays their output (fd
1 and 2, so C-level errors too), line by line. One worker's failure stops the others. No worker outlives the
call that started it: an interrupt of the cell or an error stops and reaps them all, a new launch first
stops any left by an earlier one, and a worker dies with the notebook's process. On a CPU the same code
runs on gloo. What the workers do (rebuild the run, train their folds) is kit.run.folds's.
"""
from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from kit.errors import KitError
from kit.runtime import faults
from kit.runtime.collective import Collective, TorchCollective


def choose(parallel: str, world_size: int, folds: int, gpus: int) -> tuple[str, int, str]:
    """(mode, workers, why) for the `parallel` and `world_size` parameters, `folds` left to train, on a machine
    with `gpus` GPUs."""
    world = world_size or max(gpus, 1)
    if gpus and world > gpus:
        raise KitError(f"world_size={world_size} but only {gpus} GPU(s) are visible; use world_size=0 for all of them")
    if parallel == "none" or world == 1:
        why = "parallel='none'" if parallel == "none" else "one worker"
        return "none", 1, why
    if parallel == "folds" and folds < world:
        return "folds", folds, f"parallel='folds' with {folds} fold(s): {folds} worker(s)"
    if parallel != "auto":
        return parallel, world, f"parallel='{parallel}'"
    if folds >= world:
        return "folds", world, f"{folds} folds >= {world} workers: each worker trains whole folds, no communication"
    return "ddp", world, f"{folds} fold(s) < {world} workers: the folds train one at a time, data-parallel"


@dataclass(frozen=True)
class Job:
    """What every worker is handed: the function's own part (`payload`, picklable) and how the workers meet."""

    payload: dict[str, Any]  # for the function the workers run
    mode: str  # "ddp": one model, data-parallel; "folds": each worker trains whole folds
    world: int
    device: str  # "cuda": worker r takes GPU r; "cpu": gloo, the CPU's threads shared out
    port: int
    logs: str  # folder of the workers' log files
    parent: int  # the notebook's pid: a worker dies with it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORKER_NAME = "kit-worker"
GRACE_S = 10.0  # seconds a worker gets to exit after SIGTERM before SIGKILL


def launch(body: str, payload: dict[str, Any], mode: str, world: int, device: str, logs: Path,
           warn: Callable[[str], None]) -> str:
    """Run the function `body` names ("module:function") as `function(rank, job, collective, peers)` in `world`
    fresh worker processes to the end, relaying their output; "" when all finished, else the first failure.
    `collective`: the data-parallel peers under DDP (else none); `peers`: every worker, which fold-parallel
    workers agree with on the batch size. A worker imports the function once its output goes to its log, so
    what the import prints, or an import error, reaches the notebook as that worker's."""
    stopped = stop_workers()
    if stopped:
        warn(f"stopped {stopped} worker(s) still running from an earlier launch (an interrupted cell)")
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob("rank*.log"):
        old.unlink()
    job = Job(payload, mode, world, device, free_port(), str(logs), os.getpid())
    context = mp.start_processes(_worker, args=(body, job), nprocs=world, join=False, start_method="spawn")
    for rank, process in enumerate(context.processes):
        process.name = f"{WORKER_NAME}-{rank}"  # how a later launch, after a reload of kit, knows them
    relay = _Relay(logs, world)
    failure = ""
    try:
        while True:
            relay.poll()
            try:
                if context.join(timeout=0.5):
                    break
            except Exception as e:  # a worker raised or died
                failure = _last_line(str(e)) or type(e).__name__
                index = getattr(e, "error_index", None)
                failure = f"worker {index}: {failure}" if index is not None else failure
                break
    finally:  # the end, a failure, or an interrupt of the cell (KeyboardInterrupt): no worker is left running
        reap(context.processes)
        relay.poll()
    return failure


def reap(processes, grace_s: float = GRACE_S) -> int:
    """Stop `processes` (SIGTERM, then SIGKILL after `grace_s`) and wait for them; how many were running."""
    alive = [p for p in processes if p.is_alive()]
    for p in alive:
        p.terminate()
    deadline = time.time() + grace_s
    for p in alive:
        p.join(max(deadline - time.time(), 0.1))
        if p.is_alive():
            p.kill()
            p.join(5)
    return len(alive)


def stop_workers() -> int:
    """Stop this process's workers that still run (from a launch that was interrupted); how many."""
    return reap([p for p in multiprocessing.active_children() if p.name.startswith(WORKER_NAME)])


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class _Relay:
    """Copies new lines of each worker's log into this process's output, prefixed with the worker."""

    def __init__(self, folder: Path, world: int):
        self.paths = [folder / f"rank{r}.log" for r in range(world)]
        self.offsets = [0] * world
        self.partial = [""] * world

    def poll(self) -> None:
        for r, path in enumerate(self.paths):
            if not path.exists():
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                f.seek(self.offsets[r])
                chunk = f.read()
                self.offsets[r] = f.tell()
            text = self.partial[r] + chunk.replace("\r", "\n")
            *lines, self.partial[r] = text.split("\n")
            for line in lines:
                if line.strip():
                    print(f"[worker {r}] {line}", flush=True)


def worker_faults(rank: int) -> None:
    """Failpoints (kit.runtime.faults) for the tests of worker failures, as the worker starts a fold: an
    exception, a death by SIGKILL, or a C-level error written to fd 2 and an abort (as NCCL does)."""
    if faults.hit(f"crash.worker{rank}"):
        raise RuntimeError(f"injected crash in worker {rank}")
    if faults.hit(f"die.worker{rank}"):
        os.kill(os.getpid(), signal.SIGKILL)
    if faults.hit(f"abort.worker{rank}"):
        os.write(2, f"injected C-level failure in worker {rank}: NCCL error: unhandled system error\n".encode())
        os.abort()


def _worker(rank: int, body: str, job: Job) -> None:
    """A worker's whole life: its own log, its own GPU, the process group, then `body`."""
    _die_with_parent(job.parent)
    log = open(Path(job.logs) / f"rank{rank}.log", "a", buffering=1, encoding="utf-8")
    os.dup2(log.fileno(), 1)  # C-level output too (CUDA, NCCL, a C++ abort): the relay copies the file
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    os.environ["KIT_BATCH"] = "1"
    cuda = job.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // job.world))
    where = f"cuda:{rank}" if cuda else "the CPU"
    print(f"worker {rank}/{job.world} ({job.mode}) on {where}, pid {os.getpid()}")
    collective: Collective = Collective()
    peers: Collective = collective
    init = f"tcp://127.0.0.1:{job.port}"
    if job.mode == "ddp":
        dist.init_process_group("nccl" if cuda else "gloo", init_method=init, rank=rank, world_size=job.world)
        collective = peers = TorchCollective(rank, job.world, torch.device("cuda", rank) if cuda else torch.device("cpu"))
    elif job.world > 1:  # fold-parallel workers train alone, but agree on the batch size over gloo
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=job.world)
        peers = TorchCollective(rank, job.world, torch.device("cpu"))
    try:
        module, _, name = body.partition(":")
        getattr(importlib.import_module(module), name)(rank, job, collective, peers)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        log.flush()
    # Done: leave without the interpreter's teardown, where a C++ thread of torch's (gloo's pairs, a pool) still
    # joinable aborted the process now and then ("terminate called without an active exception", SIGABRT, no
    # Python frame), which the launcher reads as a failed worker after its work was written. A body that raised
    # does not come here: spawn reports its error.
    os._exit(0)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGTERM this worker when the notebook's process dies (a killed kernel runs no cleanup)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the notebook's reaping is all there is
        return
    if os.getppid() != parent:  # it died before the request was made
        os._exit(1)
