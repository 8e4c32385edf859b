"""The seq2seq template's model: a Hugging Face encoder-decoder (T5, mT5, ByT5, BART) from a local model folder,
read with `AutoModelForSeq2SeqLM` and `local_files_only=True` (never the hub), as kit.models.text reads an encoder.

T5's feed-forward activations exceed fp16's range (its weights were trained in bf16), so a T5-family model
(t5, mt5, umt5, longt5; ByT5 is a t5) trains and predicts in fp32 where `precision = "auto"` chose fp16 (a T4 has
no bf16); `precision = "fp16"`, asked for, keeps fp16 (`model_precision`, read at set-up: the loop only sees the
policy).

Training is teacher-forced: the decoder reads the target shifted right and the loss is the cross-entropy of each
target token (labels padded with -100 are left out). Prediction generates greedily or with a beam search, up to
`max_new_tokens` tokens.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from kit.errors import KitError
from kit.models import text
from kit.runtime import paths

IGNORE = -100  # labels' padding: the loss leaves it out (transformers' convention)

# layer-wise learning-rate decay's groups (timm's group_matcher): the shared embeddings, then each block by its number,
# the encoder's and the decoder's block N together (T5's block.N, BART's layers.N); the rest (the LM head) at the top
LAYER_GROUPS = {"stem": r"^net\.(?:shared|model\.shared|(?:model\.)?(?:encoder|decoder)\.embed_(?:tokens|positions))",
                "blocks": [(r"^net\.(?:model\.)?(?:encoder|decoder)\.(?:block|layers)\.(\d+)\.", None)]}


FP16_OVERFLOWS = ("t5", "mt5", "umt5", "longt5")  # model_types whose activations overflow fp16
T5_IN_FP32 = 'T5 in fp32: fp16 overflows its feed-forward (precision = "fp16" keeps fp16)'


def precision_for(precision: str, model_type: str, asked: str = "auto") -> str:
    """The precision a model of `model_type` trains in where the machine's choice is `precision` and [params]
    precision is `asked` (fp16 asked for is kept: a checkpoint fine-tuned to be fp16-safe)."""
    if precision == "fp16" and model_type in FP16_OVERFLOWS and asked != "fp16":
        return "fp32"
    return precision


def model_precision(precision: str, p) -> tuple[str, str]:
    """The seq2seq template's precision hook (kit.templates.Template.precision): (precision, its log line or "")
    for the model folder's config.json model_type; the machine's where the folder is not found yet (the data step
    says what is missing)."""
    try:
        config = paths.find_model(p.model_path) / "config.json" if p.model_path else None
        model_type = json.loads(config.read_text()).get("model_type", "") if config and config.is_file() else ""
    except (KitError, OSError, ValueError):
        model_type = ""
    chosen = precision_for(precision, model_type, p.precision)
    return chosen, (T5_IN_FP32 if chosen != precision else "")


class Seq2SeqModel(nn.Module):
    """input_ids (B, L) padded with `pad_id`, labels (B, T) padded with IGNORE -> the mean token cross-entropy."""

    def __init__(self, folder: Path, pad_id: int, pretrained: bool = True, gradient_checkpointing: bool = False):
        super().__init__()
        self.net = text.hub_model("AutoModelForSeq2SeqLM", folder, pretrained, gradient_checkpointing)
        self.pad_id = pad_id

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.net(input_ids=input_ids, attention_mask=input_ids.ne(self.pad_id).long(), labels=labels).loss

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, num_beams: int = 1) -> torch.Tensor:
        """(B, T) generated ids (the decoder's start token first), padded with the pad id after each one's end."""
        return self.net.generate(input_ids=input_ids, attention_mask=input_ids.ne(self.pad_id).long(),
                                 max_new_tokens=max_new_tokens, num_beams=num_beams, do_sample=False)

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False) -> dict:
        return LAYER_GROUPS
