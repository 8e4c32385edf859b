"""kit init's drafts for competitions no shipped config covers train: each is drafted from its folder as MLE-bench
writes it (tests/unseen.py, tests/layouts.py) and run as `make smoke` runs a config (data made in the draft's
layout, the notebook through papermill on the CPU, the submission checked against the sample): one draft at
least of every template family (cnn, text, tabular, sequence, segmentation)."""
import layouts
import pytest
import unseen

from kit import smoke
from kit.build import init

pytestmark = pytest.mark.e2e


# leaf-classification and cassava left this list when their configs shipped: test_init_shipped.py shows kit init drafts
# those configs from their gallery data, whose runs test_gallery_e2e.py makes (a minute each here, saved)
@pytest.mark.parametrize("maker, slug, metric, template", [
    (unseen.siim_isic, "siim-isic-melanoma-classification", "auc", ""),  # images in jpeg/train/, folds by patient
    (unseen.us_patent, "us-patent-phrase-to-phrase-matching", "pearson", ""),  # short texts, read by the text template
    # the other templates' readings: tables (training-only columns dropped), steps (score_mask guessed), masks
    (unseen.siim_isic, "siim-isic-melanoma-classification", "auc", "tabular"),
    (unseen.ventilator, "ventilator-pressure-prediction", "mae", ""),
    (layouts.carvana, "carvana-image-masking-challenge", "dice", ""),
])
def test_a_draft_for_an_unseen_competition_runs_its_smoke(tmp_path, monkeypatch, maker, slug, metric, template):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / f"{slug}.toml"
    path.write_text(init.draft(maker(tmp_path / "data" / slug), metric=metric, template=template))
    # two epochs: that the draft trains is the point, not its score (the shipped sequence configs' smoke runs 12)
    result = smoke.run(str(path), root=tmp_path / "run", overrides={"epochs": 2})
    assert result.folds == 2 and result.metric == metric  # both folds trained: no fallback
