"""Sequence to sequence's objective, its metric and its kind of target.

- The objective: teacher-forced token cross-entropy in training; in validation (the model in eval mode) it generates
  too, and each validation row holds whether the generated text is the target exactly, and whether copying the
  input token would have been: the per-epoch score is the model's exact-match accuracy on its rows, and the time
  of these passes (generation included) is what the budget's prediction reserve is measured by.
- `score`: exact-match accuracy, as text-normalization's grader (scikit-learn's accuracy_score on the strings).
- The "text" kind: a generated text a row, which the pipeline's `cut` writes; registered here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from kit.data.batch import Batch
from kit.errors import KitError
from kit.train.kinds import Kind, Target, named, register


def score(metric: str, pred: np.ndarray, target: np.ndarray) -> float:
    """Validation rows -> the share whose generated text is the target: `pred` (rows, 2) [exact, copy exact]."""
    pred = np.asarray(pred, np.float64).reshape(len(pred), -1)
    return float(pred[:, 0].mean()) if len(pred) else float("nan")


def decode(tokenizer, ids: torch.Tensor | np.ndarray) -> list[str]:
    """Generated ids -> texts, special tokens (the start, the end, the padding) left out."""
    ids = ids.cpu().numpy() if isinstance(ids, torch.Tensor) else np.asarray(ids)
    return [t.strip() for t in tokenizer.batch_decode(ids.tolist(), skip_special_tokens=True)]


class Seq2SeqObjective:
    """input_ids (B, L) and labels (B, T) -> the teacher-forced loss; validation generates each row's text."""

    loss_metric = None  # the loss is not the accuracy

    def __init__(self, tokenizer, targets: list[str], sources: list[str], max_new_tokens: int, num_beams: int):
        self.tokenizer, self.targets, self.sources = tokenizer, targets, sources
        self.max_new_tokens, self.num_beams = max_new_tokens, num_beams

    def __call__(self, model: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
        loss = model(batch["input_ids"], batch["labels"]).float()
        if model.training:
            return {"loss": loss, "output": loss.detach()}
        net = getattr(model, "module", model)  # DDP's wrapper has no generate
        return {"loss": loss, "output": net.generate(batch["input_ids"], self.max_new_tokens, self.num_beams)}

    def predict(self, output: torch.Tensor) -> torch.Tensor:
        return output

    def rows(self, output: torch.Tensor, batch: Batch) -> dict[str, torch.Tensor]:
        """(B, 2) [generated == target, source == target] and (B,) the training rows."""
        texts = decode(self.tokenizer, output)
        rows = batch["row"].cpu().numpy()
        exact = [(t == self.targets[r], self.sources[r] == self.targets[r]) for t, r in zip(texts, rows)]
        return {"pred": torch.tensor(exact, dtype=torch.float64).reshape(-1, 2),
                "target": torch.from_numpy(rows.astype(np.int64))}


def text_column(target: Target, pred: np.ndarray) -> dict[str, np.ndarray]:
    """The texts (cut's (rows, 1) of strings) as the one column."""
    return {target.columns[0]: np.asarray(pred, dtype=object).reshape(len(pred), -1)[:, 0]}


def check_submission(cells: pd.Series, sample: pd.Series, folder=None) -> None:
    """Every cell a text (an empty one is fine: the grader compares strings)."""
    wrong = [i for i, v in enumerate(cells) if not isinstance(v, str)]
    if wrong:
        raise KitError(f"submission row {wrong[0] + 2} holds {cells.iloc[wrong[0]]!r}, not a text ({len(wrong)} such rows)")


def the_tokens(t: Target, encoded: np.ndarray, metric: str) -> np.ndarray:
    """No constant a row: the prior is each token itself (copy), which `cut` writes where no fold predicted."""
    return np.zeros(1)


TEXT = register(Kind("text", text_column, "kit.train.seq2seq:check_submission", one_output=True,
                     describe=lambda t: "a text generated for each row", prior=the_tokens,
                     prior_name=named("copying each token"), prior_text=lambda t, name, known: "each token as it is"))
