"""The imputation template's rooms: the Levenshtein metric against MLE-bench's grader, the training file streamed
from its zip, the removed word drawn as prepare.py draws it, the gaps and the mask a tokenizer's offsets place, the
decision to insert, the tiny masked LM built locally and the gallery's files and grader checks."""
import io
import itertools
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch

from kit.data import gaps
from kit.errors import KitError
from kit.metric_records import metric_misfit, metric_record
from kit.models.gaps import GapModel
from kit.smoke.gallery import graders, sentences
from kit.smoke.imputation import build_tiny_masked_lm
from kit.train import imputation, levenshtein, metrics


def full_table(a: str, b: str) -> int:
    """The textbook Levenshtein programme, the whole table: what the trimmed one must agree with."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
        table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1][-1]


def test_the_distance_is_levenshteins():
    known = {("kitten", "sitting"): 3, ("flaw", "lawn"): 2, ("", "abc"): 3, ("abc", ""): 3, ("same", "same"): 0,
             ("the dog barks .", "the dog . barks"): 4, ("a b c", "a c"): 2, ("ab", "ba"): 2}
    for (a, b), d in known.items():
        assert levenshtein.distance(a, b) == d == full_table(a, b), (a, b)
    rng = np.random.default_rng(0)
    for _ in range(300):  # shared starts and ends, where the trimming works
        core = ["".join(rng.choice(list("abc "), int(rng.integers(0, 7)))) for _ in range(4)]
        a, b = core[0] + core[1] + core[3], core[0] + core[2] + core[3]
        assert levenshtein.distance(a, b) == full_table(a, b), (a, b)


def test_the_metric_is_the_graders_mean_distance_lower_is_better():
    """grade.py sorts both by id and takes the mean distance of (truth, submission) pairs."""
    answers = sentences.answers(0)
    sub = answers.assign(sentence=[s.replace("the", "a", 1) if i % 3 else s for i, s in enumerate(answers["sentence"])])
    sub = sub.sample(frac=1, random_state=0)  # any order
    ordered = sub.sort_values("id")
    graded = np.mean([levenshtein.distance(t, p) for t, p in zip(answers["sentence"], ordered["sentence"])])
    assert levenshtein.mean_distance(ordered["sentence"].tolist(), answers["sentence"].tolist()) == pytest.approx(graded)
    assert graded == pytest.approx(3 * np.mean(np.arange(len(answers)) % 3 > 0))  # "the" -> "a": 3 edits
    record = metric_record("levenshtein")
    assert not record.greater_is_better and record.family == "edit"
    rows = np.array([[1.0, 5.0], [0.0, 4.0], [2.0, 6.0]])
    assert metrics.score("levenshtein", rows, np.arange(3)) == pytest.approx(1.0)
    assert metric_misfit("imputation", "levenshtein") == ""
    assert "does not score restored sentences" in metric_misfit("imputation", "accuracy")
    assert "only the imputation template" in metric_misfit("text", "levenshtein")


def test_the_training_file_streams_from_its_zip_and_a_sample_is_drawn_at_random(tmp_path):
    lines = [f"w{i} is a sentence ." if i % 10 else "two words" for i in range(20000)]
    with zipfile.ZipFile(tmp_path / "train_v2.txt.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("train_v2.txt", "\n".join(lines) + "\n")
    said = []
    every = gaps.sample_lines(tmp_path, "train_v2.txt", 0, 0, said.append)
    assert len(every) == 18000 and "two words" not in every  # a sentence of two words has no inner word to remove
    some = gaps.sample_lines(tmp_path, "train_v2.txt", 1000, 0, said.append)
    assert len(some) == 1000 and set(some) <= set(every)
    numbers = [int(s.split()[0][1:]) for s in some]
    assert numbers == sorted(numbers) and numbers[-1] > 15000  # in the file's order, from all of it
    assert "1000 training sentences of" in said[-1] and "train_v2.txt.zip" in said[-1]
    assert gaps.sample_lines(tmp_path, "train_v2.txt", 1000, 1, said.append) != some  # another seed, another draw
    with pytest.raises(KitError, match="'test.txt' not found"):
        gaps.sample_lines(tmp_path, "test.txt", 10, 0)


def test_the_removed_word_is_never_the_first_or_the_last():
    words = np.array([3, 4, 10] * 2000)
    at = gaps.draw(words, np.random.default_rng(0))
    assert (at >= 1).all() and (at <= words - 2).all()
    assert set(at[words == 3]) == {1} and set(at[words == 10]) == set(range(1, 9))
    assert gaps.removed(["a", "b", "c", "d"], 2) == ["a", "b", "d"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlm")
    train, _, _ = sentences.split(0, 300)
    return build_tiny_masked_lm(train, folder)  # "unusualword" is not a word of it: several tokens


@pytest.fixture(scope="module")
def coder(tiny):
    from kit.pipelines.text import load_tokenizer

    return gaps.GapCoder(load_tokenizer(tiny), 32)


def test_each_gap_is_read_at_the_token_opening_the_next_word_and_the_mask_goes_in_its_gap(coder):
    tok = coder.tokenizer
    words = ["the", "unusualword", "barks", "."]  # a word of several tokens (not in the vocabulary whole)
    batch = coder.gaps([words, ["the", "dog", "."]])
    ids = batch["input_ids"][0].tolist()
    assert batch["gaps"].shape == (2, 3) and batch["gap_ok"][1].tolist() == [True, True, False]
    for j, word in enumerate(words[1:], 1):  # the gap before word j: the first token of word j
        t = int(batch["gaps"][0, j - 1])
        assert tok.convert_ids_to_tokens(ids[t]) == tok.tokenize(word)[0]
    masked = coder.masked([words], np.array([2]))
    at = int(masked["mask_at"][0])
    assert masked["mask_ids"][0, at] == tok.mask_token_id
    assert tok.convert_ids_to_tokens(int(masked["mask_ids"][0, at + 1])) == "barks"
    ids = coder.word_ids(["dog", "unusualword", ",", ""])
    assert ids[0] == tok.convert_tokens_to_ids("dog") and ids[2] >= 0 and (ids[[1, 3]] == gaps.IGNORE).all()
    assert coder.candidates[ids[0]] and not coder.candidates[tok.mask_token_id]
    assert coder.words[ids[0]] == "dog"


def test_a_gap_past_max_length_is_not_read_nor_learnt(coder, tiny):
    long = ["the"] + ["dog"] * 40 + ["."]
    batches = gaps.GapBatches(coder, [long], np.array([0]), np.array([38]), 1, False, torch.device("cpu"))
    batch = batches.fields(np.array([0]))
    assert not batch["gap_ok"][0, 37] and batch["gap_target"][0] == gaps.IGNORE and batch["word"][0] == gaps.IGNORE
    model = GapModel(tiny).eval()
    objective = imputation.GapObjective(coder, [long], np.array([38]), 4.0)
    out = objective(model, batch)
    assert torch.isfinite(out["loss"]) and out["output"].shape == (1, imputation.GUESS)


def test_a_word_goes_in_only_where_it_saves_distance_in_expectation():
    mean = 4.0
    assert imputation.gain(1.0, 1.0, 4, mean) == pytest.approx(mean + 1)  # right gap, right word: the whole word saved
    assert imputation.gain(1.0, 0.0, 4, mean) > 0  # a wrong word at the right gap costs less than the missing one
    assert imputation.gain(0.0, 1.0, 4, mean) < 0  # at a wrong gap both words count
    assert imputation.gain(0.65, 0.5, 4, mean) > 0 > imputation.gain(0.6, 0.5, 4, mean)  # 8 p - 5 at q = 0.5
    words = ["<pad>", "dog", "cat"]
    guesses = np.array([[1, 0.9, 1, 0.9], [2, 0.1, 2, 0.5]])
    assert imputation.restore([["the", "barks", "."], ["a", "b", "c"]], guesses, words, mean) == ["the dog barks .", "a b c"]


def test_the_objective_learns_and_validation_scores_restored_sentences(coder, tiny):
    train, _, _ = sentences.split(0, 300)
    words = [s.split() for s in train]
    gone = gaps.draw(np.array([len(w) for w in words]), np.random.default_rng(0))
    torch.manual_seed(0)
    model = GapModel(tiny)
    objective = imputation.GapObjective(coder, words, gone, imputation.mean_word(words))
    loader = gaps.GapBatches(coder, words, np.arange(len(words)), None, 32, True, torch.device("cpu"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(8):
        for batch in loader:
            loss = objective(model, batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:10])
    model.eval()
    check = gaps.GapBatches(coder, words, np.arange(64), gone, 32, False, torch.device("cpu"))
    rows = [objective.rows(objective(model, b)["output"], b) for b in check]
    pred = torch.cat([r["pred"] for r in rows]).numpy()
    order = torch.cat([r["target"] for r in rows]).numpy()  # longest first
    assert sorted(order) == list(range(64))
    truth = [" ".join(words[r]) for r in order]
    as_is = [levenshtein.distance(" ".join(gaps.removed(words[r], int(gone[r]))), t) for r, t in zip(order, truth)]
    assert pred[:, 1].tolist() == as_is  # the damaged sentence's own distance: the missing word and a space
    assert pred[:, 0].mean() < pred[:, 1].mean()  # a few epochs restore some


def test_the_gallery_files_are_prepares_and_its_checks_the_graders(tmp_path):
    sentences.billion_word(tmp_path, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_v2.txt.zip", "train_v2.txt.zip"]
    with zipfile.ZipFile(tmp_path / "test_v2.txt.zip") as z:
        assert z.namelist() == ["test_v2.txt"]
        text = z.read("test_v2.txt").decode()
    assert text.splitlines()[0] == '"id","sentence"' and '""' in text  # quotes doubled inside the quoted cell
    test = pd.read_csv(io.StringIO(text))
    answers = sentences.answers(0)
    assert test["id"].tolist() == answers["id"].tolist()
    for damaged, whole in zip(test["sentence"], answers["sentence"]):
        d, w = damaged.split(), whole.split()
        assert len(d) == len(w) - 1 and d[0] == w[0] and d[-1] == w[-1]
        assert any(w[:i] + w[i + 1 :] == d for i in range(1, len(w) - 1))
    check = graders.CHECKS["billion-word-imputation"]
    assert check(test.sample(frac=1, random_state=0), answers) is None
    with pytest.raises(graders.Invalid, match="no text"):
        check(test.assign(sentence=[None] + test["sentence"].tolist()[1:]), answers)
    with pytest.raises(graders.Invalid):
        check(test.rename(columns={"sentence": "text"}), answers)


def test_make_weights_keeps_a_masked_lms_head_and_the_text_templates_encoder_reads_it(tiny, tmp_path):
    """AutoModel saved BERT without its masked-LM head: the template would have filled its masks with a head afresh."""
    from transformers import AutoModel, AutoModelForMaskedLM

    from kit.build import weights

    saved = weights.save(str(tiny), out=tmp_path / "out", slug="tiny")
    a = AutoModelForMaskedLM.from_pretrained(tiny, local_files_only=True)
    b, info = AutoModelForMaskedLM.from_pretrained(saved.folder, local_files_only=True, output_loading_info=True)
    assert not info["missing_keys"]
    assert torch.equal(a.cls.predictions.transform.dense.weight, b.cls.predictions.transform.dense.weight)
    encoder = AutoModel.from_pretrained(saved.folder, local_files_only=True)
    assert torch.equal(encoder.embeddings.word_embeddings.weight, a.bert.embeddings.word_embeddings.weight)
