"""`make quality`'s span-extraction row: kit's spans template against the plain Hugging Face question-answering loop
a competitor writes.

  articles   chaii's layout (kit.smoke.gallery.articles: Hindi and Tamil articles, the question asking a founder or a
             year), 200 training articles and 60 held out, whose answers only this file knows

Both train the same tiny BERT (kit.smoke.text's, built once from the training texts, random init) on the same
windows (64 tokens, a stride of 16: 3 or 4 windows an article) for the same epochs at the same peak learning rate,
and decode the same way: each article's best valid span over its windows (kit.data.spans.best_spans). kit runs the
built notebook (`kit run`, 2 folds, the config's recipe: layer decay, warm-up then cosine, AdamW, length buckets,
the best epoch of each fold, the folds' mean logits). The plain loop: AutoModelForQuestionAnswering (a linear
start/end head on the encoder, its own loss), every training window padded to 64 tokens, Adam, a cosine schedule
over all steps, batch 32, the last epoch. Scored by the mean word Jaccard of the held-out answers (chaii's metric).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kit.data import spans
from kit.pipelines.text import load_tokenizer
from kit.smoke.gallery import articles
from kit.smoke.text import build_tiny_encoder
from kit.train.spans import mean_jaccard

COMP = "chaii-hindi-and-tamil-question-answering"
MAX_LENGTH, STRIDE, MAX_ANSWER, EPOCHS, LR, BATCH = 64, 16, 16, 10, 3e-3, 32
TRAIN, TEST = 200, 60


def make_articles(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """chaii's three files in `folder`; the training table, the test table and the held-out answers."""
    rng = np.random.default_rng(7)
    rows = []
    for i in range(TRAIN + TEST):
        language = "hindi" if i % 3 else "tamil"
        context, question, answer, start = articles.article(rng, language)
        rows.append((f"{i:09x}", context, question, answer, start, language))
    table = pd.DataFrame(rows, columns=["id", "context", "question", "answer_text", "answer_start", "language"])
    train, test = table.iloc[:TRAIN], table.iloc[TRAIN:]
    folder.mkdir(parents=True, exist_ok=True)
    train.to_csv(folder / "train.csv", index=False)
    test.drop(columns=["answer_text", "answer_start"]).to_csv(folder / "test.csv", index=False)
    test[["id"]].assign(PredictionString="dummy text").to_csv(folder / "sample_submission.csv", index=False)
    return train, test, test["answer_text"].tolist()


def plain_qa(model_dir: Path, train: pd.DataFrame, test: pd.DataFrame, loop: Callable) -> list[str]:
    """AutoModelForQuestionAnswering trained by `loop` (quality.plain_loop) on every training window, padded to
    MAX_LENGTH; each test article's best span."""
    from transformers import AutoModelForQuestionAnswering

    tokenizer = load_tokenizer(model_dir)
    w = spans.windows(tokenizer, train["question"].tolist(), train["context"].tolist(), MAX_LENGTH, STRIDE,
                      train["answer_text"].tolist())
    y = torch.from_numpy(spans.token_targets(w, spans.answer_chars(w.contexts, w.answers, train["answer_start"].to_numpy())))

    def padded(windows: spans.Windows) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.full((len(windows), MAX_LENGTH), tokenizer.pad_token_id, dtype=torch.long)  # (W, L)
        for i in range(len(windows)):
            row = windows.tokens.ids[windows.tokens.offsets[i] : windows.tokens.offsets[i + 1]]
            ids[i, : len(row)] = torch.from_numpy(row.astype(np.int64))
        return ids, ids.ne(tokenizer.pad_token_id).long()

    x, mask = padded(w)
    torch.manual_seed(0)
    model = AutoModelForQuestionAnswering.from_pretrained(model_dir, local_files_only=True)
    loop(model, torch.optim.Adam(model.parameters(), lr=LR), len(x),
         lambda idx: model(input_ids=x[idx], attention_mask=mask[idx], start_positions=y[idx, 0],
                           end_positions=y[idx, 1]).loss, EPOCHS, BATCH)
    t = spans.windows(tokenizer, test["question"].tolist(), test["context"].tolist(), MAX_LENGTH, STRIDE)
    x, mask = padded(t)
    with torch.no_grad():
        out = [model(input_ids=a, attention_mask=m) for a, m in zip(x.split(64), mask.split(64))]
    logits = torch.stack([torch.cat([o.start_logits for o in out]), torch.cat([o.end_logits for o in out])], -1)
    return spans.span_texts(t.contexts, spans.best_spans(logits.numpy(), t, MAX_ANSWER))


def rows(work: Path, run_kit: Callable, make_row: Callable, loop: Callable) -> list:
    """One row: kit's Jaccard, the plain loop's, and their seconds. `run_kit`, `make_row` and `loop` are quality.py's."""
    data = work / "articles"
    train, test, answers = make_articles(data)
    model_dir = build_tiny_encoder([*train["question"], *train["context"]], work / "tiny-encoder", max_positions=512)
    params = dict(model_path=str(model_dir), max_length=MAX_LENGTH, doc_stride=STRIDE, max_answer_length=MAX_ANSWER,
                  epochs=EPOCHS, lr=LR, batch_size=BATCH, folds=2, gradient_checkpointing=False, device="cpu")
    sub, kit_s = run_kit(COMP, data, work / "kit-spans", params)
    predicted = dict(zip(sub["id"].astype(str), sub["PredictionString"].fillna("").astype(str)))
    kit_score = mean_jaccard([predicted[i] for i in test["id"].astype(str)], answers)
    started = time.time()
    plain = plain_qa(model_dir, train, test, loop)
    return [make_row("articles (chaii layout)", "spans", "jaccard", kit_score, mean_jaccard(plain, answers), kit_s,
                     time.time() - started)]
