"""Image to image (denoising-dirty-documents): the out-of-fold score is the grader's root mean squared error over
every pixel row of every page, whatever the pages' sizes on their padded canvases, and its baseline is the same
error of a page of the training mean."""
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from kit.pipelines import segmentation_data
from kit.train.segmentation import Segmentation


def pixel_table(pages: dict[str, np.ndarray]) -> pd.DataFrame:
    """The grader's rows: id = <image>_<row>_<col>, 1-indexed, row-major, one value per pixel."""
    return pd.DataFrame([{"id": f"{n}_{r + 1}_{c + 1}", "value": v} for n, page in pages.items()
                         for (r, c), v in np.ndenumerate(page)])


def test_page_rmse_is_the_graders_over_every_pixel():
    rng = np.random.default_rng(0)
    sizes = [(5, 7), (9, 4), (9, 7)]  # unequal pages: a mean of per-page errors would weigh the small one too much
    canvas = np.zeros((len(sizes), 1, 9, 7)), np.full((len(sizes), 1, 9, 7), 0.5)  # padding differs from the truth
    pred, truth = canvas
    for i, (h, w) in enumerate(sizes):
        pred[i, 0, :h, :w] = rng.random((h, w))
        truth[i, 0, :h, :w] = rng.random((h, w)) ** 3  # skewed, as pages are (mostly paper)
    batch = {"target": torch.tensor(truth), "size": torch.tensor(sizes)}
    rows = {k: v.numpy() for k, v in Segmentation("image", 8, 0.25, []).rows(torch.tensor(pred), batch).items()}
    mean = 0.3
    data = SimpleNamespace(recipe={"kind": "image", "prior": [mean]})
    judged = segmentation_data.judge("rmse", data, rows)

    answers = pixel_table({str(i): truth[i, 0, :h, :w] for i, (h, w) in enumerate(sizes)})
    submission = pixel_table({str(i): pred[i, 0, :h, :w] for i, (h, w) in enumerate(sizes)})
    merged = answers.sort_values("id").merge(submission.sort_values("id"), on="id", suffixes=("_true", "_pred"))
    assert len(merged) == sum(h * w for h, w in sizes)
    gap = merged.value_true - merged.value_pred
    assert judged.score == pytest.approx(np.sqrt(np.mean(gap**2)), rel=1e-6)  # predictions pass through float32
    assert judged.baseline == pytest.approx(np.sqrt(np.mean((merged.value_true - mean) ** 2)), rel=1e-6)
