"""Sequence models: a shared front end and heads around a bidirectional LSTM or a pre-norm Transformer.

    x (B, L, F) numeric, cat (B, L, K) codes, mask (B, L)
      -> front: [x, embeddings(cat)] -> Linear -> d_model, optional 1-D conv over time
      -> backbone: BiLSTM stack (2 * hidden_size out) | pre-norm Transformer encoder (d_model out)
      -> head: per step (B, L, outputs) or per sequence, masked mean + max pooled (B, outputs);
         a residual MLP (LayerNorm, Linear, GELU, Linear, + skip) then a linear output.
All of it is autocast-safe: attention is `scaled_dot_product_attention`, pooling runs in float32.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

_MODELS: dict[str, Callable[..., nn.Module]] = {}


def register_model(name: str):
    def add(fn):
        _MODELS[name] = fn
        return fn

    return add


def list_models() -> list[str]:
    return sorted(_MODELS)


def create_model(name: str, **kwargs) -> nn.Module:
    if name not in _MODELS:
        raise KeyError(f"unknown sequence model '{name}' (known: {', '.join(list_models())})")
    return _MODELS[name](**kwargs)


class Front(nn.Module):
    def __init__(self, features: int, cardinalities: list[int], d_model: int, conv_kernel: int, dropout: float):
        super().__init__()
        emb = [max(2, min(16, (n + 1) // 2 + 1)) for n in cardinalities]  # small embeddings for small vocabularies
        self.embeddings = nn.ModuleList(nn.Embedding(n + 1, e, padding_idx=0) for n, e in zip(cardinalities, emb))
        self.proj = nn.Sequential(nn.Linear(features + sum(emb), d_model), nn.GELU(), nn.Dropout(dropout))
        self.conv = nn.Conv1d(d_model, d_model, conv_kernel, padding=conv_kernel // 2) if conv_kernel > 1 else None
        # feature standardisation from the fold's training rows: state, so checkpoints carry it
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))

    def set_standardization(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        self.mean.copy_(mean)
        self.std.copy_(std)

    def forward(self, x: torch.Tensor, cat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std * mask.unsqueeze(-1)  # padding stays 0
        parts = [x] + [e(cat[..., k]) for k, e in enumerate(self.embeddings)]
        keep = mask.unsqueeze(-1).to(x.dtype)
        h = self.proj(torch.cat(parts, -1)) * keep  # (B, L, d_model), zero in padding
        if self.conv is not None:  # the convolution sees zeros past the end, whatever the padding held
            h = (h + F.gelu(self.conv(h.transpose(1, 2))).transpose(1, 2)) * keep  # (B, L, d_model), residual
        return h


class ResidualHead(nn.Module):
    def __init__(self, width: int, outputs: int, dropout: float):
        super().__init__()
        self.block = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout),
                                   nn.Linear(width, width))
        self.out = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, outputs))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.out(h + self.block(h))


def masked_pool(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, L, D) -> (B, 2D): mean and max over the real steps, in float32."""
    h = h.float()
    m = mask.unsqueeze(-1)
    mean = (h * m).sum(1) / m.sum(1).clamp(min=1)
    peak = h.masked_fill(~m, float("-inf")).amax(1)
    return torch.cat([mean, peak], -1)


class SequenceModel(nn.Module):
    def __init__(self, front: Front, backbone: nn.Module, width: int, outputs: int, per_step: bool, dropout: float):
        super().__init__()
        self.front, self.backbone, self.per_step = front, backbone, per_step
        self.head = ResidualHead(width if per_step else 2 * width, outputs, dropout)

    def forward(self, x: torch.Tensor, cat: torch.Tensor, mask: torch.Tensor,
                lengths: torch.Tensor | None = None) -> torch.Tensor:
        """`lengths`: (B,) real steps per sequence on the host, when the caller knows them (saves a device sync)."""
        h = self.backbone(self.front(x, cat, mask), mask, lengths)  # (B, L, width)
        return self.head(h) if self.per_step else self.head(masked_pool(h, mask))


class LSTMBackbone(nn.Module):
    def __init__(self, d_model: int, hidden_size: int, num_layers: int, dropout: float):
        super().__init__()
        self.lstm = nn.LSTM(d_model, hidden_size, num_layers, batch_first=True, bidirectional=True,
                            dropout=dropout if num_layers > 1 else 0.0)

    def forward(self, h: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if lengths is None:
            lengths = mask.sum(1).cpu()  # packing needs the lengths on the host: this waits for the device
        if int(lengths.min()) == mask.shape[1]:  # equal lengths (the usual case): no packing needed
            return self.lstm(h)[0]
        packed = nn.utils.rnn.pack_padded_sequence(h, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=mask.shape[1])[0]


def sinusoidal(length: int, dim: int, device) -> torch.Tensor:
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(length, dim, device=device)
    pe[:, 0::2] = torch.sin(position * freq)
    pe[:, 1::2] = torch.cos(position * freq)[:, : dim // 2]
    return pe  # (L, dim)


class EncoderBlock(nn.Module):
    """Pre-norm: x + attn(norm(x)), then x + ffn(norm(x))."""

    def __init__(self, d_model: int, nhead: int, ffn: int, dropout: float):
        super().__init__()
        self.nhead, self.dropout = nhead, dropout
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, ffn), nn.GELU(), nn.Dropout(dropout), nn.Linear(ffn, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        B, L, D = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, L, 3, self.nhead, D // self.nhead).permute(2, 0, 3, 1, 4)  # 3 x (B, nh, L, hs)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.drop(self.proj(attn.transpose(1, 2).reshape(B, L, D)))  # (B, L, D)
        return x + self.drop(self.ffn(self.norm2(x)))


class TransformerBackbone(nn.Module):
    def __init__(self, d_model: int, nhead: int, num_layers: int, ffn: int, dropout: float):
        super().__init__()
        if d_model % nhead:
            raise ValueError(f"d_model {d_model} is not a multiple of nhead {nhead}")
        self.blocks = nn.ModuleList(EncoderBlock(d_model, nhead, ffn, dropout) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, h: torch.Tensor, mask: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        h = h + sinusoidal(h.shape[1], h.shape[2], h.device).to(h.dtype)
        keep = mask[:, None, None, :]  # (B, 1, 1, L): attend to real steps only
        for block in self.blocks:
            h = block(h, keep)
        return self.norm(h)


@register_model("lstm")
def lstm(features, cardinalities, outputs, per_step, d_model=128, hidden_size=256, num_layers=3, dropout=0.1,
         conv_kernel=3, **_) -> SequenceModel:
    front = Front(features, cardinalities, d_model, conv_kernel, dropout)
    return SequenceModel(front, LSTMBackbone(d_model, hidden_size, num_layers, dropout), 2 * hidden_size, outputs,
                         per_step, dropout)


@register_model("transformer")
def transformer(features, cardinalities, outputs, per_step, d_model=128, nhead=8, num_layers=4, dropout=0.1,
                hidden_size=512, conv_kernel=3, **_) -> SequenceModel:
    front = Front(features, cardinalities, d_model, conv_kernel, dropout)
    return SequenceModel(front, TransformerBackbone(d_model, nhead, num_layers, hidden_size, dropout), d_model,
                         outputs, per_step, dropout)
