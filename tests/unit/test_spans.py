"""Span extraction's windows: a long context cut into strided windows with each token's characters, the answer's
tokens in the window that holds it whole, and the best valid span over the windows mapped back to characters."""
import numpy as np
import pytest

from kit.data import spans
from kit.pipelines.text import load_tokenizer
from kit.smoke.text import build_tiny_encoder

MAX_LENGTH, STRIDE = 64, 16


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    words = [f"w{i}" for i in range(3000)]
    folder = build_tiny_encoder([" ".join(words), "where"], tmp_path_factory.mktemp("tiny") / "model")
    return load_tokenizer(folder)


def test_a_long_context_is_cut_into_strided_windows_and_the_best_span_maps_back_across_a_boundary(tokenizer):
    context = " ".join(f"w{i}" for i in range(3000))  # each word several WordPiece tokens: ~12,000 tokens
    w = spans.windows(tokenizer, ["where"], [context], MAX_LENGTH, STRIDE)
    assert len(w) > 200 and (w.example == 0).all() and w.tokens.lengths.max() == MAX_LENGTH
    firsts, lasts = [], []
    for i in range(len(w)):
        span = w.span(i)
        inside = span[span[:, 0] >= 0]
        firsts.append(inside[0, 0])
        lasts.append(inside[-1, 1])
        if i:  # the next window starts STRIDE context tokens before the last one ended
            before = w.span(i - 1)
            assert (before[before[:, 0] >= 0][-STRIDE:] == inside[:STRIDE]).all()
    assert firsts[0] == 0 and lasts[-1] == len(context)
    # an answer that window 1 cuts (its last 2 context tokens and 3 more) and window 2 holds whole
    one = w.span(1)
    ctx = one[one[:, 0] >= 0]
    start_char = int(ctx[-2, 0])
    two = w.span(2)
    after = np.flatnonzero(two[:, 0] >= 0)
    k = int(np.flatnonzero(two[after, 0] == start_char)[0])
    end_char = int(two[after[k + 4], 1])
    answer = context[start_char:end_char]
    chars = spans.answer_chars([context], [answer])
    assert chars.tolist() == [[start_char, end_char]]
    y = spans.token_targets(w, chars)
    assert y[1].tolist() == [0, 0]  # cut: "not here"
    assert y[2].tolist() == [after[k], after[k + 4]]
    assert (y[np.r_[0, 3 : len(w)]] == 0).all()
    # logits: noise, window 2 sure of the answer, window 1 less sure of the part it holds, and an invalid pair
    # (an end before its start) scoring higher still in window 5
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=0.1, size=(len(w), MAX_LENGTH, 2)).astype(np.float32)
    logits[2, after[k], 0] = logits[2, after[k + 4], 1] = 8.0
    logits[1, np.flatnonzero(one[:, 0] == start_char)[0], 0] = 7.0
    logits[1, np.flatnonzero(one[:, 0] >= 0)[-1], 1] = 7.0
    five = np.flatnonzero(w.span(5)[:, 0] >= 0)
    logits[5] = -20.0  # window 5: only the end before the start is sure; every valid pair scores about 0
    logits[5, five[10], 0] = logits[5, five[3], 1] = 20.0
    best = spans.best_spans(logits, w, max_answer=30)
    assert best.tolist() == [[start_char, end_char]]
    assert spans.span_texts([context], best) == [answer]
    # a span longer than max_answer is no candidate: window 2's answer is 5 tokens
    assert spans.best_spans(logits, w, max_answer=4).tolist() != [[start_char, end_char]]


def test_answers_are_found_in_their_context_in_another_case_and_lost_ones_marked():
    contexts = ["I love it", " So HAPPY today", "nothing here"]
    chars = spans.answer_chars(contexts, ["love", "so happy ", "absent"])
    assert chars.tolist() == [[2, 6], [1, 9], [-1, -1]]
    assert spans.span_texts(contexts, chars) == ["love", "So HAPPY", "nothing here"]  # no span: the whole text


def test_a_given_answer_start_places_an_answer_its_context_holds_twice():
    """chaii's answer_start marks which of an answer's places the annotator meant (the second "1947" below); a
    start that does not hold the answer's text (a wrong or missing one) falls back to the answer's first place."""
    contexts = ["भारत 1947 में स्वतंत्र हुआ। 1947 का वर्ष", "சென்னை தமிழ்நாடு சென்னை", "ab ab", "ab ab"]
    answers = ["1947", " சென்னை", "ab", "ab"]
    starts = [contexts[0].rindex("1947"), contexts[1].rindex("சென்னை") - 1, 1, float("nan")]
    chars = spans.answer_chars(contexts, answers, starts)
    second = contexts[0].rindex("1947")
    assert chars.tolist() == [[second, second + 4], [contexts[1].rindex("சென்னை"), len(contexts[1])], [0, 2], [0, 2]]
    assert spans.answer_chars(contexts, answers)[0].tolist() == [5, 9]  # no starts: the first place


