"""Batch-run progress: tqdm's figures in whole lines at an interval, nothing for short loops, nothing left by
a closed bar."""
import io
import time

from kit.runtime import progress


def run(steps: int, step_s: float, interval: float, stop_after: int | None = None, leave: bool = True) -> str:
    out = io.StringIO()
    bar = progress.bar(total=steps, desc="decode", unit="img", leave=leave, file=out)
    bar.mininterval = bar.delay = interval
    for _ in range(steps if stop_after is None else stop_after):
        time.sleep(step_s)
        bar.update(1)
    bar.close()
    return out.getvalue()


def test_a_short_loop_writes_nothing(monkeypatch):
    monkeypatch.setenv("KIT_BATCH", "1")
    assert run(steps=50, step_s=0.001, interval=5.0) == ""


def test_a_long_loop_writes_whole_lines_and_a_closing_one(monkeypatch):
    monkeypatch.setenv("KIT_BATCH", "1")
    lines = run(steps=12, step_s=0.05, interval=0.2).split("\n")
    assert lines[-1] == "" and "" not in lines[:-1]
    assert all(line.startswith("decode: ") and "img/s" in line and "\r" not in line for line in lines[:-1]), lines
    assert len(lines) - 1 >= 2 and lines[-2].startswith("decode: 100% 12/12")
    assert len(set(lines)) == len(lines)  # each state once


def test_a_bar_closed_early_without_leave_adds_nothing_after_its_last_line(monkeypatch):
    monkeypatch.setenv("KIT_BATCH", "1")
    text = run(steps=400, step_s=0.05, interval=0.2, stop_after=10, leave=False)
    lines = text.split("\n")
    assert lines and lines[-1] == "" and "" not in lines[:-1], repr(text)
    assert all(" 400 " not in line and "/400 [" in line for line in lines[:-1]), text  # no closing line


def test_the_lines_file_drops_redraws_and_clearing_blanks():
    out = io.StringIO()
    lines = progress.Lines(out)
    for chunk in ("\rx:  10% 1/10", "\rx:  10% 1/10", "\rx:  20% 2/10", "\r" + " " * 20 + "\r"):
        lines.write(chunk)
    assert out.getvalue() == "x:  10% 1/10\nx:  20% 2/10\n"
