"""The text template's parts: length buckets, padding, the token cache, the model folder's search, layer-wise
learning-rate decay, and the ordinal and several-value targets."""
import numpy as np
import pandas as pd
import pytest
import torch

from kit.data import text
from kit.data.text import TextBatches, Tokens
from kit.errors import KitError
from kit.runtime import paths
from kit.train import metrics, targets


def tokens_of(lengths) -> Tokens:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Tokens(np.arange(1, offsets[-1] + 1, dtype=np.int32), offsets)


def test_buckets_hold_every_row_once_and_pad_less_than_a_shuffle():
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 500, 2000)
    rows = np.arange(2000)
    batches = text.bucketed(lengths, rows, 16, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == rows.tolist()
    shuffled = np.random.default_rng(1).permutation(rows)
    plain = [shuffled[i : i + 16] for i in range(0, 2000, 16)]
    assert text.padding_share(lengths, batches) < 0.1 < 0.4 < text.padding_share(lengths, plain)
    again = text.bucketed(lengths, rows, 16, np.random.default_rng(2))
    assert [b.tolist() for b in again] != [b.tolist() for b in batches]  # another epoch, another order
    ordered = text.bucketed(lengths, rows, 16, None)  # prediction: longest first
    assert lengths[ordered[0]].min() >= lengths[ordered[-1]].max()


def test_a_batch_is_padded_to_its_longest_text_rounded_to_eight():
    tokens = tokens_of([3, 10, 5])
    ids = tokens.padded(np.array([0, 2]), pad_id=0)
    assert ids.shape == (2, 8) and ids[0].tolist() == [1, 2, 3, 0, 0, 0, 0, 0]
    batches = list(TextBatches(tokens, np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0], np.float32), 2, shuffle=False,
                               device=torch.device("cpu"), pad_id=0))
    assert [b["input_ids"].shape for b in batches] == [(2, 16), (1, 8)]  # longest first: rows 1 and 2, then 0
    assert batches[0]["index"].tolist() == [1, 2] and batches[0]["target"].tolist() == [2.0, 3.0]
    plain = list(TextBatches(tokens, np.array([0, 1, 2]), None, 2, shuffle=False, device=torch.device("cpu"), pad_id=0,
                             bucket=False, max_length=32))
    assert [b["input_ids"].shape for b in plain] == [(2, 32), (1, 32)]


def test_ranks_get_as_many_whole_batches():
    tokens = tokens_of(np.random.default_rng(0).integers(5, 50, 103))
    seen = []
    for rank in (0, 1):
        loader = TextBatches(tokens, np.arange(103), None, 8, shuffle=True, device=torch.device("cpu"), pad_id=0, seed=3,
                             shard=(rank, 2))
        plan = loader.plan()
        assert len(plan) == len(loader) == 6  # 13 batches: the odd one is dropped so the ranks step together
        seen += [r for b in plan for r in b.tolist()]
    assert len(seen) == len(set(seen))


def test_ddp_ranks_step_on_batches_of_about_one_length():
    """Each DDP step waits for the rank with the longest batch: batches dealt one by one from a shuffled list
    paired a long batch with a short one (19-30% of GPU time lost on essay lengths). Neighbours of one sorted
    chunk go to the ranks together."""
    lengths = np.random.default_rng(0).lognormal(5.5, 0.5, 4000).astype(int).clip(8, 1024)
    tokens = tokens_of(lengths)
    plans = [TextBatches(tokens, np.arange(4000), None, 16, shuffle=True, device=torch.device("cpu"), pad_id=0, seed=5,
                         shard=(rank, 2)).plan() for rank in (0, 1)]
    assert len(plans[0]) == len(plans[1])

    def lost(plans) -> float:  # the shorter rank's idle share of the steps
        widths = np.array([[text.padded_width(int(lengths[b].max())) for b in plan] for plan in plans])  # (2, steps)
        return float((widths.max(0) - widths.min(0)).sum() / widths.max(0).sum())

    dealt = text.bucketed(lengths, np.arange(4000), 16, np.random.default_rng(5), full_only=True)  # one by one
    assert lost(plans) < 0.15 < 0.2 < lost([dealt[0::2], dealt[1::2]]), (lost(plans), lost([dealt[0::2], dealt[1::2]]))
    rows = np.concatenate([np.concatenate(p) for p in plans])
    assert len(rows) == len(set(rows.tolist())) and all(len(b) == 16 for p in plans for b in p)


