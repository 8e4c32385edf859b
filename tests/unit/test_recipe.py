"""The default recipe's causes found by `make quality` (bench/quality.py), one test each: what a small
automatic batch does to the learning rate, how early a fold may stop, the crop a small image gets, and the
average of the weights that is validated beside them."""
import dataclasses
import math

import numpy as np
import pytest
import torch
from torch import nn

from kit.data import augment
from kit.errors import KitError
from kit.params import CnnParams, check
from kit.run.batch import resolve_batch
from kit.runtime import checkpoint
from kit.runtime.precision import Precision
from kit.runtime.run_folder import FoldFiles
from kit.train import autobatch
from kit.train.loop import fit
from kit.train.objectives import Classification
from kit.train.results import FitConfig, FoldFit
from tests.toys import ToyPipeline, session

CPU = Precision("fp32", "cpu")


def toy(n=128, d=8, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    return x, (x @ torch.randn(d, classes, generator=g)).argmax(1)


def batches(x, y, size):
    return [{"x": x[i : i + size], "target": y[i : i + size]} for i in range(0, len(x), size)]


def fit_toy(tmp_path, name="a", log=None, budget=None, **cfg):
    torch.manual_seed(0)
    x, y = toy()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    settings = dict(epochs=4, lr=0.05, weight_decay=0.0, warmup_epochs=0, patience=0, metric="accuracy") | cfg
    files = FoldFiles(tmp_path / f"{name}.pt", tmp_path / f"{name}.last.pt")
    lines = []
    result = fit(FoldFit(model, Classification("x"), batches(x[:96], y[:96], 16), batches(x[96:], y[96:], 32),
                         FitConfig(**settings), CPU, files, log=log or lines.append, desc="toy", budget=budget))
    return result, files, lines


def test_a_small_automatic_batch_keeps_the_learning_rate(tmp_path, capsys):
    """On the CPU "auto" is a batch of 32: lr x sqrt(32/64) starved small data (a Transformer's MAE 0.647 -> 0.618)."""
    (tmp_path / "out").mkdir()
    s = session(tmp_path, batch_size="auto", lr=1e-3)
    assert resolve_batch(s, ToyPipeline(), None, s.output_dir, train_rows=700) == (autobatch.CPU_BATCH, 1e-3)
    assert "batch_size auto: 32 (on the CPU); lr 0.001 (a batch of 64 or fewer keeps it)" in capsys.readouterr().out
    assert autobatch.scaled_lr(1e-3, 16) == 1e-3 and autobatch.scaled_lr(1e-3, 128) == pytest.approx(1.414e-3, rel=1e-3)
    assert autobatch.scaled_lr(1e-3, 1024) == pytest.approx(2e-3)  # at most twice: 4x was never tried on a GPU


def test_early_stopping_waits_for_half_the_planned_epochs(tmp_path):
    """No better score after epoch 1 (lr 0): patience 2 used to stop at epoch 3 of 10; now not before 5."""
    result, _, lines = fit_toy(tmp_path, epochs=10, lr=0.0, patience=2)
    assert result.best_epoch == 1 and result.epochs_run == 5
    assert result.stopped == "early stop: no better accuracy (nor a tie at a lower val loss) for 2 epochs"
    result, _, _ = fit_toy(tmp_path, name="b", epochs=3, lr=0.0, patience=1)
    assert result.epochs_run == 2  # ceil(0.5 x 3): a short plan still stops early


def test_small_images_are_cropped_less():
    """A crop keeps a quarter of the area at 224 px and up, and at least 112 px of side below that."""
    assert augment.crop_area(320) == augment.crop_area(224) == 0.25
    assert augment.crop_area(160) == pytest.approx((112 / 160) ** 2)
    assert augment.crop_area(64) == augment.crop_area(112) == 1.0
    assert augment.crop_area(64, 0.3) == 0.3
    theta = augment.crop_flip_theta(256, torch.Generator().manual_seed(0), (augment.crop_area(64), 1.0), (3 / 4, 4 / 3), 0.0)
    assert (theta[:, 0, 0] * theta[:, 1, 1]).min() > 0.86  # the whole image, give or take the aspect jitter


@pytest.mark.parametrize("value, message", [(1.5, "crop_scale = 1.5 must be at most 1.0"),
                                            ("most", "crop_scale = 'most' must be a number or \"auto\"")])
def test_crop_scale_is_checked(value, message):
    with pytest.raises(KitError, match=message):
        check(CnnParams, {"crop_scale": value}, "[params]")
    assert check(CnnParams, {"crop_scale": 1}, "[params]").crop_scale == 1.0 and CnnParams().crop_scale == "auto"


def test_the_average_of_the_weights_is_validated_and_the_better_kept(tmp_path):
    result, files, lines = fit_toy(tmp_path, ema=True, epochs=6, lr=0.3)
    for r in result.history:
        assert r["accuracy"] == max(r["weights"], r["ema"])
    assert any(r["ema"] != r["weights"] for r in result.history)
    best = checkpoint.load(files.meta)
    chosen = result.history[result.best_epoch - 1]
    tie = chosen["ema"] == chosen["weights"] and chosen["ema_loss"] < chosen["val_loss"]  # broken by the loss
    assert best["ema"] == (chosen["ema"] > chosen["weights"] or tie) and best["score"] == result.best_score
    assert " | accuracy " in lines[0] and " | ema " in lines[0] and "of the weights or of their moving average (ema)" in lines[0]
    last = checkpoint.load(files.last)
    assert any(not torch.equal(last["ema"][k], last["model"][k]) for k in last["model"])


def test_the_budget_knows_the_average_is_validated_too(tmp_path, monkeypatch):
    """Validation time covers two passes over the 32 rows: taken for one, prediction looked twice as slow
    and the plan reserved twice its time."""
    import time

    from kit.runtime.budget import Budget

    seen, real = [], Budget.measure_epoch
    monkeypatch.setattr(Budget, "measure_epoch",
                        lambda self, train_s, val_s, rows, save_s=0.0:
                        seen.append(rows) or real(self, train_s, val_s, rows, save_s))
    fit_toy(tmp_path, ema=True, budget=Budget(time.time(), 3600.0, predict_rows=32))
    fit_toy(tmp_path, name="b", budget=Budget(time.time(), 3600.0, predict_rows=32))
    assert seen == [64] * 4 + [32] * 4


def test_a_resumed_fold_goes_on_with_its_average(tmp_path):
    """Killed after epoch 2 of 4 and resumed, the average ends where an uninterrupted fold's does: it is in
    the resume state, not started again from the resumed weights."""
    _, whole, _ = fit_toy(tmp_path, name="whole", ema=True)

    def kill_in_epoch_3(line):
        if " epoch  3/4" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit_toy(tmp_path, name="cut", ema=True, log=kill_in_epoch_3)
    _, cut, lines = fit_toy(tmp_path, name="cut", ema=True)
    assert lines[0].startswith("toy: resuming after epoch 2")
    expected, got = checkpoint.load(whole.last)["ema"], checkpoint.load(cut.last)["ema"]
    assert all(torch.allclose(expected[k], got[k], atol=1e-6) for k in expected)
    assert math.isclose(checkpoint.load(whole.meta)["score"], checkpoint.load(cut.meta)["score"])


def rendered_digits(side=40):
    from PIL import Image
    from sklearn.datasets import load_digits

    d = load_digits()
    pictures = [Image.fromarray((im * 255 / 16).astype(np.uint8)).convert("RGB").resize((side, side), Image.BICUBIC)
                for im in d.images]
    return np.stack([np.asarray(p) for p in pictures]), d.target


def test_flips_are_off_where_the_classes_look_different_mirrored():
    """Digits mirrored are other shapes (flipped training cost 0.012 accuracy on them); the same digits
    mirrored at random, as photos of animals are, keep flips on; a number given is used as it is."""
    images, labels = rendered_digits()
    rows = np.arange(len(images))
    flip, why = augment.flip_probability("auto", lambda r: images[r], rows, labels)
    assert flip == 0.0 and why.startswith("the images look different mirrored (asymmetry 0.") and "set hflip" in why
    mirrored = images.copy()
    turned = np.random.default_rng(0).random(len(images)) < 0.5
    mirrored[turned] = mirrored[turned][:, :, ::-1]
    assert augment.flip_probability("auto", lambda r: mirrored[r], rows, labels)[0] == augment.HFLIP
    assert augment.flip_probability(0.3, None, rows, labels) == (0.3, "as set")
    flat = augment.mirror_asymmetry(lambda r: mirrored[r], rows, labels)
    assert flat < 0.02 < 0.3 < augment.mirror_asymmetry(lambda r: images[r], rows, labels)


class Cache:
    def __init__(self, images):
        self.images, self.count, self.bad, self.side = images, len(images), set(), images.shape[1]

    def read(self, rows):
        return self.images[rows]


def image_data(pipe, hflip, trained=None):
    import pandas as pd

    from kit.pipelines.cnn import ImageData
    from kit.train.targets import infer

    images, labels = rendered_digits(side=36)
    target = infer("log_loss", pd.Series([str(k) for k in range(10)]), [str(k) for k in range(10)], "labels")
    recipe = trained or pipe.recipe_of(target, labels[:100], hflip)  # predict mode: the training run's
    return ImageData(np.arange(100), labels[:100], np.arange(100), target, pd.DataFrame(), Cache(images[:100]),
                     Cache(images[:100]), recipe)


def cnn_pipeline(tmp_path, **params):
    from kit.pipelines.cnn import CnnPipeline

    s = session(tmp_path, batch_size=64)
    return CnnPipeline(dataclasses.replace(s, params=CnnParams(image_size=32, batch_size=64, device="cpu", **params)))


def views_asked(pipe, data):
    """How many views of each test batch of 50 the model is asked about (and the rows the budget reserves)."""
    calls = []

    class Model(nn.Module):
        def forward(self, x):
            calls.append(x.shape[0])
            return torch.zeros(x.shape[0], 10)

    pipe.predict(Model(), data, CPU, batch_size=50)
    assert len(calls) % 2 == 0 and set(calls) == {50} and pipe.predict_rows(data) == 100 * len(calls) // 2
    return len(calls) // 2


@pytest.mark.parametrize("hflip, vflip, rotate90, tta, views", [
    (0.5, 0.0, False, True, 2), (0.0, 0.0, False, True, 1), (0.5, 0.5, True, True, 6), (0.0, 0.0, True, True, 4),
    (0.0, 0.5, False, True, 2), (0.5, 0.5, True, False, 1),
])
def test_prediction_asks_only_for_the_views_training_showed(tmp_path, hflip, vflip, rotate90, tta, views):
    """A model that never saw mirrored (upside-down, turned) images is not asked about them; tta off asks for none."""
    pipe = cnn_pipeline(tmp_path, vflip=vflip, rotate90=rotate90, tta=tta)
    data = image_data(pipe, hflip)
    assert views_asked(pipe, data) == views
    assert {k: data.recipe[k] for k in ("hflip", "vflip", "rotate90")} == {"hflip": hflip, "vflip": vflip, "rotate90": rotate90}


def test_predict_mode_follows_the_training_runs_flips_and_turns(tmp_path):
    """The inference kernel's views are those of the checkpoint's recipe, not of its own cell; a checkpoint
    older than vflip and rotate90 made neither."""
    pipe = cnn_pipeline(tmp_path, vflip=0.5, rotate90=True)
    older = {"hflip": 0.5, "prior": [0.1] * 10}
    assert pipe.augmentation(image_data(pipe, 0.5, trained=older)) == (0.5, 0.0, False)
    assert views_asked(pipe, image_data(pipe, 0.5, trained=older)) == 2
    turned = {**older, "hflip": 0.0, "vflip": 0.0, "rotate90": True}
    assert pipe.augmentation(image_data(pipe, 0.0, trained=turned)) == (0.0, 0.0, True)
    assert views_asked(cnn_pipeline(tmp_path), image_data(pipe, 0.0, trained=turned)) == 4


@pytest.mark.parametrize("values, message", [({"vflip": 1.5}, "vflip = 1.5 must be at most 1.0"),
                                             ({"rotate90": "yes"}, "rotate90 must be true or false, got 'yes'")])
def test_flips_and_turns_are_checked(values, message):
    with pytest.raises(KitError, match=message):
        check(CnnParams, values, "[params]")
    assert (CnnParams().vflip, CnnParams().rotate90) == (0.0, False)


def test_a_threshold_is_chosen_on_validation_rows_predicted_as_the_test_set_is(tmp_path):
    """Planet's F2 threshold was chosen on plain centre-crop validation rows and applied to the average over the
    test-time views, which is less extreme: validation of a thresholded multi-label target averages the views."""
    import pandas as pd

    from kit.pipelines.cnn import ImageData
    from kit.train.targets import Target

    pipe = cnn_pipeline(tmp_path)
    pipe.session = dataclasses.replace(pipe.session, spec=dataclasses.replace(pipe.session.spec, metric="f2_samples"))
    target = Target("tags", ("tags",), ("clear", "haze", "road"))
    images = np.random.default_rng(0).integers(0, 255, (4, 36, 36, 3), dtype=np.uint8)
    data = ImageData(np.arange(4), np.zeros((4, 3), np.float32), np.arange(4), target, pd.DataFrame(), Cache(images),
                     Cache(images), {"hflip": 0.5, "prior": [0.5] * 3})
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(3))
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        model(x)
        rows = pipe.objective(data).rows(pipe.objective(data)(model, {"image": x, "target": torch.zeros(4, 3)})["output"],
                                         {"target": torch.zeros(4, 3)})
        expected = (model(x).sigmoid() + model(x.flip(-1)).sigmoid()) / 2
    assert torch.allclose(rows["pred"], expected, atol=1e-5)
