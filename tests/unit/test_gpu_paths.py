"""CUDA-only decisions checked on the CPU with the driver's answers faked: what a batch-size trial counts
as used memory, how DDP ranks agree on a batch, which NVML device a CUDA ordinal is, where sequence tables
live, and what the notebook process gives back before its workers take the GPUs."""
import dataclasses
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn
from toys import ToyPipeline, session

from kit.data import sequences
from kit.runtime import monitor
from kit.runtime.precision import Precision
from kit.train import autobatch
from kit.train.objectives import Classification

GB = 2**30
CPU32 = Precision("fp32", "cpu")


def toy_batches(n):
    return iter([{"x": torch.randn(n, 8), "target": torch.randint(0, 3, (n,))}] * 6)


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two 'GPUs' as the driver would answer: device 0 has 40 GB, device 1 16 GB. On device 1 this process's
    allocator peaks at 8 GB and holds 1 GB now; 6 GB more are in use there by others (the notebook process,
    contexts, NCCL's buffers): 9 GB free."""
    totals = {0: 40 * GB, 1: 16 * GB}

    def index(device=None):
        return torch.device(device).index if device is not None else 0

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: 8 * GB)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 1 * GB)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (9 * GB, totals[index(device)]))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device=None: SimpleNamespace(total_memory=totals[index(device)], uuid="5a3b-77"))


def test_a_trial_counts_what_others_hold_on_its_own_gpu(fake_gpus):
    probe = autobatch.Probe(torch.device("cuda", 1))
    t = autobatch.run_trial(nn.Linear(8, 3), Classification("x"), toy_batches, CPU32, 16, probe)
    assert t.peak == pytest.approx((8 + 6) / 16)  # not 8 / 40: device 1's memory, and the 6 GB others hold
    assert not t.fits and not t.oom


class _Peers:
    """Rank 0 of two; the other rank runs out of memory from `oom_from` rows, or errors at `error_at`. A trial
    asks `any` three times: did a rank fail, does the batch not fit somewhere, did a rank run out of memory."""

    world, main = 2, True

    def __init__(self, oom_from=10**9, error_at=None):
        self.oom_from, self.error_at, self.batch_now, self.asked = oom_from, error_at, 0, 0

    def any(self, flag):
        question, self.asked = self.asked % 3, self.asked + 1
        other = self.batch_now == self.error_at if question == 0 else self.batch_now >= self.oom_from
        return flag or other

    def broadcast(self, value):
        return value

    def gather(self, value):
        return [value, value]


def test_ddp_trials_agree_across_ranks():
    peers = _Peers(oom_from=64)

    def batches(n):
        peers.batch_now = n
        return toy_batches(n)

    lines = []
    chosen = autobatch.autotune(nn.Linear(8, 3), Classification("x"), batches, CPU32, 10_000, lines.append, None, peers)
    assert chosen in (16, 32) and "  batch   64: out of memory" in lines


def test_an_error_on_one_rank_is_raised_on_every_rank():
    peers = _Peers(error_at=32)

    def batches(n):
        peers.batch_now = n
        return toy_batches(n)

    with pytest.raises(RuntimeError, match="the batch trials failed on another worker"):
        autobatch.autotune(nn.Linear(8, 3), Classification("x"), batches, CPU32, 10_000, print, None, peers)


def test_only_a_ddp_batch_adds_the_reducers_share(monkeypatch, tmp_path):
    from kit.run.batch import resolve_batch

    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto", ema=False)
    s.setup = dataclasses.replace(s.setup, autotune=True)
    extras = []
    monkeypatch.setattr(autobatch, "autotune", lambda *args: extras.append(args[-1]) or 16)
    resolve_batch(s, ToyPipeline(), None, s.output_dir, 80, replicas=2)
    resolve_batch(s, ToyPipeline(), None, s.output_dir, 80, replicas=1)  # fold-parallel workers, or one process
    assert extras == [autobatch.ddp_extra(nn.Linear(6, 3)), 0] and extras[0] == 4 * 21


