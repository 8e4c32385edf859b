"""Batch-run progress: whole lines at an interval, nothing for short loops, nothing left by a closed bar."""
import io

from kit.runtime import progress
from kit.runtime.progress import Lines


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run(steps: int, step_s: float, stop_after: int | None = None, leave: bool = True) -> str:
    clock, out = Clock(), io.StringIO()
    bar = Lines(total=steps, desc="decode", unit="img", leave=leave, interval=60,
                file=out, clock=clock)
    for _ in range(steps if stop_after is None else stop_after):
        clock.now += step_s
        bar.update(1)
    bar.close()
    return out.getvalue()


def test_a_short_loop_writes_nothing():
    assert run(steps=50, step_s=1.0) == ""


def test_a_long_loop_writes_a_line_per_interval_and_a_closing_line():
    assert run(steps=150, step_s=1.0).splitlines() == [
        "decode: 60/150 img (40%) in 60 s, 1 img/s, about 1.5 min left",
        "decode: 120/150 img (80%) in 2.0 min, 1 img/s, about 30 s left",
        "decode: 150/150 img in 2.5 min, 1 img/s",
    ]


def test_a_bar_closed_early_without_leave_adds_nothing_after_its_last_line():
    assert run(steps=400, step_s=1.0, stop_after=70, leave=False) == "decode: 60/400 img (15%) in 60 s, 1 img/s, about 5.7 min left\n"


def test_an_iterable_of_unknown_length():
    clock, out = Clock(), io.StringIO()

    def items():
        for i in range(3):
            clock.now += 40
            yield i

    assert list(Lines(items(), desc="", unit="batch", interval=60, file=out, clock=clock)) == [0, 1, 2]
    assert out.getvalue() == "2 batch in 80 s, 0.025 batch/s\n3 batch in 2.0 min, 0.025 batch/s\n"


def test_batch_runs_get_lines(monkeypatch):
    monkeypatch.setenv("KIT_BATCH", "1")
    monkeypatch.setenv("KIT_PROGRESS_INTERVAL", "5")
    b = progress.bar(total=3, desc="x")
    assert isinstance(b, Lines) and b.interval == 5.0