def test_tokens_are_cached_by_tokenizer_texts_and_max_length(tmp_path):
    calls = []

    def tokenizer(texts, truncation, max_length):
        calls.append(len(texts))
        return {"input_ids": [[101, *range(len(t.split()))][:max_length] for t in texts]}

    texts = ["a b c", "d e"]
    first = text.tokenize(tokenizer, texts, 8, "key", tmp_path)
    again = text.tokenize(tokenizer, texts, 8, "key", tmp_path)
    assert calls == [2] and again.lengths.tolist() == first.lengths.tolist() == [4, 3]
    text.tokenize(tokenizer, texts, 3, "key", tmp_path)
    text.tokenize(tokenizer, texts, 8, "other tokenizer", tmp_path)
    assert calls == [2, 2, 2]


@pytest.mark.parametrize("layout", ["dataset", "model", "nested"])
def test_the_model_folder_is_found_by_name_in_kaggles_layouts(tmp_path, monkeypatch, layout):
    root = tmp_path / "input"
    folder = {"dataset": root / "deberta-v3-small", "model": root / "models/me/deberta-v3-small/transformers/default/2",
              "nested": root / "datasets/me/deberta-v3-small/weights/deberta"}[layout]
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    if layout == "model":  # older versions beside it: the newest is taken (10 after 9, not after 1)
        folder = folder.parent / "10"
        for version in ("1", "9", "10"):
            (folder.parent / version).mkdir(exist_ok=True)
            (folder.parent / version / "config.json").write_text("{}")
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(root))
    assert paths.find_model("deberta-v3-small") == folder
    assert paths.find_model(str(folder)) == folder


def test_a_model_folder_that_is_missing_or_has_no_config_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_KAGGLE_INPUT", str(tmp_path))
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(KitError, match="model_path 'roberta' not found: looked for roberta and under"):
        paths.find_model("roberta")
    with pytest.raises(KitError, match="empty-model holds no config.json; point model_path at the Hugging Face"):
        paths.find_model("empty-model")


def test_layer_wise_decay_scales_lower_layers_down(tmp_path):
    from kit.models.text import TextModel
    from kit.smoke.text import build_tiny_encoder
    from kit.train.step import make_optimizer

    folder = build_tiny_encoder(["one two three four"] * 4, tmp_path / "m", layers=3)
    model = TextModel(folder, outputs=1, pad_id=0)
    optimizer = make_optimizer(model, 1e-3, 0.01, layer_decay=0.5)
    scale = {name: g["lr_scale"] for g in optimizer.param_groups for name, p in model.named_parameters()
             if any(p is q for q in g["params"])}
    assert scale["head.weight"] == 1.0
    assert scale["backbone.encoder.layer.2.output.dense.weight"] == 0.5
    assert scale["backbone.encoder.layer.0.output.dense.weight"] == 0.125
    assert scale["backbone.embeddings.word_embeddings.weight"] == 0.0625
    assert len(make_optimizer(model, 1e-3, 0.01).param_groups) == 2  # 1.0: timm's plain groups (decay, no decay)


def test_qwk_scores_are_regressed_and_written_as_whole_scores_in_the_training_range():
    target = targets.infer("qwk", pd.Series([1, 2, 2, 3, 6]), ["score"], "train.csv")
    assert target.kind == "ordinal" and target.classes == (1, 2, 3, 4, 5, 6) and target.outputs == 1
    assert not target.classification and not target.multilabel
    written = targets.to_columns(target, np.array([[0.2], [2.5], [3.49], [7.9]]))["score"]
    assert written.tolist() == [1, 2, 3, 6] and written.dtype == np.int64
    assert metrics.score("qwk", np.full((4, 1), 3.3), np.array([1.0, 2, 5, 6])) == 0.0  # the mean: kappa 0


def test_several_value_columns_are_one_target_scored_by_the_mean_of_their_scores():
    table = pd.DataFrame({"text": ["a", "b", "c"], "cohesion": [3.0, 3.5, 2.5], "syntax": [2.0, 4.0, 3.0]})
    target = targets.multi("rmse", table, ["cohesion", "syntax"], "target", "train.csv")
    assert target.kind == "values" and target.outputs == 2
    y = targets.encode(target, table)
    assert y.shape == (3, 2) and targets.prior(target, y).tolist() == [3.0, 3.0]
    pred = y + np.array([[0.5, 0.0]] * 3, np.float32)
    assert metrics.score("rmse", pred, y) == pytest.approx(0.25)  # MCRMSE: (0.5 + 0) / 2


