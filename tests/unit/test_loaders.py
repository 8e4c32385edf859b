"""Host loaders at epoch boundaries: a training loader's workers are forked once and keep prefetching from one
epoch into the next (they drained at every boundary and waited for `iter()`, with the GPU idle), while each
epoch still covers every row once, in a new order."""
import os
import time

import torch
from torch.utils.data import Dataset

from kit.data.loaders import DeviceLoader, host_loader


class Logged(Dataset):
    """Rows 0..n-1; each batch fetched appends a line `pid row row ...` to `log` (the workers' own record)."""

    def __init__(self, n: int, log):
        self.n, self.log = n, log

    def __len__(self):
        return self.n

    def __getitems__(self, items):
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()} {' '.join(map(str, items))}\n")
        return {"row": torch.tensor(items)}


def fetched(log) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def epoch(loader, stop: int | None = None) -> list[int]:
    rows = []
    for i, batch in enumerate(loader):
        if i == stop:
            break
        rows += batch["row"].tolist()
    return rows


def test_a_training_loader_prefetches_the_next_epoch_in_the_same_workers(tmp_path):
    log = tmp_path / "fetched.txt"
    loader = DeviceLoader(host_loader(Logged(40, log), 8, shuffle=True, workers=2, pin=False, seed=0, repeat=True),
                          torch.device("cpu"))
    assert len(loader) == 5 and loader.batch_size == 8
    first = epoch(loader)
    assert sorted(first) == list(range(40))
    deadline = time.time() + 20
    while len(fetched(log)) <= 5 and time.time() < deadline:  # nothing asks for the next epoch yet
        time.sleep(0.05)
    assert len(fetched(log)) > 5  # its first batches are on their way already
    second = epoch(loader)
    assert sorted(second) == list(range(40)) and second != first  # a whole epoch, in a new order
    assert len({line.split()[0] for line in fetched(log)}) == 2  # by the two workers of the first epoch


def test_an_epoch_left_unfinished_leaves_the_next_one_whole(tmp_path):
    loader = DeviceLoader(host_loader(Logged(40, tmp_path / "log"), 8, shuffle=True, workers=1, pin=False, repeat=True),
                          torch.device("cpu"))
    assert len(epoch(loader, stop=2)) == 16  # a time budget or a fall-back to fp32 stopped it after two batches
    assert sorted(epoch(loader)) == list(range(40))


def test_a_validation_loader_reads_its_rows_once_in_order(tmp_path):
    log = tmp_path / "log"
    loader = DeviceLoader(host_loader(Logged(20, log), 8, shuffle=False, workers=0, pin=False), torch.device("cpu"))
    assert epoch(loader) == list(range(20)) == epoch(loader)
    assert len(fetched(log)) == 6  # three batches an epoch (the last of four rows), nothing read ahead
