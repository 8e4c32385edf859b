"""The text template's model: a Hugging Face encoder from a local model folder, mean-pooled, and a linear head.

The encoder comes from `transformers`' Auto classes with `local_files_only=True`: the folder a Kaggle dataset
or model holds (config.json, the weights, the tokenizer's files), never the hub. A fold's checkpoint holds
this module's state; prediction builds the encoder from the folder's config alone (no pretrained weights
read) and loads the fold's state into it.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from torch import nn

from kit.data.spans import PAD_LOGIT
from kit.data.text import tokenizer_key
from kit.errors import KitError

# a save_pretrained folder's weights: one of these
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")

# what timm's layer-wise learning-rate decay groups by (its `group_matcher` protocol): the embeddings, then
# each encoder layer by its number (encoder.layer.N in BERT, RoBERTa, DeBERTa, ELECTRA; transformer.layer.N
# in DistilBERT; layers.N in ModernBERT); the rest (the head, a pooler) is the top group, at the full rate
LAYER_GROUPS = {"stem": r"^backbone\.(?:[a-z_]+\.)?(?:embeddings|word_embedding)",
                "blocks": [(r"^backbone\.(?:[a-z_]+\.)?layers?\.(\d+)\.", None)]}


def hub_model(auto: str, folder: Path, pretrained: bool, gradient_checkpointing: bool, config=None) -> nn.Module:
    """transformers' `auto` class (AutoModel, AutoModelForSeq2SeqLM, AutoModelForMaskedLM) read from a local folder
    (`local_files_only`: no hub call), its weights or (`pretrained` false) its config's fresh ones, in fp32 whatever
    dtype the folder was saved in (transformers 5 keeps config.json's): autocast makes the half-precision copies, and
    the GradScaler refuses to unscale fp16 gradients. `gradient_checkpointing` recomputes activations in backward:
    longer texts or bigger batches fit."""
    import transformers
    from transformers.utils import logging

    logging.disable_progress_bar()  # a bar per fold model of a few ms each says nothing
    cls = getattr(transformers, auto)
    config = config or transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    if pretrained:
        net = cls.from_pretrained(folder, config=config, local_files_only=True)
    else:
        net = cls.from_config(config)
    net = net.float()
    if gradient_checkpointing:
        net.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return net


class TextModel(nn.Module):
    """input_ids (B, L), padded with `pad_id` -> (B, outputs). The attention mask is the ids that are not padding."""

    def __init__(self, folder: Path, outputs: int, pad_id: int, pretrained: bool = True, gradient_checkpointing: bool = False):
        super().__init__()
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
            if hasattr(config, name):  # dropout in a regression head's backbone hurts (a known Kaggle finding)
                setattr(config, name, 0.0)
        self.backbone = hub_model("AutoModel", folder, pretrained, gradient_checkpointing, config)
        if getattr(self.backbone, "pooler", None) is not None:
            # BERT's and RoBERTa's [CLS] pooler: unused by the mean pooling below, and under DDP a parameter
            # without a gradient stops the second step ("Expected to have finished reduction")
            self.backbone.pooler = None
        self.pad_id = pad_id
        self.head = nn.Linear(config.hidden_size, outputs)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask = input_ids.ne(self.pad_id)  # (B, L)
        hidden = self.backbone(input_ids=input_ids, attention_mask=mask.long()).last_hidden_state  # (B, L, H)
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)  # (B, H): the mean over real tokens
        return self.head(pooled)

    @torch.jit.ignore
    def group_matcher(self, coarse: bool = False) -> dict:
        return LAYER_GROUPS


def fingerprint(folder: Path, tokenizer: str = "") -> str:
    """What identifies the model a folder holds, cheaply: its config.json, its tokenizer files (`tokenizer`:
    their key, where the caller has it), and each weights file's size with its first and last MiB (hashing
    gigabytes of weights at every start would not be)."""
    h = hashlib.sha256((tokenizer or tokenizer_key(folder)).encode())
    config = folder / "config.json"
    h.update(config.read_bytes() if config.is_file() else b"")
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        size = path.stat().st_size
        h.update(f"{path.name}|{size}".encode())
        with open(path, "rb") as f:
            h.update(f.read(2**20))
            f.seek(max(size - 2**20, 0))
            h.update(f.read(2**20))
    return h.hexdigest()[:16]


def positions(folder: Path) -> int:
    """How many token positions the model folder's encoder has (0: no limit it states)."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # an unknown model_type (a newer transformers'), a broken config.json
        raise KitError(f"model folder {folder}: its config.json does not load ({type(e).__name__}: "
                       f"{str(e).splitlines()[0][:160]}); check the file, or the transformers version it needs") from None
    n = int(getattr(config, "max_position_embeddings", 0) or 0)
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "mpnet",
                                            "data2vec-text"):
        n -= 2  # RoBERTa-style positions start after the padding index
    if getattr(config, "position_biased_input", True) is False:
        return 0  # DeBERTa-v3: relative positions, no table that a longer text would overrun
    return max(n, 0)


def checked_positions(folder: Path, max_length: int | str) -> int:
    """The model folder's token positions (`positions`), after the checks a training run makes before it reads the
    data: the folder holds weights (else fold 1 would find out, minutes in), and a numeric `max_length` is within
    its positions ("auto" is settled later, within them)."""
    if not any((folder / name).is_file() for name in WEIGHTS):
        raise KitError(f"model folder {folder} has no weights (none of {', '.join(WEIGHTS)}); attach the folder "
                       "saved with the model's save_pretrained")
    limit = positions(folder)
    if max_length != "auto" and limit and max_length > limit:
        raise KitError(f"max_length {max_length} is beyond the {limit} token positions of the model in {folder} "
                       f"(its config.json); set max_length to {limit} or less")
    return limit


class SpanModel(TextModel):
    """input_ids (B, L) -> (B, L, 2) start and end logits of each token, padding's at PAD_LOGIT (never a span's end).
    With `kinds` (Natural Questions' answer types, kit.data.nq.KINDS), a second head on the first token's state
    (BERT's [CLS]) whose logits follow the tokens' as kinds / 2 more positions: (B, L + kinds / 2, 2)."""

    def __init__(self, folder: Path, pad_id: int, pretrained: bool = True, gradient_checkpointing: bool = False,
                 kinds: int = 0):
        super().__init__(folder, 2, pad_id, pretrained, gradient_checkpointing)
        self.kinds = nn.Linear(self.head.in_features, kinds) if kinds else None

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask = input_ids.ne(self.pad_id)  # (B, L)
        hidden = self.backbone(input_ids=input_ids, attention_mask=mask.long()).last_hidden_state  # (B, L, H)
        logits = self.head(hidden).masked_fill(~mask.unsqueeze(-1), PAD_LOGIT)  # (B, L, 2)
        if self.kinds is None:
            return logits
        kinds = self.kinds(hidden[:, 0]).view(len(hidden), -1, 2)  # (B, kinds / 2, 2)
        return torch.cat([logits, kinds.to(logits.dtype)], 1)  # (B, L + kinds / 2, 2)