def test_the_trials_count_the_moving_average(monkeypatch, tmp_path):
    """A fold with ema on holds a second copy of the model's state on the GPU, which the trials did not count."""
    from kit.run.batch import resolve_batch

    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto")  # ema on: the default
    s.setup = dataclasses.replace(s.setup, autotune=True)
    extras = []
    monkeypatch.setattr(autobatch, "autotune", lambda *args: extras.append(args[-1]) or 16)
    resolve_batch(s, ToyPipeline(), None, s.output_dir, 80)
    assert extras == [autobatch.ema_extra(nn.Linear(6, 3))] and extras[0] == 4 * 21


def test_the_trials_keep_their_copy_of_the_weights_in_host_memory(monkeypatch):
    """Autotune restores the weights after its trials from a copy, which on the GPU would count in every trial as
    memory the run will not use (435M parameters: 1.7 GB of a T4's 16). On a CPU both places are the host, so
    the test reads what each copy asks for: a copy to the host, not a clone where the weights are."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Copies(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.asked = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in (torch.ops.aten.clone.default, torch.ops.aten._to_copy.default):
                self.asked.append((func.__name__, str(kwargs.get("device", "where it is"))))
            return func(*args, **kwargs)

    monkeypatch.setattr(autobatch, "run_trial", lambda model, objective, batches, precision, b, probe, extra:
                        autobatch.Trial(b, fits=b <= 32, samples_per_s=float(b)))
    model, copies = nn.Linear(8, 3), Copies()
    with copies:
        autobatch.autotune(model, Classification("x"), toy_batches, CPU32, 10_000, print)
    assert copies.asked == [("_to_copy.default", "cpu")] * len(model.state_dict())


def test_nvml_finds_the_gpu_cuda_means(monkeypatch, fake_gpus):
    """NVML numbers every GPU of the machine; CUDA only the visible ones: CUDA's device 0 is NVML's 3 here."""
    handles = {"GPU-5a3b-77": "the GPU by its UUID", 0: "NVML's device 0", 3: "NVML's device 3"}

    class FakeNvml(SimpleNamespace):
        def nvmlInit(self):
            pass

        def nvmlDeviceGetHandleByUUID(self, uuid):
            if uuid not in handles:
                raise RuntimeError("NVML_ERROR_NOT_FOUND")
            return handles[uuid]

        def nvmlDeviceGetHandleByIndex(self, i):
            return handles[i]

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,0")
    assert monitor.Source(0).handle == "the GPU by its UUID"
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: SimpleNamespace(uuid=None))
    assert monitor.Source(0).handle == "NVML's device 3"
    assert monitor.nvml_index(1, "3,1") == 1 and monitor.nvml_index(0, None) == 0


def test_big_sequence_tables_stay_in_host_memory_unpinned():
    assert sequences.placement(200 * 2**20, 14 * GB) == "gpu"  # the ventilator's 200 MB on a T4
    assert sequences.placement(5 * GB, 14 * GB) == "host"
    tensors = {"x": torch.randn(6, 4, 2)}
    assert sequences.place(tensors, torch.device("cpu"), print)["x"] is tensors["x"]  # shared, no copy


def test_sequence_batches_carry_host_lengths():
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    tensors = {"x": torch.arange(9.0).view(3, 3, 1), "mask": mask}
    got = list(sequences.SequenceBatches(tensors, np.array([2, 0, 1]), 2, False, torch.device("cpu")))
    assert [b["lengths"].tolist() for b in got] == [[1, 2], [3]]
    assert all(b["lengths"].device.type == "cpu" for b in got)


class _Launched(Exception):
    pass


def test_the_notebook_gives_the_gpus_to_its_workers(monkeypatch, tmp_path):
    """Parallel mode: the notebook process sizes no batch (the workers do, on their GPUs) and holds no
    device copies when the workers start."""
    from kit.run import folds
    from kit.runtime import workers

    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto", parallel="folds", world_size=2)
    events = []
    pipe = ToyPipeline()
    pipe.release = lambda data: events.append("release")
    monkeypatch.setattr(folds, "resolve_batch", lambda *a, **k: events.append("batch size") or (16, 1e-3))

    def launch(*args):
        events.append("launch")
        raise _Launched

    monkeypatch.setattr(workers, "launch", launch)
    with pytest.raises(_Launched):
        folds.train_folds(s, pipe, pipe.load())
    assert events == ["release", "launch"]


def test_workers_that_would_not_fit_in_ram_train_here_instead(monkeypatch, tmp_path, capsys):
    from kit.run import folds
    from kit.runtime import hardware, workers

    (tmp_path / "out").mkdir()
    s = session(tmp_path, parallel="folds", world_size=2)
    pipe = ToyPipeline()
    pipe.host_bytes = lambda data: 6 * GB  # each worker loads its own copy of the data
    monkeypatch.setattr(hardware, "available_ram_bytes", lambda: 12 * GB, raising=False)
    monkeypatch.setattr(workers, "launch", lambda *a: pytest.fail("workers were launched"))
    cv = folds.train_folds(s, pipe, pipe.load())
    assert cv.finished == [0, 1, 2]
    expected = "2 workers would need about 18.0 GB of RAM for their copies of the data, and 12.0 GB are free"
    assert expected in capsys.readouterr().out


def test_batch_trials_draw_from_the_training_data_path(tmp_path):
    """Trials see what training holds: the loader's batches (on a GPU, one in flight on the side stream while
    a step runs, and the augmentation's buffers), not one batch built aside."""
    from kit.run.batch import resolve_batch

    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto")
    s.setup = dataclasses.replace(s.setup, autotune=True)
    pipe, drawn = ToyPipeline(), []
    real = pipe.batches

    def batches(data, rows, train, batch_size, **kwargs):
        drawn.append((train, batch_size, len(rows), kwargs.get("workers")))
        return real(data, rows, train, batch_size, **kwargs)

    pipe.batches = batches
    size, _ = resolve_batch(s, pipe, None, s.output_dir, train_rows=80)
    trials = [d for d in drawn if d[1] == size]
    assert trials and all(train and rows == 6 * size and workers == 0 for train, _, rows, workers in trials)


