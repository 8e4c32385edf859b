"""The fallback submission (kit.run.fallback): a run where no model can predict still leaves a valid
submission.csv, the training labels' own answer, under a banner and a `fallback` line in kit.log; with
fallback = "none" it stops in one line and writes none.

The real case: MLE-bench's prepare.py for invasive-species-monitoring writes train.7z and test.7z holding one
empty folder each and no image (mle-bench issue #122), run through the built notebook as `make smoke` runs it."""
import numpy as np
import pandas as pd
import pytest
import torch

from kit import config, smoke
from kit.errors import KitError
from kit.pipelines import create_pipeline
from kit.run import start, train_folds, write_submission
from kit.smoke import gallery
from kit.smoke.gallery import photos

pytestmark = pytest.mark.e2e
SLUG = "invasive-species-monitoring"


@pytest.fixture
def as_prepared(monkeypatch):
    """invasive-species-monitoring's files as MLE-bench writes them: no image in its archives."""
    monkeypatch.setitem(gallery.MAKERS, SLUG, photos.invasive_species_as_prepared)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def test_no_training_images_give_the_prior_its_grader_accepts(as_prepared, tmp_path):
    result = smoke.run(SLUG, root=tmp_path)  # the sample's ids and columns, and the grader's checks (auroc)
    labels = pd.read_csv(result.input_dir / "train_labels.csv.zip")
    sub = pd.read_csv(result.submission)
    assert np.allclose(sub["invasive"], labels["invasive"].mean())  # P(invasive) of the training labels, every row
    log = (result.submission.parent / "kit.log").read_text()
    assert "train.7z holds no files" in log
    assert (f"fallback       submission.csv holds the class prior, {labels['invasive'].mean():.4g} for 1 in each of its "
            f"{len(sub)} rows") in log
    assert "# FALLBACK SUBMISSION: no model predicted it" in result.executed.read_text()  # in the notebook's output


def test_fallback_none_writes_no_submission(as_prepared, tmp_path):
    with pytest.raises(KitError, match="train.7z holds no files"):
        smoke.run(SLUG, root=tmp_path, overrides={"fallback": "none"})
    assert not (tmp_path / "kaggle" / "working" / "submission.csv").exists()


def run_dogs(tmp_path, dog_breed_data, **params):
    """The notebook's calls in this process, on the dog-breed smoke data, with a model that fails at its first
    forward: no fold reaches a checkpoint."""
    cfg, folder = dog_breed_data
    values = {**cfg.parameters(smoke=True), "image_size": 32, "epochs": 2, "folds": 2, "data_dir": str(folder),
              "output_dir": str(tmp_path / "out"), **params}
    session = start("cnn", values)
    pipe = create_pipeline(session)
    data = pipe.load()
    pipe.model = lambda data, pretrained=True, fit_rows=None: Failing()
    cv = train_folds(session, pipe, data)
    return session, cv, write_submission(session, pipe, data), folder


class Failing(torch.nn.Linear):
    def __init__(self):
        super().__init__(3, 3)

    def forward(self, x):
        raise RuntimeError("a bug in every fold")


def test_every_fold_failing_before_a_checkpoint_gives_the_prior(tmp_path, dog_breed_data):
    session, cv, sub, folder = run_dogs(tmp_path, dog_breed_data)
    assert cv.finished == [] and cv.error == "RuntimeError: a bug in every fold"
    labels = pd.read_csv(folder / config.load("dog-breed").spec.train)
    share = labels["breed"].value_counts(normalize=True)
    assert np.allclose(sub[share.index].to_numpy(), share.to_numpy()[None, :])  # each breed's share, in every row
    written = pd.read_csv(session.output_dir / "submission.csv", dtype={"id": str})
    assert written["id"].tolist() == pd.read_csv(folder / "sample_submission.csv", dtype={"id": str})["id"].tolist()
    log = (session.output_dir / "kit.log").read_text()
    assert "training failed before any fold had a checkpoint" in log and "fallback       submission.csv holds" in log


def test_every_fold_failing_under_fallback_none_is_raised(tmp_path, dog_breed_data):
    with pytest.raises(RuntimeError, match="a bug in every fold"):
        run_dogs(tmp_path, dog_breed_data, fallback="none")
    assert not (tmp_path / "out" / "submission.csv").exists()


@pytest.mark.parametrize("slug", ["vinbigdata-chest-xray-abnormalities-detection", "tweet-sentiment-extraction"])
def test_a_template_without_a_table_of_labels_submits_the_sample_where_its_data_cannot_be_read(tmp_path, slug):
    """Boxes, masks, spans and texts have no prior of values: where the data step fails (here no training table;
    for spans also no model folder attached), the competition's own sample is written cell for cell under the
    banner, and its grader reads it. It was no submission at all: the data's error stood."""
    from kit.run.fallback import load_data
    from kit.smoke.gallery import graders

    cfg = config.load(slug)
    folder = tmp_path / "data"
    smoke.make_dataset(cfg.spec, folder, seed=0)
    (folder / cfg.spec.train).unlink()
    session = start(cfg.spec.template, {**cfg.parameters(smoke=True), "data_dir": str(folder),
                                        "output_dir": str(tmp_path / "out")})
    pipe = create_pipeline(session)
    data = load_data(session, pipe)
    train_folds(session, pipe, data)
    write_submission(session, pipe, data)
    written = pd.read_csv(tmp_path / "out" / "submission.csv", keep_default_na=False)
    sample = pd.read_csv(folder / cfg.spec.sample_submission, keep_default_na=False)
    assert written.astype(str).equals(sample.astype(str))
    assert "submission.csv holds the sample submission's own cells" in (tmp_path / "out" / "kit.log").read_text()
    graders.check(slug, tmp_path / "out" / "submission.csv", folder / cfg.spec.sample_submission)
