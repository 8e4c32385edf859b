"""The parallel modes: choosing one, and DDP on gloo reaching the single-process result."""
import json
import os
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from kit.errors import KitError
from kit.runtime.collective import TorchCollective
from kit.runtime.precision import Precision
from kit.runtime.workers import choose, free_port
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFiles


@pytest.mark.parametrize(
    "parallel, world_size, folds, gpus, expected",
    [
        ("auto", 0, 5, 2, ("folds", 2)),
        ("auto", 0, 1, 2, ("ddp", 2)),
        ("auto", 0, 5, 1, ("none", 1)),
        ("auto", 0, 5, 0, ("none", 1)),  # CPU: one process unless asked
        ("auto", 2, 5, 0, ("folds", 2)),  # CPU with world_size=2: gloo workers
        ("none", 0, 5, 2, ("none", 1)),
        ("ddp", 0, 5, 2, ("ddp", 2)),
        ("folds", 2, 1, 2, ("folds", 1)),  # never more fold workers than folds
    ],
)
def test_choose(parallel, world_size, folds, gpus, expected):
    mode, world, why = choose(parallel, world_size, folds, gpus)
    assert (mode, world) == expected and why


def test_choose_refuses_more_workers_than_gpus():
    with pytest.raises(KitError, match="world_size=4 but only 2 GPU"):
        choose("ddp", 4, 5, 2)


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 8, generator=g)
    y = (x @ torch.randn(8, 3, generator=g)).argmax(1)
    return x, y


def batches(x, y, size, rank=0, world=1):
    # the batch of `size` rows, split across ranks: each rank holds rows rank::world of it
    return [{"x": x[i : i + size][rank::world], "target": y[i : i + size][rank::world]} for i in range(0, len(x), size)]


def train(rank, world, folder):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    x, y = data()
    collective = None
    if world > 1:
        collective = TorchCollective(rank, world, torch.device("cpu"))
        model = collective.wrap(model)
    cfg = FitConfig(epochs=4, lr=0.02, weight_decay=0.0, warmup_epochs=0, patience=0, metric="log_loss")
    files = FoldFiles(folder / f"best{world}.pt", folder / f"last{world}.pt")
    result = fit(model, Classification("x"), batches(x[:64], y[:64], 16, rank, world), batches(x[64:], y[64:], 32, rank, world),
                 cfg, Precision("fp32", "cpu"), files, log=lambda m: None, collective=collective)
    weights = getattr(model, "module", model)[0].weight.detach().flatten().tolist()
    return {"val_loss": [h["val_loss"] for h in result.history], "score": result.best_score, "weights": weights}


def _worker(rank, world, port, folder):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        out = train(rank, world, folder)
        if rank == 0:
            (folder / "ddp.json").write_text(json.dumps(out))
    finally:
        dist.destroy_process_group()


def test_ddp_on_gloo_matches_one_process(tmp_path):
    single = train(0, 1, tmp_path)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_worker, args=(2, free_port(), tmp_path), nprocs=2, start_method="spawn")
    ddp = json.loads((tmp_path / "ddp.json").read_text())
    assert ddp["val_loss"] == pytest.approx(single["val_loss"], rel=1e-4)
    assert ddp["score"] == pytest.approx(single["score"], rel=1e-4)
    assert ddp["weights"] == pytest.approx(single["weights"], abs=1e-5)
    assert single["val_loss"][-1] < single["val_loss"][0]  # and it did learn


def _planning_worker(rank, world, port, folder):
    """Rank 1's clock runs 90 s ahead: planned on its own, its budget has room for one epoch, rank 0's for
    four. Every rank must follow rank 0's plan, or they wait for each other in a collective."""
    from datetime import timedelta

    from kit.runtime.budget import Budget

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    try:
        torch.manual_seed(0)
        x, y = data()
        collective = TorchCollective(rank, world, torch.device("cpu"))
        model = collective.wrap(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)))
        ahead = 90.0 if rank == 1 else 0.0
        started = time.time()
        budget = Budget(started, total_s=100.0, predict_rows=10, clock=lambda: time.time() + ahead)
        cfg = FitConfig(epochs=4, lr=0.02, weight_decay=0.0, warmup_epochs=0, patience=0, metric="log_loss")
        files = FoldFiles(folder / f"best{rank}.pt", folder / f"last{rank}.pt")
        result = fit(model, Classification("x"), batches(x[:64], y[:64], 16, rank, world),
                     batches(x[64:], y[64:], 32, rank, world),
                     cfg, Precision("fp32", "cpu"), files, log=lambda m: None, budget=budget, collective=collective)
        collective.barrier()
        (folder / f"rank{rank}.json").write_text(json.dumps({"epochs": result.epochs_run, "planned": result.epochs_planned}))
    finally:
        dist.destroy_process_group()


def test_ddp_ranks_follow_rank_0s_time_plan(tmp_path):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_planning_worker, args=(2, free_port(), tmp_path), nprocs=2, start_method="spawn")
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0] == ranks[1] == {"epochs": 4, "planned": 4}


def _sync_worker(rank, world, port, folder):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    from kit.train.step import make_optimizer, train_step

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = TorchCollective(rank, world, torch.device("cpu")).wrap(nn.Linear(8, 3))
        reductions = []

        def counted(state, bucket):
            reductions.append(1)
            return default_hooks.allreduce_hook(state, bucket)

        model.register_comm_hook(None, counted)
        fp32 = Precision("fp32", "cpu")
        x, y = data()
        batch = {"x": x[rank * 16 : rank * 16 + 16], "target": y[rank * 16 : rank * 16 + 16]}
        train_step(model, Classification("x"), batch, make_optimizer(model, 1e-2, 0.0), fp32.grad_scaler(), fp32, 1.0,
                   micro=4)
        (folder / f"sync{rank}.json").write_text(json.dumps(len(reductions)))
    finally:
        dist.destroy_process_group()


def test_micro_batches_under_ddp_all_reduce_once_a_step(tmp_path):
    """Gradient accumulation (and the out-of-memory path's micro-batches) under DDP: the ranks' gradients are
    all-reduced once, with the last micro-batch (no_sync before it), not after every one: 4 micro-batches of a
    one-bucket model used to all-reduce 4 times (PCIe traffic on T4 x2)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_sync_worker, args=(2, free_port(), tmp_path), nprocs=2, start_method="spawn")
    assert [json.loads((tmp_path / f"sync{r}.json").read_text()) for r in range(2)] == [1, 1]
