"""The soft target (issue 38, hms): experts' votes as a distribution a row, learnt by KL divergence on log-softmax."""
import numpy as np
import pandas as pd
import pytest
import torch

from kit.errors import KitError
from kit.train import kinds, metrics, targets
from kit.train.objectives import SoftLabels

VOTES = ["seizure_vote", "lpd_vote", "gpd_vote", "lrda_vote", "grda_vote", "other_vote"]


def votes_table(rows: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    votes = rng.integers(0, 5, (rows, 6))
    votes[votes.sum(1) == 0, 5] = 3
    return pd.DataFrame(votes, columns=VOTES)


def test_vote_counts_under_kl_div_are_a_soft_target_of_distributions_and_its_prior_the_mean():
    table = votes_table()
    target = targets.multi("kl_div", table, VOTES, "", "train.csv")
    assert target.kind == "soft" and target.outputs == 6 and not target.classification and not target.multilabel
    y = targets.encode(target, table)
    expected = table.to_numpy(float) / table.to_numpy(float).sum(1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    prior = targets.prior(target, y, "kl_div")
    np.testing.assert_allclose(prior, expected.mean(0), rtol=1e-6)
    # the mean distribution is KL's best constant: better than the uniform row and than the votes' pooled share
    pooled = table.to_numpy(float).sum(0) / table.to_numpy(float).sum()
    best = metrics.score("kl_div", np.tile(prior, (len(y), 1)), y)
    assert best < metrics.score("kl_div", np.full_like(y, 1 / 6), y)
    assert best <= metrics.score("kl_div", np.tile(pooled, (len(y), 1)), y) + 1e-12
    cols = kinds.to_columns(target, np.tile(prior, (3, 1)))
    assert list(cols) == VOTES and np.allclose(sum(cols.values()), 1.0)


def test_a_row_without_votes_or_a_negative_vote_is_one_line():
    table = votes_table()
    table.loc[4, VOTES] = 0
    with pytest.raises(KitError, match="row 6 has no votes"):
        targets.multi("kl_div", table, VOTES, "", "train.csv")
    table = votes_table()
    table.loc[2, "gpd_vote"] = -1
    with pytest.raises(KitError, match="column 'gpd_vote': -1 .row 4. is not a vote count"):
        targets.multi("kl_div", table, VOTES, "", "train.csv")


def test_the_soft_loss_is_the_metric_and_its_gradient_moves_towards_the_votes():
    rng = np.random.default_rng(1)
    y = rng.dirichlet(np.ones(6) * 0.5, 32).astype(np.float32)
    y[y < 0.05] = 0  # classes of no vote, as most rows have
    y /= y.sum(1, keepdims=True)
    logits = torch.zeros(32, 6, requires_grad=True)
    objective = SoftLabels(input_key="x")
    out = objective(lambda x: x, {"x": logits, "target": torch.from_numpy(y)})
    pred = objective.predict(out["output"]).detach().numpy()
    assert out["loss"].item() == pytest.approx(metrics.score("kl_div", pred, y), rel=1e-5)
    out["loss"].backward()
    np.testing.assert_allclose(-logits.grad.numpy() * 32, y - 1 / 6, atol=1e-5)  # softmax - target, pointed at the votes
