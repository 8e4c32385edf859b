"""The imputation template's smoke: billion-word-imputation's files (kit.smoke.gallery.sentences) and a tiny masked
language model built locally: kit.smoke.text's WordPiece tokenizer of the training sentences' words and a seeded BERT
with its masked-LM head (BertForMaskedLM), saved with `save_pretrained` as a model folder on Kaggle holds them."""
from __future__ import annotations

from pathlib import Path

from kit.data import gaps
from kit.smoke.gallery import sentences
from kit.smoke.text import build_tiny_encoder
from kit.spec import Spec


def build_tiny_masked_lm(texts: list[str], folder: Path, seed: int = 0, hidden: int = 64, layers: int = 2,
                         heads: int = 2) -> Path:
    """kit.smoke.text's tokenizer and encoder shape, the weights a BertForMaskedLM's (the encoder and its head)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    build_tiny_encoder(texts, folder, seed, max_positions=128, hidden=hidden, layers=layers, heads=heads)
    config = BertConfig.from_pretrained(folder)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        BertForMaskedLM(config).save_pretrained(folder)
    return folder


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    sentences.billion_word(folder, seed)


def make_model_folder(spec: Spec, data_dir: Path, input_root: Path, parameters: dict, seed: int = 0) -> Path:
    """A tiny masked LM over the training sentences' words, where Kaggle mounts an attached model:
    <input>/models/kit/<model_path>/transformers/default/1/."""
    texts = gaps.sample_lines(data_dir, spec.train, 0, seed, lambda line: None)
    folder = input_root / "models" / "kit" / parameters["model_path"] / "transformers" / "default" / "1"
    return build_tiny_masked_lm(texts, folder, seed)
