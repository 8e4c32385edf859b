"""Predictions at a competition's real size: a fold ensemble holds one fold's test predictions beside the running
sum; rows of many classes keep their likeliest (kit.train.topk) in validation, prediction, the ensemble, the
submission and blends, and score as dense rows do; blend files take at most 4 bytes a prediction."""
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from kit.pipelines import base
from kit.pipelines.base import label_cut, submission_frame
from kit.run import blend, ensemble, kept, predictions
from kit.runtime import checkpoint
from kit.runtime.precision import Precision
from kit.runtime.run_folder import OOF_PRED
from kit.train import cuts, metrics, topk
from kit.train.evaluate import evaluate
from kit.train.objectives import Classification
from kit.train.targets import KINDS, Target

RNG = np.random.default_rng(0)


class MaskPipe:
    """A pipeline whose every fold predicts `shape` float16 masks (as segmentation does for Severstal's test set)."""

    def __init__(self, shape):
        self.shape, self.calls = shape, 0

    def model(self, data, pretrained=True, fit_rows=None):
        return nn.Linear(1, 1)

    def predict(self, model, data, precision, batch_size):
        self.calls += 1
        return np.full(self.shape, 0.25 * self.calls, np.float16)

    fold_sum, fold_mean = base.Pipeline.fold_sum, base.Pipeline.fold_mean


def folds_on_disk(folder, n):
    for k in range(n):
        checkpoint.save({"model": nn.Linear(1, 1).state_dict()}, folder / f"fold{k}.pt")
        checkpoint.save({"epoch": 1, "score": 0.5, "rows": None, "precision": "fp32"}, folder / f"fold{k}.meta.pt")


