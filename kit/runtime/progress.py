"""Progress bars that suit where the notebook runs.

An interactive Jupyter session gets tqdm's widgets, which redraw in place. A batch run (Kaggle's "Save &
Run All", papermill, a worker's log) gets tqdm writing through `Lines`: a saved output keeps every byte a
text bar writes, so its carriage-return redraws, the last state of a bar closed part-way and the blank it
clears itself with would all stay in the notebook. `Lines` passes on whole lines only, and tqdm's `delay`
keeps loops shorter than the interval silent.
"""
from __future__ import annotations

import os
import re
import sys

from tqdm import tqdm

INTERVAL_S = 60.0  # seconds between lines in a batch run (env KIT_PROGRESS_INTERVAL); shorter loops print none


def bar(iterable=None, *, total: int | None = None, desc: str = "", unit: str = "it", leave: bool = True, file=None):
    """A tqdm bar over `iterable`, or one driven by `update(n)` and `close()`. `leave=False`: nothing stays
    once it closes (the caller reports the outcome itself, as an epoch line does)."""
    if _interactive():
        from tqdm.auto import tqdm as auto

        return auto(iterable, total=total, desc=desc, unit=unit, leave=leave)
    interval = float(os.environ.get("KIT_PROGRESS_INTERVAL", INTERVAL_S))
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, file=Lines(file or sys.stdout),
                mininterval=interval, maxinterval=max(interval, 10.0), delay=interval, ncols=0)  # ncols=0: figures, no bar


class Lines:
    """A file for tqdm that turns its redraws into whole lines: each state it draws becomes one line, once;
    the blanks it clears a bar with are dropped."""

    def __init__(self, out):
        self.out, self.last = out, ""

    def write(self, text: str) -> None:
        for chunk in re.split(r"[\r\n]", text):
            line = chunk.strip()
            if line and line != self.last:
                self.out.write(line + "\n")
                self.last = line

    def flush(self) -> None:
        self.out.flush()


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
