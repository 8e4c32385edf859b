"""The parallel modes: choosing one, and DDP on gloo reaching the single-process result."""
import json
import os
import sys
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from kit.errors import KitError
from kit.runtime.collective import TorchCollective, sync_batchnorm
from kit.runtime.precision import Precision
from kit.runtime.run_folder import FoldFiles
from kit.runtime.workers import choose, free_port
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFit


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


def leave():
    """A worker's group torn down; the caller then `done()`s."""
    dist.barrier()
    dist.destroy_process_group()


def done():
    """A worker that finished leaves without the interpreter's teardown, as kit's own workers do
    (kit.runtime.workers): there a C++ thread of torch's still joinable aborted the process now and then, after its
    results were written (SIGABRT, "terminate called without an active exception", no Python frame)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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
    result = fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16, rank, world),
                         batches(x[64:], y[64:], 32, rank, world),
                         cfg, Precision("fp32", "cpu"), files, log=lambda m: None, collective=collective))
    weights = getattr(model, "module", model)[0].weight.detach().flatten().tolist()
    return {"val_loss": [h["val_loss"] for h in result.history], "score": result.best_score, "weights": weights}


def _worker(rank, world, port, folder):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        out = train(rank, world, folder)
        if rank == 0:
            (folder / "ddp.json").write_text(json.dumps(out))
    finally:
        leave()
    done()


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
        result = fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16, rank, world),
                             batches(x[64:], y[64:], 32, rank, world),
                             cfg, Precision("fp32", "cpu"), files, log=lambda m: None, budget=budget, collective=collective))
        collective.barrier()
        (folder / f"rank{rank}.json").write_text(json.dumps({"epochs": result.epochs_run, "planned": result.epochs_planned}))
    finally:
        leave()
    done()


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
        leave()
    done()


def test_micro_batches_under_ddp_all_reduce_once_a_step(tmp_path):
    """Gradient accumulation (and the out-of-memory path's micro-batches) under DDP: the ranks' gradients are
    all-reduced once, with the last micro-batch (no_sync before it), not after every one: 4 micro-batches of a
    one-bucket model used to all-reduce 4 times (PCIe traffic on T4 x2)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_sync_worker, args=(2, free_port(), tmp_path), nprocs=2, start_method="spawn")
    assert [json.loads((tmp_path / f"sync{r}.json").read_text()) for r in range(2)] == [1, 1]


@pytest.mark.parametrize("choice, per_gpu, on", [("auto", 8, True), ("auto", 15, True), ("auto", 16, False),
                                                 ("auto", 128, False), (True, 128, True), (False, 4, False)])
def test_sync_batchnorm_only_where_a_gpu_batch_is_small(choice, per_gpu, on):
    assert sync_batchnorm(choice, per_gpu)[0] is on


def _buffers_worker(rank, world, port, folder):
    import warnings

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        collective = TorchCollective(rank, world, torch.device("cpu"))
        model = collective.wrap(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3)))
        x, y = data()
        x = x + 3.0 * rank  # each rank's rows have their own mean: their BatchNorm statistics differ while training
        cfg = FitConfig(epochs=2, lr=0.02, weight_decay=0.0, warmup_epochs=0, patience=0, metric="log_loss", ema=False)
        files = FoldFiles(folder / f"best{rank}.pt", folder / f"last{rank}.pt")
        fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16, rank, world),
                    batches(x[64:], y[64:], 32, rank, world),
                    cfg, Precision("fp32", "cpu"), files, log=lambda m: None, collective=collective))
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("Grad strides do not match bucket view strides. This may indicate grad was not created "
                          "according to the gradient layout contract", UserWarning, stacklevel=1)
            warnings.warn("another warning", UserWarning, stacklevel=1)
        norm = model.module[1]
        (folder / f"buffers{rank}.json").write_text(json.dumps({
            "mean": norm.running_mean.tolist(), "var": norm.running_var.tolist(),
            "syncs_buffers": model.will_sync_module_buffers(), "bucket_view": model.gradient_as_bucket_view,
            "warned": [str(w.message) for w in caught]}))
    finally:
        leave()
    done()


def test_ddp_keeps_batchnorm_buffers_per_rank_and_averages_them_at_each_epoch_end(tmp_path):
    """DDP's defaults sent rank 0's BatchNorm buffers to every rank before every forward, and copied every
    gradient into the all-reduce buckets: ~580 more launches a step on efficientnet_b0. Now each rank keeps its
    own statistics and the ranks average them at each epoch's end (timm's distribute_bn), before validation."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_buffers_worker, args=(2, free_port(), tmp_path), nprocs=2, start_method="spawn")
    ranks = [json.loads((tmp_path / f"buffers{r}.json").read_text()) for r in range(2)]
    assert [(r["syncs_buffers"], r["bucket_view"]) for r in ranks] == [(False, True), (False, True)]
    assert ranks[0]["mean"] == pytest.approx(ranks[1]["mean"], abs=1e-6)  # one mean for both
    assert ranks[0]["var"] == pytest.approx(ranks[1]["var"], abs=1e-6)
    assert ranks[0]["warned"] == ["another warning"]  # DDP's channels_last stride note alone is silenced


def test_the_loop_averages_batchnorm_statistics_of_the_weights_and_their_average_each_epoch(tmp_path):
    from kit.runtime.collective import Collective

    class Recording(Collective):
        def __init__(self):
            self.averaged = []

        def average_norm_statistics(self, module):
            self.averaged.append(module)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    x, y = data()
    peers = Recording()
    cfg = FitConfig(epochs=2, lr=0.02, weight_decay=0.0, warmup_epochs=0, patience=0, metric="log_loss", ema=True)
    fit(FoldFit(model, Classification("x"), batches(x[:64], y[:64], 16), batches(x[64:], y[64:], 32), cfg,
                Precision("fp32", "cpu"), FoldFiles(tmp_path / "best.pt", tmp_path / "last.pt"), log=lambda m: None,
                collective=peers))
    assert len(peers.averaged) == 4 and peers.averaged[0] is model and peers.averaged[1] is not model