def test_a_bare_cuda_device_is_the_current_gpu_with_its_index(monkeypatch):
    """torch.device("cuda") != the cuda:1 its tensors report: sequence batches compared the two and took
    GPU-resident tables for host ones."""
    from kit.runtime import hardware

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert hardware.indexed(torch.device("cuda")) == torch.device("cuda", 1)
    assert hardware.indexed(torch.device("cuda", 0)) == torch.device("cuda", 0)
    assert hardware.indexed(torch.device("cpu")) == torch.device("cpu")
    tables = {"x": torch.zeros(3, 2, 1), "mask": torch.ones(3, 2, dtype=torch.bool)}
    assert sequences.SequenceBatches(tables, np.arange(3), 2, False, torch.device("cuda")).device == torch.device("cuda", 1)


def test_the_preflight_and_the_batch_trials_build_one_model(tmp_path):
    """A large encoder takes 10-30 s to build: the preflight's checks and the batch trials each built their own."""
    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto", precision="fp16")  # fp16: the preflight tries its step on the CPU
    s.setup = dataclasses.replace(s.setup, autotune=True, precision="fp16")
    from kit.run import train_folds

    pipe = ToyPipeline()
    cv = train_folds(s, pipe, pipe.load())
    assert cv.finished == [0, 1, 2] and pipe.models == 1 + 3  # the probes' one, and each fold's


def test_an_epoch_shorter_than_the_monitors_interval_still_reports_the_gpus_utilisation(monkeypatch):
    """A smoke epoch on a fast GPU lasts milliseconds, and the monitor samples once a second: most epoch lines had
    no 'gpu N%' (the segmentation GPU test read ' | gpu ' in the log, and failed when no epoch got a sample)."""

    class Steady:
        def __init__(self, device_index):
            self.nvml, self.error = "fake", ""

        def read(self):
            return 37.0, 2 * GB, 16 * GB, 70.0

    monkeypatch.setattr(monitor, "Source", Steady)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: GB)  # what torch says without NVML
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: SimpleNamespace(total_memory=16 * GB))
    m = monitor.Monitor("cuda", interval_s=60.0).start()
    while not m.samples:  # the thread's first sample, taken as it starts: before this epoch
        time.sleep(0.01)
    m.epoch_begin()
    stats = m.epoch_end(wait_s=0.0, step_s=0.05, batch_size=8)
    m.stop()
    assert stats.line().startswith("gpu 37% (min 37%) | mem 2.0/16.0 GB")
