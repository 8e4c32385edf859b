"""tensorflow2-question-answering: its JSONL streamed into a bounded sample, whitespace tokens <-> characters,
the long answer from the candidates, the two PredictionStrings, the micro F1 as MLE-bench's grade.py computes it
and the threshold chosen on out-of-fold examples; a 30,000-token page's windows decoded a batch at a time."""
import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from kit.data import nq, spans
from kit.data.text import Tokens
from kit.errors import KitError
from kit.pipelines.text import load_tokenizer
from kit.smoke.text import build_tiny_encoder
from kit.train import nq as nq_metric


def graders_prepare(submission: pd.DataFrame, answers: list[dict]):
    """MLE-bench's tensorflow2-question-answering grade.py (prepare_for_metric), written out; then its
    f1_score(average="micro")."""
    submission = submission.fillna("").astype(str)
    y_pred = [1 if row["PredictionString"].strip() else 0 for _, row in submission.iterrows()]
    y_true = []
    true_annotations = {sample["example_id"]: sample["annotations"][0] for sample in answers}
    for _, row in submission.iterrows():
        sample_id = row["example_id"]
        pred = row["PredictionString"].strip()
        if ":" in pred and len(pred.split(":")) == 2:
            start_token, end_token = pred.split(":")
            pred = (int(start_token), int(end_token))
        if sample_id.endswith("_long"):
            annotation = true_annotations[sample_id.split("_long")[0]]
            valid_answers = []
            if annotation["long_answer"]["start_token"] != -1:
                valid_answers.append((int(annotation["long_answer"]["start_token"]),
                                      int(annotation["long_answer"]["end_token"])))
        else:
            annotation = true_annotations[sample_id.split("_short")[0]]
            valid_answers = [(int(s["start_token"]), int(s["end_token"])) for s in annotation["short_answers"]]
            if annotation["yes_no_answer"] != "NONE":
                valid_answers.append(annotation["yes_no_answer"])
        if pred:
            y_true.append(1 if pred in valid_answers else 0)
        else:
            y_true.append(1 if valid_answers else 0)
    return f1_score(y_true=y_true, y_pred=y_pred, average="micro")


def line(example_id, long=(-1, -1), shorts=(), yes_no="NONE", words=40, candidates=((0, 10), (10, 30), (30, 40))):
    document = " ".join(["<P>"] + [f"w{i}" for i in range(1, words - 1)] + ["</P>"])
    return {"example_id": example_id, "question_text": "where is it", "document_text": document,
            "long_answer_candidates": [{"start_token": a, "end_token": b, "top_level": True} for a, b in candidates]
            + [{"start_token": 12, "end_token": 14, "top_level": False}],
            "annotations": [{"long_answer": {"start_token": long[0], "end_token": long[1]},
                             "short_answers": [{"start_token": a, "end_token": b} for a, b in shorts],
                             "yes_no_answer": yes_no}]}


CASES = [  # (the example's answers, the submission's long and short strings)
    (line("1", (10, 30), [(12, 14)]), "10:30", "12:14"),  # both right
    (line("2", (10, 30), [(12, 14), (20, 22)]), "10:30", "20:22"),  # the second short answer is accepted too
    (line("3", (10, 30), [(12, 14)]), "0:10", "12:15"),  # both wrong
    (line("4", (10, 30), [(12, 14)]), "", ""),  # blank where answers exist: both wrong
    (line("5"), "", ""),  # no answer, blank: both right
    (line("6"), "0:10", "3:4"),  # answered where none exists: both wrong
    (line("7", (0, 10), [], "YES"), "0:10", "YES"),  # yes/no
    (line("8", (0, 10), [], "NO"), "0:10", "YES"),  # the wrong one
    (line("9", (30, 40)), "30:40", ""),  # a long answer and no short one: both right
    (line("10", (30, 40)), " 30:40 ", "NO"),  # spaces around are stripped; NO where none: wrong
]


def test_micro_f1_is_the_graders_on_shared_cases():
    answers = [c[0] for c in CASES]
    rows = [(f"{a['example_id']}_{w}", s) for a, long, short in CASES for w, s in (("long", long), ("short", short))]
    submission = pd.DataFrame(rows, columns=["example_id", "PredictionString"])
    examples = [nq.parse(json.dumps(a), "t") for a in answers]
    expected = graders_prepare(submission, answers)
    assert nq_metric.micro_f1(dict(rows), examples) == pytest.approx(expected) == pytest.approx(12 / 20)
    for i, (a, long, short) in enumerate(CASES):  # each example alone too
        one = pd.DataFrame([(f"{a['example_id']}_long", long), (f"{a['example_id']}_short", short)],
                           columns=["example_id", "PredictionString"])
        assert nq_metric.micro_f1(dict(one.to_numpy()), [examples[i]]) == pytest.approx(graders_prepare(one, [a]))
    with pytest.raises(KitError, match="PredictionString 'maybe' is none of"):
        nq_metric.micro_f1({"1_long": "maybe", "1_short": ""}, examples[:1])


