"""Batch size for `batch_size="auto"`."""
from __future__ import annotations


def default_batch_size(session) -> int:
    return 64 if session.hardware.device == "cuda" else 32