def test_the_resource_plan_counts_each_contexts_windows_and_their_logits(tokenizer, tmp_path):
    """chaii at its real size ([sizes]: 112 test articles of ~20 windows of 384 tokens): the test windows' start and
    end logits (the folds' float32 sum in memory, a fold's float16 file on scratch), and every window's tokens; in
    the kernel, windows a context read from the data (rounded up)."""
    from types import SimpleNamespace

    from kit.build import plan
    from kit.pipelines import footprints
    from kit.train.targets import Target

    made = plan.plan("chaii-hindi-and-tamil-question-answering", log=lambda line: None)
    amounts = {n.what: n.amount for n in made.needs}
    assert amounts["test windows' logits, the folds' running sum"] == 112 * 20 * 384 * 2 * 4  # no answer types
    assert amounts["test windows' logits, a fold's"] == 112 * 20 * 384 * 2 * 2
    assert amounts["the windows' tokens and their characters"] == (1002 + 112) * 20 * 384 * (4 + 8)
    contexts = [" ".join(f"w{i}" for i in range(300)), "w1 w2"]  # ~1,200 tokens: many windows, and one
    w = spans.windows(tokenizer, ["where", "where"], contexts, MAX_LENGTH, STRIDE)
    data = SimpleNamespace(test_windows=w, train_windows=None, folder=tmp_path, target=Target("span", ("answer",)))
    sizes = footprints.Spans.sizes(None, data)
    assert (sizes.train_rows, sizes.test_rows, sizes.windows) == (0, 2, -(-len(w) // 2)) and len(w) > 20


def test_a_blank_test_context_gets_its_question_not_an_empty_cell(tokenizer, tmp_path, capsys):
    """A blank test text has one window with no context token, so no span: the whole text would be "", which the
    grader reads as NaN -> "" and, where the answer is empty too, divides by zero on. The question stands in."""
    import pandas as pd

    from kit import templates
    from kit.pipelines.spans import SpanData, SpansPipeline
    from kit.runtime.hardware import Hardware, setup
    from kit.runtime.session import Session
    from kit.spec import Spec
    from kit.train.targets import Target

    record, hw = templates.get("spans"), Hardware("cpu", cpu_count=2, ram_gb=8)
    (tmp_path / "out").mkdir()
    session = Session("spans", record.params(), Spec(slug="toy", template="spans"), hw, setup(hw), tmp_path, tmp_path / "out")
    w = spans.windows(tokenizer, ["positive", "neutral"], ["w1 w2 w3", ""], MAX_LENGTH, STRIDE)
    sample = pd.DataFrame({"textID": ["a", "b"], "selected_text": ["", ""]})
    data = SpanData(None, w, None, Target("span", ("selected_text",)), sample, np.array([0, 1]), 0, tmp_path, {})
    logits = np.zeros((len(w), MAX_LENGTH, 2), np.float32)
    out = SpansPipeline(session).cut(data, logits, [])
    assert out[1, 0] == "neutral" and out[0, 0].split()
    assert ("1 test row(s) with no word in their context, such as submission row 3: their span is their question "
            "('neutral')") in capsys.readouterr().out


def test_the_submission_check_refuses_a_span_cell_without_a_word():
    import pandas as pd

    from kit.errors import KitError
    from kit.train.spans import check_submission

    check_submission(pd.Series(["good day", "neutral"]), pd.Series(["", ""]))
    with pytest.raises(KitError, match=r"^submission row 3 holds ' ', no word: the grader reads it as an empty text"):
        check_submission(pd.Series(["good day", " "]), pd.Series(["", ""]))


def test_a_question_that_leaves_its_context_no_room_is_one_line_naming_the_pair(tokenizer):
    """The tokenizer's truncation panics in Rust ("stride must be strictly less than max_len") where the question,
    the special tokens and the stride fill the window: caught before, with what to change."""
    from kit.errors import KitError

    long_question = " ".join(["w1"] * 45)  # 45 tokens + 3 special + 16 stride = 64
    spans.windows(tokenizer, ["where", " ".join(["w1"] * 44)], ["w1 w2", "w3 " * 200], MAX_LENGTH, STRIDE)  # 63 fits
    with pytest.raises(KitError, match=r"^train.csv: the question of pair 2 \('w1 w1 .*\.\.\.'\) is 45 tokens, "
                                       r"which with 3 special tokens and doc_stride 16 leaves no room for its context "
                                       r"in max_length 64; raise max_length, lower doc_stride, or check \[data\] "
                                       r"text_columns' order"):
        spans.windows(tokenizer, ["where", long_question], ["w1 w2", "w3 " * 200], MAX_LENGTH, STRIDE, source="train.csv")
