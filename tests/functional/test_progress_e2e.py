"""A batch run's saved notebook keeps no progress-bar residue: the real training loop and a bar closed part-way
run through papermill, and the saved stream outputs are read back."""
import json
import re
from pathlib import Path

import nbformat
import pytest

from kit.build import execute

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

CELL = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
import torch
from torch import nn
from kit.runtime import progress
from kit.runtime.precision import Precision
from kit.train.loop import fit
from kit.runtime.run_folder import FoldFiles
from kit.train.results import FitConfig, FoldFit
from kit.train.objectives import Classification


class Slow(list):  # an epoch long enough for a progress report
    def __iter__(self):
        for batch in super().__iter__():
            time.sleep(0.2)
            yield batch


torch.manual_seed(0)
x = torch.randn(96, 4)
batches = Slow({{"x": x[i : i + 8], "target": (x[i : i + 8, 0] > 0).long()}} for i in range(0, 96, 8))
cfg = FitConfig(epochs=1, lr=0.01, weight_decay=0.0, warmup_epochs=0, patience=0, metric="accuracy")
fit(FoldFit(nn.Linear(4, 2), Classification("x"), batches, batches[:2], cfg, Precision("fp32", "cpu"),
            FoldFiles(Path({out!r}) / "best.pt", Path({out!r}) / "last.pt"), desc="fold 1/1"))
bar = progress.bar(total=10, desc="fold 2/2 epoch 3/25", leave=False)  # a fold that stops part-way
for _ in range(6):
    time.sleep(0.5)
    bar.update(1)
bar.close()
print("done")
"""


def test_saved_outputs_have_whole_progress_lines_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_PROGRESS_INTERVAL", "0.7")
    nb = tmp_path / "progress.ipynb"
    code = CELL.format(root=str(ROOT), out=str(tmp_path))
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)], metadata={
        "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}), nb)
    execute.run(nb, tmp_path / "executed.ipynb", {}, cwd=tmp_path)
    outputs = json.loads((tmp_path / "executed.ipynb").read_text())["cells"][-1]["outputs"]
    text = "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream")
    assert "\r" not in text and "\x1b" not in text, repr(text)
    lines = text.split("\n")
    assert lines[-1] == "" and "" not in lines[:-1], repr(text)  # whole lines, none of them blank
    assert not [line for line in lines if "%|" in line], text  # no drawn bar
    steps = [line for line in lines if line.startswith("fold 1/1 epoch 1/1: ")]
    stopped = [line for line in lines if line.startswith("fold 2/2 epoch 3/25: ")]
    assert steps and stopped, text  # a long loop does report
    pattern = r"fold 2/2 epoch 3/25: +\d+% [1-6]/10 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+it/s\]"
    assert all(re.fullmatch(pattern, s) for s in stopped), text
    assert lines[-2] == "done", text
