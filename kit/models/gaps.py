"""The imputation template's model: a Hugging Face masked language model (BERT, RoBERTa, DeBERTa: AutoModelForMaskedLM
from a local folder, `local_files_only=True`, as kit.models.text reads an encoder) with a gap head beside its own.

- The gap head reads each gap between two words of a damaged sentence (the encoder's states of the token that opens
  the word after the gap and of the token before it, side by side) and gives it a logit: a softmax over a sentence's
  gaps is the chance that its missing word was there (every sentence misses exactly one).
- The masked-LM head fills the mask token put in a gap: its logits over the vocabulary, read at the mask only (the
  head alone runs on those states where the model has one head module beside its encoder; else every position's
  logits are made and the mask's kept).
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from kit.models import text

NO_GAP = -1e4  # a padded or unread gap's logit (within fp16's range)

# layer-wise learning-rate decay's groups (timm's group_matcher): the embeddings, then each encoder layer by its number
# (net.bert.encoder.layer.N, net.roberta.encoder.layer.N, net.deberta.encoder.layer.N); the rest (the heads) at the top
LAYER_GROUPS = {"stem": r"^net\.(?:[a-z_]+\.)?(?:embeddings|word_embedding)",
                "blocks": [(r"^net\.(?:[a-z_]+\.){0,2}layers?\.(\d+)\.", None)]}


class GapModel(nn.Module):
    """forward(ids, attention, gaps, gap_ok, mask_ids, mask_attention, mask_at) -> (gap logits (B, G), the mask's
    vocabulary logits (B, V))."""

    def __init__(self, folder: Path, pretrained: bool = True, gradient_checkpointing: bool = False):
        super().__init__()
        self.net = text.hub_model("AutoModelForMaskedLM", folder, pretrained, gradient_checkpointing)
        body = self.net.base_model
        heads = [name for name, m in self.net.named_children()
                 if m is not body and any(True for _ in m.parameters())]
        self.head_name = heads[0] if len(heads) == 1 else ""  # "" (DistilBERT's several modules): every position's logits
        hidden = self.net.config.hidden_size
        self.gap = nn.Linear(2 * hidden, 1)
        nn.init.normal_(self.gap.weight, std=0.02)
        nn.init.zeros_(self.gap.bias)

    def states(self, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        return self.net.base_model(input_ids=ids, attention_mask=attention).last_hidden_state

    def gap_logits(self, ids: torch.Tensor, attention: torch.Tensor, gaps: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        h = self.states(ids, attention)  # (B, L, H)
        width = h.shape[-1]
        at = h.gather(1, gaps.unsqueeze(-1).expand(-1, -1, width))
        before = h.gather(1, (gaps - 1).clamp(min=0).unsqueeze(-1).expand(-1, -1, width))
        logits = self.gap(torch.cat([before, at], -1)).squeeze(-1).float()
        return logits.masked_fill(~ok, NO_GAP)

    def word_logits(self, ids: torch.Tensor, attention: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(len(ids), device=ids.device)
        if self.head_name:
            h = self.states(ids, attention)[rows, at]  # (B, H)
            return getattr(self.net, self.head_name)(h).float()
        return self.net(input_ids=ids, attention_mask=attention).logits[rows, at].float()

    def forward(self, ids, attention, gaps, ok, mask_ids, mask_attention, mask_at) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gap_logits(ids, attention, gaps, ok), self.word_logits(mask_ids, mask_attention, mask_at)

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False) -> dict:
        return LAYER_GROUPS
