"""A tiny Hugging Face encoder-decoder and tokenizer built locally, for the seq2seq template's smoke runs and tests:
a character-level fast tokenizer (tokenizer.json, the characters of the smoke texts, no download) and a randomly
initialised (seeded) T5 of a few tens of thousands of weights, both saved with `save_pretrained` as a model folder
on Kaggle holds them; and the smoke data in text normalization's layout (kit.smoke.gallery.normalizing)."""
from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

from kit.data import archives, tables
from kit.smoke.gallery import normalizing
from kit.spec import Spec

SPECIAL = ["<pad>", "</s>", "<unk>"]  # T5's: the padding is the decoder's start token too


def build_tiny_t5(texts: Iterable[str], folder: Path, seed: int = 0, d_model: int = 32, layers: int = 2,
                  heads: int = 2) -> Path:
    """A tokenizer of one token a character of `texts` (each text ends with </s>), and a seeded T5 under `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    chars = sorted({c for t in texts for c in t})
    vocab = {t: i for i, t in enumerate(SPECIAL + chars)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tokenizer.decoder = decoders.Fuse()
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                             special_tokens=[("</s>", vocab["</s>"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   model_max_length=512)
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    config = T5Config(vocab_size=len(vocab), d_model=d_model, d_kv=d_model // heads, d_ff=2 * d_model, num_layers=layers,
                      num_decoder_layers=layers, num_heads=heads, dropout_rate=0.0, pad_token_id=0, eos_token_id=1,
                      decoder_start_token_id=0, tie_word_embeddings=False)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        T5ForConditionalGeneration(config).save_pretrained(folder)
    return folder


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    """Text normalization's layout, Russian where the config's files are ru_*, English otherwise."""
    normalizing.normalization(folder, "ru" if Path(spec.train).name.startswith("ru_") else "en", seed)


def make_model_folder(spec: Spec, data_dir: Path, input_root: Path, parameters: dict, seed: int = 0) -> Path:
    """A tiny T5 over the smoke texts' characters (tokens and answers, and the input's marks), where Kaggle mounts an
    attached model: <input>/models/<owner>/<model_path>/transformers/default/1/."""
    from kit.data.normalize import CLOSE, OPEN

    with tempfile.TemporaryDirectory() as scratch:
        train = tables.read_table(archives.find_file(data_dir, spec.train, "training table", Path(scratch), lambda line: None))
    texts = [OPEN + CLOSE, *(t for c in (*spec.text_columns, spec.target_column) for t in train[c].fillna("").astype(str))]
    folder = input_root / "models" / "kit" / parameters["model_path"] / "transformers" / "default" / "1"
    return build_tiny_t5(texts, folder, seed)
