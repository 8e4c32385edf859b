"""tqdm progress bars that suit where the notebook runs."""
from __future__ import annotations

import os
import sys

from tqdm import tqdm


def bar(iterable=None, **kwargs):
    """Widgets in an interactive notebook; elsewhere (Kaggle batch runs, papermill, logs) a text bar that
    redraws rarely, so saved outputs stay short."""
    if _interactive():
        from tqdm.auto import tqdm as auto

        return auto(iterable, **kwargs)
    kwargs.setdefault("mininterval", float(os.environ.get("KIT_PROGRESS_INTERVAL", "10")))
    kwargs.setdefault("delay", 2.0)  # loops shorter than this print no bar at all
    kwargs.setdefault("file", sys.stdout)
    kwargs.setdefault("ascii", True)
    return tqdm(iterable, **kwargs)


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