def test_a_fold_ensemble_holds_one_folds_predictions_beside_the_sum(tmp_path):
    """Three folds of 20 MB of masks: the sum is added to in place and each fold's array let go, so the peak is
    about two folds' (the sum and the fold predicting), not every fold's, nor a new sum each fold."""
    folds_on_disk(tmp_path, 3)
    shape = (10, 1, 1000, 1000)  # 20 MB in float16
    pipe = MaskPipe(shape)
    session = SimpleNamespace(trained=None, params=SimpleNamespace(batch_size=8), log=lambda m: None,
                              warn=lambda m: None, precision=Precision("fp32", "cpu"), template="segmentation")
    tracemalloc.start()
    try:
        pred, used = ensemble.ensemble(session, pipe, None, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    fold_bytes = int(np.prod(shape)) * 2
    assert used == [0, 1, 2] and pred.dtype == np.float16 and float(pred[0, 0, 0, 0]) == pytest.approx(0.5)
    assert peak < 2.5 * fold_bytes, f"peak {peak / 2**20:.0f} MB for folds of {fold_bytes / 2**20:.0f} MB"


def test_which_rows_keep_their_likeliest_classes():
    assert topk.kept(KINDS["label"].likeliest, 15501, "macro_f1", 840_000) == topk.KEPT  # herbarium 2022: 52 GB dense
    assert topk.kept(KINDS["label"].likeliest, 5005, "map@5", 25_000) == 0  # whale: 500 MB dense, kept so
    assert topk.kept(KINDS["label"].likeliest, 7770, "map@5", 97_000) == topk.KEPT  # hotel-id: 3 GB dense
    assert topk.kept(KINDS["probs"].likeliest, 15501, "log_loss", 840_000) == 0  # log loss reads every class
    assert topk.kept(KINDS["tags"].likeliest, 3474, "f1_micro", 120_800) == 0  # label sets are cut on every label
    assert topk.kept(KINDS["label"].likeliest, 40, "map@50", 10**8) == 40  # never more than there are


def test_validation_rows_of_many_classes_keep_their_likeliest_and_score_as_dense_rows():
    """15,501 classes: the rows keep 32 classes each (a few hundred KB, not 62 MB) and accuracy, macro F1 and MAP@5
    are those of the dense rows."""
    classes, n = 15501, 1000
    model = nn.Linear(8, classes)
    x, y = torch.randn(n, 8), torch.randint(0, classes, (n,))
    with torch.no_grad():  # a model that knows some rows' class
        model.weight[y[: n // 2]] += 3 * x[: n // 2]
    batches = [{"image": x[i : i + 100], "target": y[i : i + 100]} for i in range(0, n, 100)]
    precision = Precision("fp32", "cpu")
    _, dense = evaluate(model, Classification(), batches, precision)
    _, rows = evaluate(model, Classification(keep=32), batches, precision)
    assert isinstance(rows["pred"], topk.TopK) and rows["pred"].nbytes < dense["pred"].nbytes / 200
    for metric in ("accuracy", "macro_f1", "map@5"):
        assert metrics.score(metric, rows["pred"], rows["target"]) == pytest.approx(
            metrics.score(metric, dense["pred"], dense["target"]))
    joined = metrics.join_rows([rows, rows])
    assert len(joined["pred"]) == 2 * n and metrics.score("accuracy", joined["pred"], joined["target"]) == pytest.approx(
        metrics.score("accuracy", dense["pred"], dense["target"]))
    with pytest.raises(ValueError, match="likeliest"):
        metrics.score("log_loss", rows["pred"], rows["target"])


def test_the_mean_of_folds_kept_so_is_the_dense_mean_where_a_fold_kept_the_class():
    dense = [RNG.dirichlet(np.ones(500) * 0.05, 200).astype(np.float32) for _ in range(3)]
    kept_rows = [topk.of(d, 32) for d in dense]
    total = None
    for part in kept_rows:
        total = base.sum_folds(total, part)
    mean = base.mean_folds(total, 3)
    exact = sum(p.dense() for p in kept_rows) / 3  # each fold's kept classes, the rest 0
    assert np.array_equal(mean.argmax(), exact.argmax(1))
    assert np.allclose(mean.dense(), exact, atol=1e-6)  # every class some fold kept, none let go on the way
    assert (mean.argmax() == (sum(dense) / 3).argmax(1)).mean() > 0.95  # a class some fold let go rarely wins
    target = Target("label", ("Predicted",), tuple(range(500)), top=5)
    frame = submission_frame(pd.DataFrame({"Id": range(200), "Predicted": 0}), target, mean)
    assert frame["Predicted"].str.split().str.len().eq(5).all()
    assert [int(v.split()[0]) for v in frame["Predicted"]] == mean.argmax().tolist()


def test_runs_kept_so_blend_and_read_back(tmp_path):
    """Two runs of rows of the likeliest classes: written, read back memory-mapped, lined up and blended."""
    classes, n = 3000, 400
    truth = RNG.integers(0, classes, n)
    runs = []
    for seed, name in enumerate(("a", "b")):
        logits = np.random.default_rng(seed).normal(size=(n, classes)).astype(np.float32)
        logits[np.arange(n) % 2 == seed, truth[np.arange(n) % 2 == seed]] += 6  # each run right on its half
        probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        rows = {"pred": topk.of(probs, 32), "target": truth}
        record = {"target": {"kind": "label", "columns": ["Predicted"], "classes": list(range(classes)), "top": 5,
                             "limits": []}}
        folder = tmp_path / name
        halves = [np.arange(n // 2), np.arange(n // 2, n)]
        parts = [(fold, rows_, {"pred": rows["pred"][rows_], "target": truth[rows_]}) for fold, rows_ in enumerate(halves)]
        predictions.save(folder, record, parts, np.arange(50), {0: topk.of(probs[:50], 32)})
        assert not (folder / OOF_PRED).stat().st_size > n * 32 * 4 + 128  # 32 classes a row, not 3,000
        runs.append(kept.read(folder, name, with_test=True))
    aligned = kept.align(runs, print)
    fitted = blend.fit("map@5", aligned.preds, aligned.truth, None, aligned.target)
    assert fitted.score > max(fitted.singles) and fitted.how == "hill climbing"
    ids, mean = kept.test_mean(runs[0])
    assert isinstance(mean, topk.TopK) and len(ids) == 50


def reference(metric, pred, truth, threshold, at_least_one, weight):
    """A label-set metric at one threshold, as the search scored it one candidate at a time before."""
    decided = metrics.binarize(pred, metrics.Cut(float(threshold), at_least_one)) > 0
    if metric == "f1_micro":
        return metrics.micro_f1(truth, decided, weight)
    beta = 2.0 if metric == "f2_samples" else 1.0
    return float(np.average(metrics.fbeta_rows(truth, decided, beta), weights=weight))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("metric", ["f1_micro", "f1_samples", "f2_samples"])
def test_every_threshold_counted_at_once_scores_as_each_cut_alone(metric, dtype):
    """Rows with no label, labels no row has, ties with the thresholds, a score mask: the counted scores are the
    one-cut-at-a-time scores at every candidate."""
    rng = np.random.default_rng(3)
    truth = rng.random((300, 40)) < 0.08
    truth[:, 5] = False  # a label the truth never holds
    pred = np.clip(0.4 * truth + rng.random(truth.shape) * 0.6, 0, 1).astype(dtype)
    pred[:10, :3] = 0.25  # exactly on a grid threshold
    thresholds = metrics.candidates(pred)
    for at_least_one in (True, False):
        for weight in (None, (rng.random(300) > 0.3).astype(float)):
            got = cuts.scores(metric, pred, truth, thresholds, at_least_one, weight)
            want = [reference(metric, pred, truth, t, at_least_one, weight) for t in thresholds]
            assert got == pytest.approx(want, abs=1e-12)


def test_the_threshold_search_holds_no_float_copy_of_the_rows():
    """iMet's shape at a sixth of its rows: the search once cut every candidate into float64 decisions (9 bytes a
    cell with the mask, at each of 200 candidates, and a float64 copy of every prediction for the quantiles); counted,
    it holds the truth's mask and its counts, a few bytes a cell."""
    rng = np.random.default_rng(4)
    truth = (rng.random((20_000, 3474)) < 0.001).astype(np.float32)
    pred = rng.random(truth.shape, dtype=np.float32) * 0.2
    tracemalloc.start()
    try:
        metrics.decide("f1_micro", pred, truth)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * truth.size, f"{peak / 2**20:.0f} MB for {truth.size / 2**20:.0f} M cells"


def test_segmentations_validation_loss_is_written_out_where_cuda_refuses_binary_cross_entropy(monkeypatch):
    """Under CUDA's autocast F.binary_cross_entropy on probabilities raises ("unsafe to autocast"), which the CPU's
    allows: every segmentation run in fp16 on a GPU fell back to the prior (seen on an H200). The validation loss
    is the same number written out."""
    from kit.train.segmentation import EPS, Segmentation

    objective = Segmentation("binary", 16, 0.0, [(lambda t: t, lambda t: t)], 1.0, False)
    prob, y = torch.rand(2, 1, 16, 16), (torch.rand(2, 1, 16, 16) > 0.5).float()
    want = torch.nn.functional.binary_cross_entropy(prob.clamp(EPS, 1 - EPS), y) + objective.dice_of_probs(prob, y)

    def refused(*args, **kwargs):
        raise RuntimeError("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.")

    monkeypatch.setattr(torch.nn.functional, "binary_cross_entropy", refused)
    assert float(objective.loss_of_probs(prob, y)) == pytest.approx(float(want), rel=1e-5)


def kept_run(folder, oof_top: bool, test_top: bool, seed: int = 0, classes: int = 300, n: int = 120, tests: int = 20):
    """A run's predictions written as a training run writes them (predictions.Kept, fold by fold), its out-of-fold
    and test rows each kept as their likeliest classes or dense; every row's class its likeliest, mostly."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, n)
    logits = rng.normal(size=(n + tests, classes)).astype(np.float32)
    logits[np.arange(n), truth] += 4
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    target = Target("label", ("Predicted",), tuple(range(classes)), top=5)
    halves = [np.arange(n // 2), np.arange(n // 2, n)]
    data = SimpleNamespace(sample=pd.DataFrame({"Id": [f"t{i}" for i in range(tests)], "Predicted": 0}), target=target)
    pipe = SimpleNamespace(split=lambda d: [(halves[1], halves[0]), (halves[0], halves[1])],
                           validation_rows=lambda d, rows: (np.array([f"r{i}" for i in rows]), truth[rows]))
    said = []
    session = SimpleNamespace(spec=SimpleNamespace(id_column="Id", metric="map@5"), template="cnn", log=said.append,
                              warn=said.append)
    keeping = predictions.Kept(session, pipe, data, folder, [0, 1])
    for fold, rows in enumerate(halves):
        val = topk.of(probs[rows], 32) if oof_top else probs[rows]
        test = topk.of(probs[n:], 32) if test_top else probs[n:]
        keeping.add(fold, test, {"pred": val, "target": truth[rows]})
    keeping.finish()
    return kept.read(folder, folder.name, with_test=True), truth, said


@pytest.mark.parametrize("oof_top, test_top", [(True, True), (True, False), (False, True)])
def test_a_runs_rows_read_back_as_written_whatever_each_keeps(tmp_path, oof_top, test_top):
    """Written through Kept (a run's own writer), each array is read back in the layout its files hold: the record
    once said "dense" for every run whose rows kept their likeliest classes, and one layout for both arrays."""
    run, truth, said = kept_run(tmp_path / "run", oof_top, test_top)
    assert isinstance(run.pred, topk.TopK) == oof_top and isinstance(run.test[0], topk.TopK) == test_top
    assert metrics.score("map@5", run.pred, truth) > 0.8  # the rows' own classes, not classes 0 to 31
    assert run.test[0].shape == (20, 300)
    assert any("what blends read" in line for line in said)


def test_runs_keeping_rows_alike_or_not_blend_on_their_likeliest_classes(tmp_path):
    """A run of dense rows beside one of its rows' likeliest: the blend reads both on the likeliest (it crashed)."""
    a, truth, _ = kept_run(tmp_path / "a", True, True, seed=1)
    b, _, _ = kept_run(tmp_path / "b", False, False, seed=1)
    tests = [kept.test_mean(r)[1] for r in (a, b)]
    done = blend.blend_runs("map@5", [a, b], tests, print)
    assert isinstance(done.test, topk.TopK) and done.fitted.score > 0.8


class LabelsPipe:
    fold_sum, fold_mean = base.Pipeline.fold_sum, base.Pipeline.fold_mean
    """A pipeline whose every fold predicts dense label probabilities of the test rows (iMet's shape)."""

    def __init__(self, rows, labels, seed=0):
        self.rows, self.labels, self.rng = rows, labels, np.random.default_rng(seed)

    def model(self, data, pretrained=True, fit_rows=None):
        return nn.Linear(1, 1)

    def predict(self, model, data, precision, batch_size):
        return self.rng.random((self.rows, self.labels), dtype=np.float32) * 0.1


def test_the_submissions_rows_hold_what_the_plan_counts_for_them(tmp_path):
    """The submission step of a 3,474-label run (two folds' validation rows read back from their checkpoints, each
    fold's test predictions added to the sum, the threshold searched over the out-of-fold rows), its allocations
    traced: their peak is the plan's prediction-phase rows within 25% (measured on the arrays, not on the process:
    the notebook's e2e test sets the whole run beside its plan)."""
    from kit.params import CnnParams
    from kit.run import footprint
    from kit.runtime.resources import Sizes

    labels, train, test = 3474, 6000, 1000
    rng = np.random.default_rng(5)
    for k in range(2):
        truth = (rng.random((train // 2, labels)) < 0.002).astype(np.float32)
        rows = topk.stored({"pred": rng.random(truth.shape, dtype=np.float32) * 0.1, "target": truth})
        checkpoint.save({"model": nn.Linear(1, 1).state_dict()}, tmp_path / f"fold{k}.pt")
        checkpoint.save({"epoch": 1, "score": 0.5, "rows": rows, "precision": "fp32"}, tmp_path / f"fold{k}.meta.pt")
    session = SimpleNamespace(trained=None, params=SimpleNamespace(batch_size=8), log=lambda m: None, warn=lambda m: None,
                              precision=Precision("fp32", "cpu"), template="cnn", spec=SimpleNamespace(metric="f1_micro"))
    oof: list = []
    tracemalloc.start()
    try:
        pred, used = ensemble.ensemble(session, LabelsPipe(test, labels), None, tmp_path, oof)
        label_cut(session, oof)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    sizes = Sizes(train, test, labels, "tags", model_size=1)
    planned = sum(n.amount for n in footprint.common(sizes, CnnParams(folds=2, ema=False), "f1_micro", "cuda")
                  if n.place == "ram" and n.phase == "prediction")
    assert used == [0, 1] and abs(peak - planned) <= 0.25 * planned, (peak / 2**20, planned / 2**20)


def test_a_tables_text_columns_are_planned_at_what_kaggles_pandas_holds_them_in():
    """Text cells (ids, categories, names) are Python strings in Kaggle's pandas 2.2, 60-75 bytes each whatever their
    width: champs' four took 2.15 GB at 7.2M pairs where the plan had counted 12 bytes a cell (0.36 GB)."""
    from kit.params import TabularParams
    from kit.pipelines.footprints import Tabular
    from kit.runtime.resources import Sizes
    from kit.spec import Spec

    rows, rng = 20_000, np.random.default_rng(0)
    table = pd.DataFrame({"molecule_name": [f"dsgdb9nsd_{i:06d}" for i in rng.integers(1, 130_000, rows)],
                          "type": rng.choice(["1JHC", "2JHH", "3JHN"], rows), "atom_0": rng.choice(list("HCN"), rows),
                          "atom_1": rng.choice(list("HCNOF"), rows), "atom_index_0": rng.integers(0, 29, rows),
                          "distance": rng.random(rows)})
    text = table.select_dtypes(exclude="number").astype(object)  # pandas 2.2's object columns
    took = int(text.memory_usage(deep=True, index=False).sum()) + rows * 2 * 12
    sizes = Sizes(rows, 0, 1, "values", columns=2, strings=text.shape[1])
    spec = Spec.from_dict({"slug": "champs-scalar-coupling", "template": "tabular", "metric": "mae", "target_column": "y"})
    [tables] = [n for n in Tabular.needs(sizes, TabularParams(), spec, None) if n.what.startswith("the tables")]
    assert took <= tables.amount <= 1.5 * took, (took, tables.amount)
    assert "4 text columns at 75 bytes a cell" in tables.note


def test_the_plan_counts_decoding_gigapixel_tiffs_at_the_measured_rate():
    """hubmap's 15 slides, each bounded by the canvas (9,540 x 12,387 at 1/4), at TIFF_RGB_MPX_S on 4 cores; vesuvius'
    3 fragments of its slab of 16 layers at TIFF_LAYER_MPX_S; image files (denoising) decode no TIFF. (make plan shows it.)"""
    from kit import config
    from kit.pipelines import footprints
    from kit.run import footprint

    def before(comp):
        cfg = config.load(comp)
        need = footprints.decode_need(footprint.completed(cfg.sizes, cfg.spec), cfg.spec)
        return None if need is None else need.amount

    assert before("hubmap-kidney-segmentation") == pytest.approx(15 * 9540 * 12387 * 16 / 1e6 / footprints.TIFF_RGB_MPX_S / 4)
    assert before("vesuvius-challenge-ink-detection") == pytest.approx(
        3 * 14830 * 9506 * 16 / 1e6 / footprints.TIFF_LAYER_MPX_S / 4)
    assert before("denoising-dirty-documents") is None


def test_a_laptop_plan_counts_the_moment_the_largest_image_is_decoded_and_a_kernel_measures_it():
    """vesuvius' largest fragment as a slab of 16 layers is 2.3 GB, and one 16-bit layer beside it while it is read:
    a moment's RAM the plan's peak holds on a laptop; in the kernel the process' measured peak stands for it."""
    from kit import config
    from kit.run import footprint
    from kit.runtime.resources import GB, KAGGLE_T4X2, Need, Plan

    cfg = config.load("vesuvius-challenge-ink-detection")
    made = footprint.plan("segmentation", footprint.completed(cfg.sizes, cfg.spec), cfg.checked, cfg.spec, KAGGLE_T4X2)
    [decoded] = [n for n in made.needs if n.phase == "reading"]
    assert decoded.amount == 14830 * 9506 * (16 + 2) and "the largest image, decoded (reading)" in made.table(KAGGLE_T4X2)
    uw = config.load("uw-madison-gi-tract-image-segmentation")  # 34,000 slices: 4 workers decode, each a PNG twice
    [slices] = [n for n in footprint.plan("segmentation", footprint.completed(uw.sizes, uw.spec), uw.checked, uw.spec,
                                          KAGGLE_T4X2).needs if n.phase == "reading"]
    assert slices.amount == 4 * 2 * 310 * 360 * 3 and "in each of 4 workers" in slices.note
    moment = Plan([Need("held", "ram", GB), Need("decoded", "ram", 4 * GB, "reading"), Need("fit", "ram", GB, "training")],
                  base_ram=GB)
    assert moment.ram == 6 * GB  # the libraries, the data and the image being decoded, above training's 3
    measured = Plan(moment.needs, base_ram=2 * GB, base_holds_data=True, peak_before=3 * GB)
    assert measured.ram == 3 * GB  # after the data was read: its peak was measured, and training's is 3
