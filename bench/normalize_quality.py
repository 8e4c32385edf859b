"""`make quality`'s text-normalization rows: kit's seq2seq template, copy + table + model, against copy + table alone
and against the model alone.

  tokens   text-normalization-challenge-english-language's layout (kit.smoke.gallery.normalizing: plain words,
           punctuation, numbers, years, abbreviations, measures), 800 training sentences and 100 held out, whose
           answers only this file knows

kit runs the built notebook twice (`kit run`, one holdout fold, the config's smoke recipe: the tiny T5 of
kit.smoke.seq2seq, random init, built once from the training texts): with the table (copy and the table answer the
tokens seen, the model the rest) and without it (`table = false`: the model answers every token, trained on 2,000 pairs
drawn from all of them). Copy + table alone is the first run's routes with every model token copied. Scored by
exact-match accuracy over all held-out tokens (the grader's). Each row passes when copy + table + model scores at
least as well as the other (within 0.01).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import normalize
from kit.smoke.gallery import normalizing

COMP = "text-normalization-challenge-english-language"
TRAIN, TEST = 800, 100
ALONE_PAIRS = 2000  # the model alone learns from this many pairs of any tokens: twice the routed model's ~820, a third
# of the 6,000 tokens (all of them took 55 s for the same 0.71)
PARAMS = dict(epochs=10, folds=1, batch_size=32, lr=5e-3, context_words=0, max_length=48, max_new_tokens=32,
              warmup_epochs=0.2, device="cpu")


def make_tokens(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The competition's three zipped files in `folder`; the training table and the held-out answers (id, after)."""
    rng = np.random.default_rng(11)
    train, held = normalizing.sentences(rng, TRAIN, "en"), normalizing.sentences(rng, TEST, "en")
    test = held.drop(columns=["after", "class"])
    ids = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
    folder.mkdir(parents=True, exist_ok=True)
    normalizing._zipped(train, folder, "en_train.csv")
    normalizing._zipped(test, folder, "en_test_2.csv")
    normalizing._zipped(pd.DataFrame({"id": ids, "after": test["before"]}), folder, "en_sample_submission_2.csv")
    return train, pd.DataFrame({"id": ids, "after": held["after"], "before": held["before"]})


def accuracy(sub: pd.DataFrame, answers: pd.DataFrame) -> float:
    """The grader's: ids sorted on both sides, every cell read as a string."""
    got = dict(zip(sub["id"].astype(str), sub["after"].astype(str)))
    return float(np.mean([got[i] == a for i, a in zip(answers["id"], answers["after"].astype(str))]))


def rows(work: Path, run_kit: Callable, make_row: Callable) -> list:
    """Two rows: copy + table + model against copy + table alone, and against the model alone."""
    from kit.smoke.seq2seq import build_tiny_t5

    data = work / "tokens"
    train, answers = make_tokens(data)
    texts = [normalize.OPEN + normalize.CLOSE, *train["before"].astype(str), *train["after"].astype(str)]
    model_dir = build_tiny_t5(texts, work / "tiny-t5")
    started = time.time()
    lookup = normalize.learn(train["before"].astype(str).tolist(), train["after"].astype(str).tolist())
    before = answers["before"].astype(str).tolist()
    table_only = pd.DataFrame({"id": answers["id"],
                               "after": normalize.answers(before, normalize.route(before, lookup), lookup)})
    table_s = time.time() - started
    both, both_s = run_kit(COMP, data, work / "kit-both", dict(PARAMS, model_path=str(model_dir)))
    alone, alone_s = run_kit(COMP, data, work / "kit-model", dict(PARAMS, model_path=str(model_dir), table=False,
                                                                  max_pairs=ALONE_PAIRS))
    copy = accuracy(answers[["id", "before"]].rename(columns={"before": "after"}), answers)
    print(f"normalization: copy alone {copy:.4f}, copy + table {accuracy(table_only, answers):.4f}, "
          f"copy + table + model {accuracy(both, answers):.4f}, the model alone {accuracy(alone, answers):.4f}")
    score = accuracy(both, answers)
    return [make_row("tokens, copy + table", "seq2seq", "text_accuracy", score, accuracy(table_only, answers), both_s,
                     table_s),
            make_row("tokens, model alone", "seq2seq", "text_accuracy", score, accuracy(alone, answers), both_s,
                     alone_s)]