def test_the_threshold_is_the_best_over_the_out_of_fold_examples():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=200)
    answered = rng.integers(0, 3, 200) * (scores > -0.3)  # better answered when scored higher
    blank = rng.integers(0, 3, 200)
    cut, value = nq_metric.choose(scores, answered, blank)
    for t in np.r_[-np.inf, np.sort(scores), np.inf]:  # every threshold scores no more
        yes = scores >= t
        assert value >= (answered[yes].sum() + blank[~yes].sum()) / 400 - 1e-12
    yes = scores >= cut
    assert value == pytest.approx((answered[yes].sum() + blank[~yes].sum()) / 400)
    # windows of examples 0, 0, 1: the best-scored window of each counts
    pred = np.array([[2.0, 2, 0], [1.0, 0, 0], [0.5, 0, 2]])
    assert nq_metric.score("nq_micro_f1", pred, np.array([0, 0, 1])) == pytest.approx(1.0)


def test_a_long_jsonl_is_streamed_into_a_bounded_sample(tmp_path):
    """A 6 MB file of 300 pages: 20 kept; what reading holds is a few pages, not the file; the unanswered ones
    down-sampled to half the answered ones."""
    path = tmp_path / "simplified-nq-train.jsonl"
    with open(path, "w") as f:
        for i in range(300):
            answered = i % 3 == 0
            f.write(json.dumps(line(str(i), (10, 30) if answered else (-1, -1), [(12, 14)] if answered else [],
                                    words=4000)) + "\n")
    assert path.stat().st_size > 5e6
    tracemalloc.start()
    examples, seen = nq.read(path, keep=20, negatives=0.5, seed=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seen == 300 and peak < 2.5e6
    held = [e for e in examples if e.answered]
    assert (len(examples), len(held)) == (20, 14)  # 14 of the 100 answered, 6 of the 200 others (<= 0.5 x 14)
    assert len({e.example_id for e in examples}) == len(examples)
    first = {int(e.example_id) for e in held}
    assert max(first) > 100  # reservoir: not merely the file's first answered lines
    again, _ = nq.read(path, keep=20, negatives=0.5, seed=1)
    assert [e.example_id for e in again] == [e.example_id for e in examples]
    (tmp_path / "bad.jsonl").write_text('{"example_id": 1}\n')
    with pytest.raises(KitError, match=r"^bad.jsonl:1: not a Natural Questions line"):
        nq.read(tmp_path / "bad.jsonl")


def test_tokens_map_to_characters_and_back_as_the_grader_extracts_them():
    document = "<P> The  cat sat </P> on"  # two spaces: an empty token, as split(" ") makes it
    tokens = nq.token_chars(document)
    words = document.split(" ")
    assert len(tokens) == len(words)
    for a in range(len(words)):
        for b in range(a + 1, len(words) + 1):
            x, y = nq.span_chars(tokens, (a, b))
            assert document[x:y] == " ".join(words[a:b])  # prepare.py's extract_string
            if words[a] and words[b - 1]:
                assert nq.char_tokens(tokens, x, y) == (a, b)
    assert nq.char_tokens(tokens, document.index("sat") + 1, document.index("sat") + 3) == (4, 5)  # in a word
    candidates = np.array([[0, 5], [0, 2], [5, 6]])
    assert nq.long_answer(candidates, (3, 4)) == (0, 5) and nq.long_answer(candidates, (1, 2)) == (0, 2)
    assert nq.long_answer(candidates, (4, 6)) == (-1, -1) and nq.long_answer(candidates, (-1, -1)) == (-1, -1)
    assert nq.strings((3, 4), (0, 5), True) == ("0:5", "3:4")
    assert nq.strings((3, 4), (0, 5), True, "NO") == ("0:5", "NO")
    assert nq.strings((3, 4), (0, 5), False) == ("", "")


def test_a_30000_token_page_is_decoded_a_batch_of_windows_at_a_time(tmp_path):
    """A page of 30,000 whitespace tokens cut into ~500 strided windows of 128; logits that peak on tokens
    25,000-25,002 come back as the short answer "25000:25003" and its paragraph as the long one, while no more
    than a batch of windows' logits is held."""
    n, at = 30_000, 25_000
    words = [f"w{i % 500}" for i in range(n)]
    for k in range(0, n, 1000):
        words[k] = "<P>"
    document = " ".join(words)
    folder = build_tiny_encoder([" ".join(f"w{i}" for i in range(500)) + " <P> where"], tmp_path / "m",
                                vocab_size=800, max_positions=128)
    tokenizer = load_tokenizer(folder)
    w = spans.windows(tokenizer, ["where"], [document], 128, 32)
    assert len(w) > 200 and (w.example == 0).all()
    tokens = nq.token_chars(document)
    a, b = nq.span_chars(tokens, (at, at + 3))
    best = nq.StreamedBest(w, max_answer=30)
    batch = 64
    for first in range(0, len(w), batch):
        rows = np.arange(first, min(first + batch, len(w)))
        logits = np.zeros((len(rows), 128 + nq.KIND_ROWS, 2), np.float32)  # answer types all 0: none wins
        for i, window in enumerate(rows):
            span = w.span(window)
            logits[i, : len(span), 0] = np.where(span[:, 0] == a, 10.0, 0.0)
            logits[i, : len(span), 1] = np.where(span[:, 1] == b, 10.0, 0.0)
        best.update(rows, logits)
    assert best.peak <= batch * (128 + nq.KIND_ROWS) * 2 * 4 and best.score[0] == pytest.approx(20.0)
    short = nq.char_tokens(tokens, *best.chars[0])
    candidates = np.array([[k, k + 1000] for k in range(0, n, 1000)])
    assert nq.strings(short, nq.long_answer(candidates, short), True) == ("25000:26000", "25000:25003")


def test_the_submission_check_takes_blank_spans_and_yes_no_and_the_sample_must_list_each_page_twice(tmp_path):
    from kit.pipelines import nq as nq_pipeline

    nq_metric.check_submission(pd.Series(["3:4", "", float("nan"), "YES", "NO", " 0:10 "]), pd.Series([""] * 6))
    with pytest.raises(KitError, match=r"^submission row 3: PredictionString '3-4' is none of 'start:end', YES, NO"):
        nq_metric.check_submission(pd.Series(["3:4", "3-4"]), pd.Series(["", ""]))
    pages = [nq.parse(json.dumps(line(i)), "t") for i in ("7", "8")]
    sample = pd.DataFrame({"example_id": ["7_short", "7_long", "8_short", "8_long"], "PredictionString": ""})
    where = nq_pipeline.sample_rows(sample, "example_id", pages, tmp_path / "sample_submission.csv")
    assert where.tolist() == [[1, 0], [3, 2]]  # each page's _long, then its _short row
    with pytest.raises(KitError, match=r"^sample_submission.csv: page 8 has no _long or _short row; the sample lists "):
        nq_pipeline.sample_rows(sample.iloc[:3], "example_id", pages, tmp_path / "sample_submission.csv")


def test_the_data_check_reads_the_first_pages_only(tmp_path):
    path = tmp_path / "simplified-nq-train.jsonl"
    path.write_text("".join(json.dumps(line(str(i))) + "\n" for i in range(5)) + "not json\n")
    assert nq.check(path, first=5) == 5  # the bad sixth line is never read
    with pytest.raises(KitError, match=r"^simplified-nq-train.jsonl:6: not a Natural Questions line"):
        nq.check(path, first=10)


def test_the_plan_counts_the_test_pages_windows_and_fits_a_t4x2_on_one_gpu():
    """tf2-qa at MLE-bench's size ([sizes]: 30,737 test pages of ~40 windows of 384 tokens; 8,000 training pages):
    the test windows' logits (the folds' float32 sum in memory, a fold's float16 file on scratch) and the pages'
    texts are counted, and the run fits a T4 x2's 29 GB with one GPU training (two fold workers would each hold the
    test windows: over)."""
    from kit.build import plan
    from kit.runtime.resources import KAGGLE_T4X2

    made = plan.plan("tensorflow2-question-answering", log=lambda line: None)
    amounts = {n.what: n.amount for n in made.needs}
    assert amounts["test windows' logits, the folds' running sum"] == 30737 * 40 * (384 + 2) * 2 * 4  # 3.8 GB, was 7.0
    assert amounts["test windows' logits, a fold's"] == 30737 * 40 * (384 + 2) * 2 * 2  # float16, on scratch
    assert amounts["the contexts' texts"] == (8000 + 30737) * 40 * (384 - 128) * 4
    assert made.over(KAGGLE_T4X2) == []


def two_windows(document: str) -> spans.Windows:
    """One page of five words cut by hand into two windows of a [CLS], then words 0-2, then words 2-4 (each
    token's characters in the page; -1 for [CLS])."""
    tokens = nq.token_chars(document).astype(np.int32)
    chars = np.concatenate([[[-1, -1]], tokens[0:3], [[-1, -1]], tokens[2:5]]).astype(np.int32)
    return spans.Windows(Tokens(np.arange(8, dtype=np.int32), np.array([0, 4, 8])), np.array([0, 0]), chars,
                         [document], ["is it"])


def test_a_window_answers_yes_or_no_where_its_answer_type_beats_none_and_span():
    """window_answer's exact cases: a window's best span (tokens 1-2, score 3 + 4) stands unless the YES or NO
    logit beats both the none and the span logits, and then it scores its span plus that margin (one scale, so
    that the out-of-fold answer cut can blank a weak YES/NO), its span kept for the long answer; StreamedBest
    keeps a page's best-scored window, here a YES, and the strings are the candidate holding its span and "YES"."""
    span = np.array([[-1, -1], [0, 3], [4, 7], [8, 11]])
    start, end = np.array([9.0, 3.0, 0.0, 0.0]), np.array([9.0, 0.0, 4.0, 0.0])  # [CLS] is never a span
    assert nq.window_answer(start, end, np.array([0.0, 2.0, 1.0, 0.0]), span, 30) == (7.0, 0, 7, "NONE")
    assert nq.window_answer(start, end, np.array([5.0, 1.0, 3.0, 2.0]), span, 30) == (7.0, 0, 7, "NONE")
    assert nq.window_answer(start, end, np.array([0.0, 1.0, 3.0, 2.5]), span, 30) == (9.0, 0, 7, "YES")
    assert nq.window_answer(start, end, np.array([0.0, 1.0, 2.0, 3.5]), span, 30) == (9.5, 0, 7, "NO")

    document = "w0 w1 w2 w3 w4"
    w = two_windows(document)
    logits = np.zeros((2, 4 + nq.KIND_ROWS, 2), np.float32)
    logits[0, 1, 0] = logits[0, 1, 1] = 1.0  # window 0: w0 alone, a span of score 2, the none type
    logits[1, 2, 0] = logits[1, 3, 1] = 20.0  # window 1: w3 w4, score 40, and YES by 0.5
    logits[1, -nq.KIND_ROWS:] = np.array([0.0, 0.0, 0.5, 0.0]).reshape(nq.KIND_ROWS, 2)
    best = nq.StreamedBest(w, max_answer=30)
    best.update(np.array([0, 1]), logits.astype(np.float16))  # as the ensemble's file holds them
    assert best.yes_no.tolist() == ["YES"] and best.score[0] == pytest.approx(40.5)
    short = nq.char_tokens(nq.token_chars(document), *best.chars[0])
    assert short == (3, 5)
    candidates = np.array([[0, 2], [2, 5]])
    assert nq.strings(short, nq.long_answer(candidates, short), True, best.yes_no[0]) == ("2:5", "YES")
    assert nq.strings((-1, -1), (-1, -1), True, "NO") == ("", "NO")  # no span: the long row stays blank
    assert nq.strings(short, (2, 5), False, "YES") == ("", "")  # under the answer cut


def test_each_training_window_learns_its_answer_type():
    """A window learns "span" where it holds the short answer, YES/NO where its context holds a YES/NO page's
    long answer whole, else "none" (a window that only grazes the evidence learns "none")."""
    document = "w0 w1 w2 w3 w4"
    w = two_windows(document)
    page = nq.Example("1", "is it", document, np.array([[0, 2], [2, 5]]))
    assert nq.window_kinds(w, np.array([[0, 0], [0, 0]]), [page]).tolist() == [0, 0]  # unanswered
    page.short = page.long = (3, 4)
    assert nq.window_kinds(w, np.array([[0, 0], [2, 2]]), [page]).tolist() == [0, 1]  # w3: window 1's
    page.short, page.long, page.yes_no = None, (3, 5), "NO"
    assert nq.window_kinds(w, np.array([[0, 0], [0, 0]]), [page]).tolist() == [0, 3]
    page.long = (0, 3)  # w0-w2: window 0 holds it, window 1 (w2-w4) only grazes it
    assert nq.window_kinds(w, np.array([[0, 0], [0, 0]]), [page]).tolist() == [3, 0]


def test_the_folds_test_logits_are_summed_in_place_from_float16_files(tmp_path, monkeypatch):
    """A fold's logits are float16 in an unlinked scratch file, PAD_LOGIT where not written; the running sum is
    float32, the first fold's copied, the next added to it in place, a chunk of windows at a time."""
    from kit.pipelines.spans import add_logits, scratch_logits

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    fold = scratch_logits((5, 3, 2))
    assert fold.dtype == np.float16 and (fold == spans.PAD_LOGIT).all() and list(tmp_path.iterdir()) == []
    fold[:] = np.arange(30, dtype=np.float16).reshape(5, 3, 2)
    total = add_logits(None, fold, chunk=2)
    assert total.dtype == np.float32 and not np.shares_memory(total, fold)
    same = add_logits(total, np.full((5, 3, 2), 0.5, np.float16), chunk=2)
    assert same is total
    assert total[:, 0, 0].tolist() == [0.5, 6.5, 12.5, 18.5, 24.5] and total[4, 2, 1] == 29.5
