"""The resource plan: what a run holds in host memory, writes to the output folder and to scratch, and how long the
writes after training take, set beside the limits of the machine it runs on, as the time plan (kit.runtime.budget)
sets folds and epochs beside the clock. A run that needs more RAM or output than the session has dies after the
hours it trained; this says so before the first step.

Kaggle's limits for a GPU T4 x2 session (its docs and the session panel, checked 2026-11): about 29 GB of RAM (30 GB
stated, less what the image's own processes hold), 20 GB saved from /kaggle/working, about 73 GB of disk in all, so
about 50 GB of scratch (/kaggle/temp, /tmp) beside the output, 12 hours a session and 9 in a code competition's
rerun. Each figure here is a plan: sizes times bytes, measured against the run at its end (`Measured`).
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

GB = 2**30
# host memory, /kaggle/working, scratch disk, seconds after training, seconds of the data step before it (a feature
# step: its time is spent before the time plan splits what is left between the folds)
PLACES = ("ram", "output", "scratch", "tail", "before")
# RAM: held throughout, while training, while predicting, or for a moment while the data is read (an image decoded
# before it is written to its canvas): measured in the kernel (Plan.peak_before), planned on a laptop
PHASES = ("data", "training", "prediction", "reading")
LIBRARIES_RAM = int(2.5 * GB)  # the kernel's process with torch, CUDA's context and kit imported (Kaggle, T4)
WIDTH = 52  # the table's first column
WRITE_BYTES_PER_S = 150e6  # Kaggle's working disk, binary arrays written once (CSV text runs ten times slower)


@dataclass(frozen=True)
class Limits:
    name: str
    ram: int  # host memory a run may hold
    output: int  # bytes the saved output folder may hold
    scratch: int  # bytes of disk beside it
    session_s: float  # the session's wall clock


KAGGLE_T4X2 = Limits("Kaggle GPU T4 x2", ram=29 * GB, output=20 * 10**9, scratch=50 * 10**9, session_s=12 * 3600)


@dataclass(frozen=True)
class Sizes:
    """A run's sizes: the data's (read from it in the kernel, or from a config's [sizes] on a laptop) and the model's."""

    train_rows: int  # training examples: images, texts, sequences, table rows
    test_rows: int  # the examples the submission predicts
    outputs: int  # the model's outputs per example (classes, labels, values)
    kind: str = ""  # the target's kind (kit.train.targets; segmentation: "rle", "pixels", "files"); "": from the metric
    height: int = 0  # images: the largest image's (segmentation's canvases and masks)
    width: int = 0
    side: int = 0  # cnn: the decoded cache's side in pixels (image_size's, where not given)
    channels: int = 3
    value_bytes: int = 1  # bytes of a decoded value (photos' uint8; float16 arrays: 2)
    columns: int = 0  # tables: feature columns
    # tables: the columns read as text (ids, categories, names): a Python string a cell in Kaggle's pandas 2.2, whatever
    # their width (kit.pipelines.footprints.STRING_BYTES)
    strings: int = 0
    steps: int = 0  # sequences: steps per sequence
    tokens: int = 0  # texts: tokens per text (the mean); spans: per window
    samples: int = 0  # sounds: samples per clip at the run's rate (the mean)
    windows: int = 0  # spans: windows per context (the mean, rounded up; 0 = 1): rows of tokens and of logits
    model_size: int = 0  # the model's parameters (weights), for checkpoints and the resume state
    row_steps: int = 1  # metric rows an example yields (a sequence's steps, per step)

    @property
    def pixels(self) -> int:
        return self.height * self.width


@dataclass(frozen=True)
class Need:
    what: str
    place: str  # one of PLACES
    amount: float  # bytes, or seconds for "tail" and "before"
    phase: str = "data"  # RAM: one of PHASES
    note: str = ""  # how it was sized, or what was changed to make it fit

    def __post_init__(self):
        if self.place not in PLACES or self.phase not in PHASES:
            raise ValueError(f"a need's place is one of {PLACES} and its phase one of {PHASES}: {self.place}, {self.phase}")


@dataclass
class Plan:
    """What a run needs, place by place; `ram` is its peak."""

    needs: list[Need]
    base_ram: int = LIBRARIES_RAM  # the process before its data: measured in the kernel, LIBRARIES_RAM on a laptop
    base_holds_data: bool = False  # measured after the data was read: the "data" needs are in base_ram already
    peak_before: int = 0  # the process's peak while it read the data (its decoding, its tables' copies), measured
    headline: str = ""  # what was planned, in words

    def total(self, place: str, phase: str | None = None) -> float:
        return sum(n.amount for n in self.needs if n.place == place and (phase is None or n.phase == phase))

    @property
    def ram(self) -> int:
        data = 0 if self.base_holds_data else self.total("ram", "data")
        later = self.base_ram + data + max(self.total("ram", "training"), self.total("ram", "prediction"))
        reading = 0 if self.base_holds_data else self.base_ram + data + self.total("ram", "reading")
        return int(max(self.peak_before, reading, later))

    @property
    def output(self) -> int:
        return int(self.total("output"))

    @property
    def scratch(self) -> int:
        return int(self.total("scratch"))

    @property
    def tail_s(self) -> float:
        return self.total("tail")

    @property
    def before_s(self) -> float:
        return self.total("before")

    def totals(self) -> dict[str, float]:
        return {"ram": self.ram, "output": self.output, "scratch": self.scratch, "tail_s": self.tail_s,
                "before_s": self.before_s}

    def over(self, limits: Limits) -> list[str]:
        """One line for each limit the plan passes."""
        lines = []
        for what, need, limit in (("host RAM", self.ram, limits.ram), ("output", self.output, limits.output),
                                  ("scratch disk", self.scratch, limits.scratch)):
            if need > limit:
                biggest = max((n for n in self.needs if n.place == {"host RAM": "ram", "output": "output"}.get(what, "scratch")),
                              key=lambda n: n.amount, default=None)
                lines.append(f"{what}: the run needs {need / GB:.1f} GB and {limits.name} has {limit / GB:.1f} GB"
                             f"{f' (most of it {biggest.what}, {biggest.amount / GB:.1f} GB)' if biggest else ''}")
        return lines

    def table(self, limits: Limits) -> str:
        """One table: each need in its column, the totals, the limits."""
        head = f"{'':<{WIDTH}}{'RAM GB':>8}{'output GB':>11}{'scratch GB':>12}{'tail s':>8}{'data s':>8}"
        lines = [f"resource plan{f': {self.headline}' if self.headline else ''}", head,
                 f"{'the process' + (' with its data (measured)' if self.base_holds_data else ''):<{WIDTH}}"
                 f"{self.base_ram / GB:>8.2f}"]
        if self.peak_before:
            lines.append(f"{'its peak while reading the data (measured)':<{WIDTH}}{self.peak_before / GB:>8.2f}")
        for n in self.needs:
            cells = {p: "" for p in PLACES}
            cells[n.place] = f"{n.amount:.0f}" if n.place in ("tail", "before") else f"{n.amount / GB:.2f}"
            what = n.what + ("" if n.place != "ram" or n.phase == "data" else f" ({n.phase})")
            lines.append(f"{what[:WIDTH - 1]:<{WIDTH}}{cells['ram']:>8}{cells['output']:>11}{cells['scratch']:>12}"
                         f"{cells['tail']:>8}{cells['before']:>8}"
                         + (f"  {n.note}" if n.note else ""))
        lines.append(f"{'planned (RAM at its peak)':<{WIDTH}}{self.ram / GB:>8.2f}{self.output / GB:>11.2f}"
                     f"{self.scratch / GB:>12.2f}{self.tail_s:>8.0f}{self.before_s:>8.0f}")
        lines.append(f"{limits.name:<{WIDTH}}{limits.ram / GB:>8.1f}{limits.output / GB:>11.1f}{limits.scratch / GB:>12.1f}")
        return "\n".join(lines)


def machine_limits(output_dir: Path, scratch_dir: Path, on_kaggle: bool) -> Limits:
    """This machine's limits: Kaggle's where the run is on Kaggle (its disk and RAM are shared with the image), else
    the RAM and free disk here."""
    if on_kaggle:
        return KAGGLE_T4X2
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = KAGGLE_T4X2.ram
    free = [shutil.disk_usage(p).free for p in (output_dir, scratch_dir) if p.exists()] or [KAGGLE_T4X2.output]
    return Limits("this machine", ram=int(ram), output=int(free[0]), scratch=int(free[-1]), session_s=KAGGLE_T4X2.session_s)


def rss() -> int:
    """This process's resident memory now (Linux; the peak so far elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, ValueError, StopIteration):
        return peak_rss()


def peak_rss() -> int:
    """This process's peak resident memory so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)  # KB on Linux


def folder_bytes(folder: Path, skip: Iterable[Path] = ()) -> int:
    """Bytes of the files under `folder` (those under `skip` left out)."""
    skipped = [Path(s).resolve() for s in skip]
    total = 0
    for here, _, names in os.walk(folder):
        if any(Path(here).resolve().is_relative_to(s) for s in skipped):
            continue
        total += sum(os.path.getsize(os.path.join(here, n)) for n in names if os.path.isfile(os.path.join(here, n)))
    return total


def measured_base(plan: Plan) -> Plan:
    """The plan of a process that has read its data: its memory now, and its peak so far, measured."""
    return replace(plan, base_ram=rss(), base_holds_data=True, peak_before=peak_rss())
