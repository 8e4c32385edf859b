"""Long tables to padded sequences, fold standardisation, in-place batches, the models and their task."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from kit.data import sequences
from kit.errors import KitError
from kit.models.sequence import create_model
from kit.spec import Spec
from kit.train.objectives import SequenceObjective

SPEC = Spec(slug="x", template="lstm", metric="mae", train="train.csv", id_column="id", target_column="y",
            sequence_column="s", order_column="t", features=("a", "b"), categorical=("c",), task="per_step",
            score_mask="b > 0")


def table():
    # two sequences, rows shuffled; sequence "q" has 3 steps, "p" has 2
    return pd.DataFrame({"id": [10, 11, 12, 13, 14], "s": ["q", "p", "q", "q", "p"], "t": [2, 1, 0, 1, 0],
                         "a": [3.0, 20.0, 1.0, 2.0, 10.0], "b": [1, 0, 1, -1, 1], "c": ["u", "v", "u", "u", "w"],
                         "y": [0.3, 2.0, 0.1, 0.2, 1.0]})


def test_to_sequences_orders_pads_and_masks():
    df = table()
    codes = sequences.category_codes([df], ("c",))
    assert list(codes) == ["c"] and list(codes["c"]) == ["u", "v", "w"]  # codes 1, 2, 3
    w = sequences.score_rows(df, SPEC.score_mask, Path("train.csv"))
    seqs = sequences.to_sequences(df, SPEC, codes, df["y"].to_numpy(np.float32), w, per_step=True)
    assert seqs.ids.tolist() == ["p", "q"]
    assert seqs.x[:, :, 0].tolist() == [[10.0, 20.0, 0.0], [1.0, 2.0, 3.0]]
    assert seqs.mask.tolist() == [[True, True, False], [True, True, True]]
    assert seqs.cat[:, :, 0].tolist() == [[3, 2, 0], [1, 1, 1]]
    assert seqs.weight.tolist() == [[1, 0, 0], [1, 0, 1]]  # b > 0, and never on padding
    assert seqs.row_index.tolist() == [[4, 1, -1], [2, 3, 0]]
    assert np.allclose(seqs.y, [[1.0, 2.0, 0.0], [0.1, 0.2, 0.3]])
    per_seq = sequences.to_sequences(df, SPEC, codes, df["y"].to_numpy(np.float32), w, per_step=False, length=5)
    assert per_seq.x.shape == (2, 5, 2) and np.allclose(per_seq.y, [1.0, 0.1])  # a sequence's first row


def test_standardizer_uses_the_given_rows_only():
    df = table()
    seqs = sequences.to_sequences(df, SPEC, sequences.category_codes([df], ("c",)), None, np.ones(5, np.float32), True)
    mean, std = sequences.standardizer(seqs, np.array([1]))  # only sequence "q": a = 1, 2, 3
    assert mean[0] == pytest.approx(2.0) and std[0] == pytest.approx(np.std([1, 2, 3]))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda df: df.drop(columns="b"), "train.csv: no column 'b'"),
        (lambda df: df.assign(a=["1", "x", "2", "3", "4"]), "train.csv: feature 'a' is not numeric ('x' in row 3)"),
        (lambda df: df.assign(a=[1.0, np.nan, 2.0, 3.0, 4.0]), "train.csv: feature 'a' has 1 missing values (first in row 3)"),
    ],
)
def test_check_columns(change, message):
    with pytest.raises(KitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sequences.check_columns(change(table()), SPEC, Path("train.csv"), need_target=True)


def test_bad_score_mask():
    with pytest.raises(KitError, match="score_mask 'nope > 0' cannot be evaluated on train.csv"):
        sequences.score_rows(table(), "nope > 0", Path("train.csv"))
    with pytest.raises(KitError, match="not a true/false condition"):
        sequences.score_rows(table(), "a + 1", Path("train.csv"))


def test_batches_gather_in_place_and_shuffle_by_seed():
    tensors = {"x": torch.arange(10.0).view(10, 1), "target": torch.arange(10)}
    rows = np.array([1, 3, 5, 7, 9])
    plain = [b["target"].tolist() for b in sequences.SequenceBatches(tensors, rows, 2, False, torch.device("cpu"))]
    assert plain == [[1, 3], [5, 7], [9]]
    a = [b["target"].tolist() for b in sequences.SequenceBatches(tensors, rows, 2, True, torch.device("cpu"), seed=4)]
    b = [b["target"].tolist() for b in sequences.SequenceBatches(tensors, rows, 2, True, torch.device("cpu"), seed=4)]
    assert a == b and sorted(sum(a, [])) == [1, 3, 5, 7, 9]


def test_host_batches_are_gathered_without_torchs_threaded_ops():
    """torch's index_select and indexing run on its intra-op threads: on two busy cores each call waited ~4 ms for
    one, and make bench's in-place sequence path fell below its per-sequence DataLoader. numpy gathers instead."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Gathers(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func.overloadpacket) in ("aten.index_select", "aten.index", "aten.take", "aten.gather"):
                self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    ids = torch.arange(40)
    tensors = {"x": ids.float().view(40, 1, 1).expand(40, 6, 3).contiguous(), "target": ids,
               "mask": torch.arange(6).expand(40, 6) < (ids % 6 + 1).view(40, 1)}  # row i has i % 6 + 1 real steps
    batches = sequences.SequenceBatches(tensors, np.arange(3, 40), 8, True, torch.device("cpu"), seed=1)
    with Gathers() as mode:
        got = list(batches)
    assert mode.seen == [] and [len(b["target"]) for b in got] == [8, 8, 8, 8, 5]
    assert sorted(torch.cat([b["target"] for b in got]).tolist()) == list(range(3, 40))
    for b in got:  # each row's features and lengths are its own
        assert torch.equal(b["x"][:, 0, 0].long(), b["target"]) and torch.equal(b["lengths"], b["target"] % 6 + 1)


