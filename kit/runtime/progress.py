"""Progress bars that suit where the notebook runs.

An interactive Jupyter session gets tqdm's widgets, which redraw in place. A batch run (Kaggle's "Save &
Run All", papermill, a worker's log) gets `Lines` instead: a saved output keeps every byte a text bar writes,
so its carriage-return redraws, the last state of a bar closed part-way and the blank it clears itself with
would all stay in the notebook. `Lines` writes only whole lines, and only for loops long enough to need them.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized

INTERVAL_S = 60.0  # seconds between lines in a batch run (env KIT_PROGRESS_INTERVAL); shorter loops print none


def bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
        leave: bool = True):
    """A progress bar over `iterable`, or one driven by `update(n)` and `close()`. `leave=False`: nothing
    stays once it closes (the caller reports the outcome itself, as an epoch line does)."""
    if _interactive():
        from tqdm.auto import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave)
    interval = float(os.environ.get("KIT_PROGRESS_INTERVAL", INTERVAL_S))
    return Lines(iterable, total=total, desc=desc, unit=unit, leave=leave, interval=interval)


class Lines:
    """A batch run's progress: `decode: 120/400 img (30%) in 61 s, 2.0 img/s, about 2.3 min left`, one whole
    line each `interval` seconds; on closing, a closing line if any was written and `leave`. A loop shorter
    than `interval` writes nothing."""

    def __init__(self, iterable: Iterable | None = None, total: int | None = None, desc: str = "", unit: str = "it",
                 leave: bool = True, interval: float = INTERVAL_S, file=None, clock: Callable[[], float] = time.monotonic):
        self.iterable = iterable
        self.total = total if total is not None else (len(iterable) if isinstance(iterable, Sized) else None)
        self.desc, self.unit, self.leave, self.interval = desc, unit, leave, interval
        self.file = file  # None: sys.stdout when writing (a notebook kernel replaces it for each cell)
        self.clock = clock
        self.n, self.written, self.closed = 0, False, False
        self.started = self.last = clock()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            self.write(self.line(now, closing=False))

    def close(self) -> None:
        if not self.closed and self.written and self.leave:
            self.write(self.line(self.clock(), closing=True))
        self.closed = True

    def line(self, now: float, closing: bool) -> str:
        elapsed = now - self.started
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        text = f"{self.desc}: {done} {self.unit}" if self.desc else f"{done} {self.unit}"
        if self.total and not closing:
            text += f" ({100 * self.n / self.total:.0f}%)"
        text += f" in {_duration(elapsed)}"
        rate = self.n / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            text += f", {rate:.0f}" if rate >= 100 else f", {rate:.3g}"
            text += f" {self.unit}/s"
            if self.total and not closing and self.n < self.total:
                text += f", about {_duration((self.total - self.n) / rate)} left"
        return text

    def write(self, text: str) -> None:
        out = self.file or sys.stdout
        out.write(text + "\n")
        out.flush()
        self.written = True

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _interactive() -> bool:
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE", "Interactive") != "Interactive" or os.environ.get("KIT_BATCH"):
        return False
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
