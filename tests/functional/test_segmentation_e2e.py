"""The segmentation template end to end: each shipped config's smoke (its Kaggle layout, the built notebook on a
real kernel) learns clearly more than empty masks (or the mean page) and writes a submission a grader accepts,
whose masks score on the smoke's hidden answers."""
import numpy as np
import pandas as pd
import pytest
import wheels
from graders import rle_decode

from kit import config, smoke
from kit.data import rle
from kit.smoke import segmentation as smoke_segmentation
from kit.train import mask_metrics

pytestmark = pytest.mark.e2e
# fewer epochs than `make smoke`'s 8 (CI time): each is where its config's smoke already clears the margins below
EPOCHS = {"tgs-salt-identification-challenge": 2, "denoising-dirty-documents": 3, "severstal-steel-defect-detection": 4}
CONFIGS = tuple(EPOCHS)


@pytest.fixture(scope="session")
def smp_index(tmp_path_factory):
    """pip's settings for a local index holding smp's wheel (made from the installed package): the builds resolve
    [kernel] packages without the network."""
    index = tmp_path_factory.mktemp("smp-index")
    wheels.wheel_of_installed("segmentation-models-pytorch", index)
    return wheels.local_index_env(index)


@pytest.fixture(scope="session")
def smokes(tmp_path_factory, smp_index):
    """Each config's smoke run, once for the session (the first test to ask runs it)."""
    done = {}

    def run(comp: str) -> smoke.SmokeResult:
        if comp not in done:
            with pytest.MonkeyPatch.context() as mp:
                for key, value in smp_index.items():
                    mp.setenv(key, value)
                done[comp] = smoke.run(comp, root=tmp_path_factory.mktemp(comp), overrides={"epochs": EPOCHS[comp]})
        return done[comp]

    return run


@pytest.mark.parametrize("comp", CONFIGS)
def test_each_config_learns_and_writes_what_its_grader_reads(smokes, comp):
    result = smokes(comp)
    spec = config.load(comp).spec
    answers = smoke_segmentation.draw(spec, seed=0).test
    sub = pd.read_csv(result.submission, dtype={spec.id_column: str}, keep_default_na=False)
    if spec.metric == "rmse":  # out of fold and on the test pages: well below the mean page
        assert result.score < 0.75 * result.baseline, (result.score, result.baseline)
        truth = {f"{n}_{r + 1}_{c + 1}": v / 255 for n, (_, page) in answers.items() for (r, c), v in np.ndenumerate(page)}
        values = sub[spec.target_column].to_numpy(float)
        assert values.min() >= 0 and values.max() <= 1
        gap = values - sub[spec.id_column].map(truth).to_numpy(float)
        mean = np.mean([v for v in truth.values()])
        assert np.sqrt(np.mean(gap**2)) < 0.75 * np.sqrt(np.mean((np.array(list(truth.values())) - mean) ** 2))
        return
    assert result.score > result.baseline + 0.05, (result.score, result.baseline)
    scores, empty = [], []
    for row in sub.itertuples(index=False):
        name, code = row
        image, klass = (name, 0) if name in answers else (name.rsplit("_", 1)[0], int(name.rsplit("_", 1)[1]) - 1)
        truth = answers[image][1]
        truth = truth if truth.ndim == 2 else truth[klass]
        mask = rle_decode(code, *truth.shape)  # the grader's decoder accepts it
        assert rle.encode(mask) == code  # and it is the mask's one code: sorted, apart, inside the image
        scores.append(mask_metrics.per_pair(spec.metric, mask.sum(), (mask & truth).sum(), truth.sum(), truth.size))
        empty.append(mask_metrics.per_pair(spec.metric, 0, 0, truth.sum(), truth.size))
    assert np.mean(scores) > np.mean(empty) + 0.05, (np.mean(scores), np.mean(empty))