def test_a_model_folder_saved_in_half_precision_trains_in_fp32_under_the_scaler(tmp_path):
    from transformers import AutoModel

    from kit.models.text import TextModel
    from kit.runtime.precision import Precision
    from kit.smoke.text import build_tiny_encoder
    from kit.train.objectives import Regression
    from kit.train.step import make_optimizer, train_step

    folder = build_tiny_encoder(["one two three four five"] * 4, tmp_path / "m")
    AutoModel.from_pretrained(folder).half().save_pretrained(folder)  # as a dataset of halved weights holds it
    for pretrained in (True, False):  # training's build, and prediction's from the config alone
        model = TextModel(folder, outputs=1, pad_id=0, pretrained=pretrained)
        assert {p.dtype for p in model.parameters()} == {torch.float32}
    fp16 = Precision("fp16", "cpu")
    batch = {"input_ids": torch.tensor([[2, 5, 6, 3], [2, 7, 3, 0]]), "target": torch.tensor([1.0, 2.0])}
    loss = train_step(model, Regression(1.5, 0.5, "rmse", input_key="input_ids"), batch,
                      make_optimizer(model, 1e-3, 0.0), fp16.grad_scaler(), fp16, 1.0)
    assert torch.isfinite(loss)


def test_a_model_folder_without_weights_or_with_a_broken_config_is_one_line(tmp_path):
    from kit.models.text import positions
    from kit.smoke.text import build_tiny_encoder

    folder = build_tiny_encoder(["one two three"] * 4, tmp_path / "m")
    (folder / "config.json").write_text('{"model_type": "no-such-model"}')
    with pytest.raises(KitError, match="its config.json does not load"):
        positions(folder)


def test_ddp_ranks_take_full_batches_so_accumulation_keeps_them_in_step():
    tokens = tokens_of(np.random.default_rng(0).integers(5, 50, 100))
    for rank in (0, 1):
        loader = TextBatches(tokens, np.arange(100), None, 32, shuffle=True, device=torch.device("cpu"), pad_id=0, seed=3,
                             shard=(rank, 2))
        assert [len(b) for b in loader.plan()] == [32] and len(loader) == 1  # 3 full batches and one of 4: one each


def test_batches_are_not_padded_past_max_length():
    tokens = tokens_of([510, 3])
    assert tokens.padded(np.array([0, 1]), pad_id=0, cap=510).shape == (2, 510)  # not rounded up to 512
    assert tokens.padded(np.array([1]), pad_id=0, cap=510).shape == (1, 8)


def test_regression_keeps_its_statistics_on_the_device_it_met():
    from kit.train.objectives import Regression

    task = Regression([1.0, 2.0], [0.5, 0.0], "rmse")
    out = task.predict(torch.zeros(3, 2))
    assert out.tolist() == [[1.0, 2.0]] * 3  # a constant column keeps its values (std 0: no scaling)
    assert task.mean is task._on(torch.device("cpu"))[0]  # moved once, not copied at every call


def test_the_model_folders_fingerprint_follows_its_weights_tokenizer_and_config(tmp_path):
    import shutil

    from kit.models.text import fingerprint
    from kit.smoke.text import build_tiny_encoder

    folder = build_tiny_encoder(["one two three four"] * 4, tmp_path / "a", seed=0)
    first = fingerprint(folder)
    assert fingerprint(shutil.copytree(folder, tmp_path / "copy")) == first  # where it is mounted does not count
    assert fingerprint(build_tiny_encoder(["one two three four"] * 4, tmp_path / "b", seed=1)) != first  # other weights
    assert fingerprint(build_tiny_encoder(["five six seven"] * 4, tmp_path / "c", seed=0)) != first  # another vocabulary


def test_a_few_empty_training_texts_are_left_out_with_one_warning_and_more_are_one_line():
    from pathlib import Path

    from kit.pipelines.text import without_empty_texts

    phrases = pd.DataFrame({"PhraseId": range(1, 201), "Phrase": [f"phrase {k}" for k in range(200)]})
    phrases.loc[[3, 150], "Phrase"] = [np.nan, "  "]  # read from the TSV as NaN, and a blank one: 2 of 200, 1%
    said = []
    kept = without_empty_texts(phrases, ["Phrase"], Path("train.tsv"), said.append)
    assert kept["PhraseId"].tolist() == [k for k in range(1, 201) if k not in (4, 151)]
    assert said == ["train.tsv: the text is empty in row 5 (columns Phrase; 2 such rows, 1.0% of 200); they are left out "
                    "of training"]
    phrases.loc[7, "Phrase"] = ""  # 3 of 200
    with pytest.raises(KitError, match=r"^train.tsv: the text is empty in row 5 \(columns Phrase; 3 such rows, 1.5% of 200\); "
                                       r"drop those rows or fill them \(up to 1% of the rows are left out with a warning\)$"):
        without_empty_texts(phrases, ["Phrase"], Path("train.tsv"), said.append)
    full = phrases.fillna("x").replace({"  ": "y", "": "z"})
    assert without_empty_texts(full, ["Phrase"], Path("train.tsv"), said.append) is full and len(said) == 1
