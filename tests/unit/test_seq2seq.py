"""The seq2seq template's rooms: text normalization's routes (copy, table, model), the model's inputs and pairs, the
metric against MLE-bench's grader, the tiny T5 built locally, its loss and generation, and `make weights` on an
encoder-decoder."""
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import accuracy_score

from kit.build import weights
from kit.data import normalize
from kit.errors import KitError
from kit.models.seq2seq import IGNORE, Seq2SeqModel
from kit.runtime.precision import Precision
from kit.smoke.gallery import normalizing
from kit.smoke.seq2seq import build_tiny_t5
from kit.train import metrics
from kit.train.seq2seq import Seq2SeqObjective, decode


def test_the_table_is_each_tokens_most_frequent_answer_and_copy_the_never_changed():
    before = ["the", "the", "1", "1", "1", "Dr", "Dr", "."]
    after = ["the", "the", "one", "one", "1", "doctor", "drive", "."]
    lookup = normalize.learn(before, after)
    assert lookup.after == {"the": "the", "1": "one", "Dr": "doctor", ".": "."}  # a tie: the first seen
    assert lookup.unchanged == {"the", "."}  # "1" is left as it is once, but changed twice: the table's
    routes = normalize.route(["the", "1", "Dr", "42", "."], lookup)
    assert routes.tolist() == [normalize.COPY, normalize.TABLE, normalize.TABLE, normalize.MODEL, normalize.COPY]
    assert normalize.counts(routes) == "copy 2, table 2, model 1"
    assert normalize.answers(["the", "1", "Dr", "42", "."], routes, lookup) == ["the", "one", "doctor", "42", "."]
    assert (normalize.route(["the", "1"], lookup, table=False) == normalize.MODEL).all()


def test_inputs_mark_the_token_among_its_neighbours_within_its_sentence():
    got = normalize.inputs([0, 0, 0, 1, 1], ["in", "1995", "he", "BBC", "."], words=1)
    assert got == ["<tok> in </tok> 1995", "in <tok> 1995 </tok> he", "1995 <tok> he </tok>", "<tok> BBC </tok> .",
                   "BBC <tok> . </tok>"]


def test_the_model_learns_each_changed_pair_once_and_as_many_rare_unchanged():
    before = ["1", "1", "2", "the", "the", "zyx", "qwe", "asd", ".", "."]
    after = ["one", "one", "two", "the", "the", "zyx", "qwe", "asd", ".", "."]
    rows = normalize.model_rows(before, after, limit=100)
    picked = [before[i] for i in rows]
    assert sorted(p for p in picked if p in "12") == ["1", "2"]  # "1" -> "one" once
    rare = [p for p in picked if p not in "12"]
    assert len(rare) == 2 and set(rare) <= {"zyx", "qwe", "asd"}  # "the" and "." are frequent: the table's
    assert len(normalize.model_rows(before, after, limit=3)) == 3


def test_text_accuracy_is_the_graders_accuracy_on_shared_cases():
    truth = np.array(["one", "b b c", "nineteen ninety five", ".", "five kilograms"])
    pred = np.array(["one", "b b c", "nineteen ninety", ".", "5 kg"])
    rows = np.stack([pred == truth, truth == truth], axis=1).astype(float)  # [exact, copy exact] as validation writes
    assert metrics.score("text_accuracy", rows, np.arange(5)) == pytest.approx(accuracy_score(truth, pred))


