"""make quality --jobs 2: each group of rows in a process of its own on one thread, one table in the serial order,
exit 1 where kit loses a row, and one line naming a group that ended without its table. The groups' processes are
stood in for here: what they run is bench/quality.py --only, the serial path."""
import json
import subprocess
import sys
from argparse import Namespace
from dataclasses import asdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import quality  # noqa: E402


def fake_lanes(monkeypatch, tables: dict[str, list[quality.Row]]) -> list[tuple[list[str], dict]]:
    """Each group's process writes the rows `tables` gives it (none: it fails before its table)."""
    calls = []

    def run(command, cwd, capture_output, text, env):
        calls.append((command, env))
        group = Path(command[command.index("--out") + 1]).stem
        if group in tables:
            out = Path(command[command.index("--out") + 1])
            out.write_text(json.dumps([asdict(r) | {"passed": r.passed} for r in tables[group]]))
        return subprocess.CompletedProcess(command, 0 if group in tables else 1, f"{group} ran\n", "")

    monkeypatch.setattr(quality.subprocess, "run", run)
    return calls


def row(name: str, kit: float, plain: float = 0.9) -> quality.Row:
    return quality.Row(name, "t", "accuracy", kit, plain, 1.0, 1.0)


def test_the_groups_run_on_one_thread_each_and_make_one_table_in_the_serial_order(tmp_path, monkeypatch, capsys):
    tables = {g: [row(g, 0.9)] for g in quality.GROUPS}
    calls = fake_lanes(monkeypatch, tables)
    out = tmp_path / "quality.json"
    args = Namespace(work=str(tmp_path / "work"), out=str(out), only="", jobs=2)
    assert quality.in_lanes(args, list(quality.LONGEST_FIRST)) == 0
    assert sorted(c[0][c[0].index("--only") + 1] for c in calls) == sorted(quality.GROUPS)
    assert all(env["OMP_NUM_THREADS"] == "1" for _, env in calls)
    assert [r["data"] for r in json.loads(out.read_text())] == list(quality.GROUPS)
    printed = capsys.readouterr().out
    assert all(f"{g} ran" in printed for g in quality.GROUPS)


def test_a_lost_row_fails_and_only_mixed_runs_the_mixed_tables(tmp_path, monkeypatch):
    calls = fake_lanes(monkeypatch, {"tabular": [row("titanic", 0.5)], "lstm": [row("breaths", 0.95)]})
    args = Namespace(work=str(tmp_path / "work"), out=str(tmp_path / "q.json"), only="mixed,lstm", jobs=2)
    assert quality.in_lanes(args, ["lstm", "tabular"]) == 1
    assert sorted(c[0][c[0].index("--only") + 1] for c in calls) == ["lstm", "mixed"]


def test_a_group_without_its_table_is_named_in_one_line(tmp_path, monkeypatch):
    fake_lanes(monkeypatch, {"cnn": [row("digits", 0.9)]})
    args = Namespace(work=str(tmp_path / "work"), out=str(tmp_path / "q.json"), only="", jobs=2)
    with pytest.raises(SystemExit, match=r"^quality: segmentation ended without a table \(exit \[1\]\); see the logs"):
        quality.in_lanes(args, ["segmentation", "cnn"])
