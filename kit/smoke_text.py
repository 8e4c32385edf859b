"""A tiny Hugging Face encoder and tokenizer built locally, for the text template's smoke runs and tests.

Nothing is downloaded: a WordPiece tokenizer (`tokenizers`) gets a vocabulary counted from the smoke texts and a BERT-shaped
encoder of a few thousand weights is initialised from `transformers`' config class, both saved with
`save_pretrained` as a model folder on Kaggle holds them (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json), so the kernel loads them with the Auto classes and `local_files_only=True`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_tiny_encoder(texts: Iterable[str], folder: Path, seed: int = 0, vocab_size: int = 400,
                       max_positions: int = 128, hidden: int = 32, layers: int = 2, heads: int = 2) -> Path:
    """A WordPiece tokenizer with the words of `texts` (and their characters), saved with a randomly initialised (seeded) BERT encoder
    under `folder`. Returns `folder`."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    # The vocabulary is counted here, not learned by tokenizers' WordPiece trainer: the trainer breaks ties
    # between merges in hash-map order, so two builds would number (and even choose) tokens differently.
    normalizer, splitter = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(word for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text)))
    chars = sorted({c for word in counts for c in word})
    room = max(vocab_size - len(SPECIAL) - 2 * len(chars), 0)
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if len(w) > 1][:room]
    vocab = list(dict.fromkeys(SPECIAL + chars + [f"##{c}" for c in chars] + sorted(words)))
    tokenizer = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = normalizer, splitter
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_positions)
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    config = BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=max_positions)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        BertModel(config).save_pretrained(folder)
    return folder