def test_the_smoke_files_are_mlebench_layout(tmp_path):
    normalizing.russian(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ru_sample_submission_2.csv.zip", "ru_test_2.csv.zip",
                                                           "ru_train.csv.zip"]
    train = pd.read_csv(tmp_path / "ru_train.csv.zip")
    test = pd.read_csv(tmp_path / "ru_test_2.csv.zip")
    sample = pd.read_csv(tmp_path / "ru_sample_submission_2.csv.zip")
    assert train.columns.tolist() == ["sentence_id", "token_id", "class", "before", "after"]
    assert test.columns.tolist() == ["sentence_id", "token_id", "before"]
    assert sample.columns.tolist() == ["id", "after"] and sample["id"].iloc[0] == "0_0"
    assert (sample["after"] == test["before"]).all()
    assert train["after"].str.contains("[а-я]").any() and {"LETTERS", "DATE", "MEASURE"} <= set(train["class"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("t5")
    return build_tiny_t5(["in <tok> 1995 </tok> he", "nineteen ninety five", "BBC b"], folder, seed=0)


@pytest.fixture
def one_thread():
    """A few thousand weights: a second thread only waits on shared cores (36 s measured for 150 steps, 5 s on one)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_tiny_t5_learns_a_pair_teacher_forced_and_generates_it(tiny, one_thread):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny, local_files_only=True)
    model = Seq2SeqModel(tiny, tokenizer.pad_token_id)
    source = torch.tensor([tokenizer("in <tok> 1995 </tok> he")["input_ids"]])
    labels = torch.tensor([tokenizer("nineteen ninety five")["input_ids"]])
    labels = torch.cat([labels, torch.full((1, 2), IGNORE)], 1)  # padding the loss leaves out
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)  # 1e-2 oscillates: "nineten nety five"
    objective = Seq2SeqObjective(tokenizer, ["nineteen ninety five"], ["1995"], max_new_tokens=30, num_beams=2)
    batch = {"input_ids": source, "labels": labels, "row": torch.tensor([0])}
    first, generated = None, []
    for step in range(1, 201):  # until it generates the answer (50 steps measured)
        model.train()
        loss = objective(model, batch)["loss"]
        first = first if first is not None else float(loss.detach())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            model.eval()
            out = objective(model, batch)  # eval mode: the output is the generated ids
            generated = decode(tokenizer, out["output"])
            if generated == ["nineteen ninety five"]:
                break
    assert float(loss.detach()) < first / 10
    assert generated == ["nineteen ninety five"]
    rows = objective.rows(out["output"], {"row": torch.tensor([0])})
    assert rows["pred"].tolist() == [[1.0, 0.0]]  # generated exactly; copying "1995" would not be


def test_make_weights_saves_an_encoder_decoder_as_its_seq2seq_class_with_its_tokenizer(tiny, tmp_path):
    """AutoModel saved a T5 as T5Model: no generation_config.json (the decoder's start and end tokens that generation
    reads) and config.json naming the bare model; transformers 5 ties T5's LM head to its embeddings, so the head's
    weights themselves came through."""
    import json

    from transformers import AutoModelForSeq2SeqLM

    saved = weights.save(str(tiny), out=tmp_path / "out", slug="tiny")
    assert saved.kind == "transformers"
    assert {"tokenizer.json", "config.json", "model.safetensors", "generation_config.json"} <= {
        p.name for p in saved.folder.iterdir()}
    assert json.loads((saved.folder / "config.json").read_text())["architectures"] == ["T5ForConditionalGeneration"]
    a = AutoModelForSeq2SeqLM.from_pretrained(tiny, local_files_only=True)
    b = AutoModelForSeq2SeqLM.from_pretrained(saved.folder, local_files_only=True)
    assert torch.equal(a.lm_head.weight, b.lm_head.weight)
    assert b.generation_config.decoder_start_token_id == 0


def test_without_the_table_the_model_learns_from_any_pairs():
    before, after = ["the"] * 6 + ["1"], ["the"] * 6 + ["one"]
    rows = normalize.model_rows(before, after, limit=5, table=False)
    assert len(rows) == 5 and len(set(rows.tolist())) == 5  # frequent unchanged tokens too: it must copy them
    assert len(normalize.model_rows(before, after, limit=100, table=False)) == 7


def test_the_graders_checks_refuse_an_empty_after_and_other_ids(tmp_path):
    from kit.smoke.gallery import graders

    normalizing.english(tmp_path)
    sample = pd.read_csv(tmp_path / "en_sample_submission_2.csv.zip")
    check = graders.CHECKS["text-normalization-challenge-english-language"]
    assert check(sample.sample(frac=1, random_state=0), sample) is None  # any order: it sorts by id
    with pytest.raises(graders.Invalid, match="NaN"):
        check(sample.assign(after=[None] + sample["after"].tolist()[1:]), sample)
    with pytest.raises(graders.Invalid):
        check(sample.assign(id=sample["id"].str.replace("0_0", "0_99")), sample)


def test_text_accuracy_is_the_seq2seq_templates_alone():
    from kit.metric_records import metric_misfit

    assert metric_misfit("seq2seq", "text_accuracy") == ""
    assert "does not score generated texts" in metric_misfit("seq2seq", "accuracy")
    assert "only the seq2seq template" in metric_misfit("text", "text_accuracy")


def test_inputs_of_some_rows_are_those_rows_of_all():
    sentences, tokens = [0, 0, 0, 1, 1, 2], ["a", "b", "c", "d", "e", "f"]
    every = normalize.inputs(sentences, tokens, words=2)
    assert normalize.inputs(sentences, tokens, words=2, rows=np.array([5, 1, 3])) == [every[5], every[1], every[3]]
    assert every[5] == "<tok> f </tok>" and every[1] == "a <tok> b </tok> c"


def test_a_t5_trains_in_fp32_where_a_t4_would_choose_fp16(tiny):
    """The set-up's policy on a CUDA T4 (compute 7.5: fp16 chosen) is fp32 for the tiny T5's folder, with the log
    line; fp16 stays where precision = "fp16" asks for it, and bf16 (no overflow there) and other models keep the machine's."""
    from kit import params, templates
    from kit.models.seq2seq import T5_IN_FP32, precision_for
    from kit.run.start import model_precision
    from kit.runtime import hardware

    t4 = hardware.Hardware(device="cuda", gpu_name="Tesla T4", gpu_count=1, capability=(7, 5), gpu_memory_gb=15.0,
                           cpu_count=4, ram_gb=29.0)
    chosen = hardware.setup(t4)
    assert chosen.precision == "fp16"
    record = templates.get("seq2seq")
    setup, note = model_precision(chosen, params.Seq2SeqParams(model_path=str(tiny)), record)
    assert (setup.precision, note) == ("fp32", T5_IN_FP32) and note.startswith("T5 in fp32: fp16 overflows its feed")
    assert Precision(setup.precision, t4.device) == Precision("fp32", "cuda")
    asked = params.Seq2SeqParams(model_path=str(tiny), precision="fp16")
    kept, note = model_precision(hardware.setup(t4, precision="fp16"), asked, record)
    assert (kept.precision, note) == ("fp16", "")
    assert precision_for("bf16", "t5") == "bf16" and precision_for("fp16", "bart") == "fp16"
    assert precision_for("fp16", "mt5") == "fp32"


def test_the_table_file_round_trips_and_a_missing_or_other_one_is_one_line(tmp_path):
    lookup = normalize.learn(["1995", "Mr", "the", "1995"], ["nineteen ninety five", "mister", "the", "one nine"])
    path = tmp_path / "lookup.json"
    normalize.save(lookup, path)
    assert normalize.read(path, normalize.digest(lookup)) == lookup
    with pytest.raises(KitError, match=r"lookup.json is not the table the fold checkpoints were trained with"):
        normalize.read(path, "0" * 16)
    path.unlink()
    with pytest.raises(KitError, match=r"lookup.json is missing: the seq2seq run's table of training pairs travels"):
        normalize.read(path, normalize.digest(lookup))