@pytest.mark.parametrize("name", ["lstm", "transformer"])
@pytest.mark.parametrize("per_step", [True, False])
def test_models_ignore_padding(name, per_step):
    torch.manual_seed(0)
    model = create_model(name, features=3, cardinalities=[4], outputs=2, per_step=per_step, d_model=16, hidden_size=16,
                         num_layers=2, nhead=4, dropout=0.0).eval()
    x, cat = torch.randn(2, 7, 3), torch.randint(1, 5, (2, 7, 1))
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False
    out = model(x, cat, mask)
    assert out.shape == ((2, 7, 2) if per_step else (2, 2))
    x2, cat2 = x.clone(), cat.clone()
    x2[1, 5:], cat2[1, 5:] = 99.0, 0  # garbage in the padding changes nothing real
    out2 = model(x2, cat2, mask)
    if per_step:
        assert torch.allclose(out[1, :5], out2[1, :5], atol=1e-5)
    else:
        assert torch.allclose(out[1], out2[1], atol=1e-5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.isfinite(model(x, cat, mask).float()).all()


def test_sequence_task_counts_scored_rows_only():
    task = SequenceObjective(classification=False, per_step=True, metric="mae", mean=1.0, std=2.0)

    class Const(torch.nn.Module):
        def forward(self, x, cat, mask, lengths=None):
            return torch.zeros(x.shape[0], x.shape[1], 1)

    batch = {"x": torch.zeros(1, 3, 1), "cat": torch.zeros(1, 3, 0, dtype=torch.long),
             "mask": torch.tensor([[True, True, False]]),
             "weight": torch.tensor([[1.0, 0.0, 0.0]]), "target": torch.tensor([[5.0, 100.0, 7.0]])}
    out = task(Const(), batch)
    assert out["loss"].item() == pytest.approx(abs(0 - (5 - 1) / 2))
    rows = task.rows(out["output"], batch)
    assert rows["pred"].flatten().tolist() == [1.0, 1.0] and rows["weight"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("per_step", [False, True])
def test_a_sequence_validation_loss_is_the_log_loss_only_per_sequence(per_step):
    """What lets the epoch line print the loss once: per sequence it is the log loss; per step it is a mean of
    each batch's means over its scored steps, another number."""
    from kit.runtime.precision import Precision
    from kit.train import metrics
    from kit.train.evaluate import evaluate

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.out = torch.nn.Linear(2, 3)

        def forward(self, x, cat, mask, lengths=None):
            return self.out(x) if per_step else self.out(x.mean(1))  # (B, L, 3) or (B, 3)

    g = torch.Generator().manual_seed(0)
    task = SequenceObjective(classification=True, per_step=per_step, metric="log_loss")
    batches = []
    for n, steps in ((4, 5), (3, 2)):  # batches with different numbers of scored steps
        mask = torch.ones(n, 5, dtype=torch.bool)
        mask[:, steps:] = False
        target = torch.randint(0, 3, (n, 5) if per_step else (n,), generator=g)
        batches.append({"x": torch.randn(n, 5, 2, generator=g), "cat": torch.zeros(n, 5, 0, dtype=torch.long),
                        "mask": mask, "weight": mask.float(), "target": target})
    torch.manual_seed(0)
    loss, rows = evaluate(Linear(), task, batches, Precision("fp32", "cpu"))
    score = metrics.score("log_loss", rows["pred"], rows["target"], rows.get("weight"))
    assert (task.loss_metric == "log_loss") == (not per_step)
    assert (abs(loss - score) < 1e-5) == (not per_step)
