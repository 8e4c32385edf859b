"""A tiny Hugging Face encoder and tokenizer built locally, for the text template's smoke runs and tests.

Nothing is downloaded: a WordPiece tokenizer (`tokenizers`) gets a vocabulary counted from the smoke texts and a BERT-shaped
encoder of a few thousand weights is initialised from `transformers`' config class, both saved with
`save_pretrained` as a model folder on Kaggle holds them (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json), so the kernel loads them with the Auto classes and `local_files_only=True`.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.data import archives, tables
from kit.spec import Spec

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_tiny_encoder(texts: Iterable[str], folder: Path, seed: int = 0, vocab_size: int = 400,
                       max_positions: int = 128, hidden: int = 32, layers: int = 2, heads: int = 2) -> Path:
    """A WordPiece tokenizer with the words of `texts` (and their characters), saved with a randomly initialised
    (seeded) BERT encoder under `folder`. Returns `folder`."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    # The vocabulary is counted here, not learned by tokenizers' WordPiece trainer: the trainer breaks ties
    # between merges in hash-map order, so two builds would number (and even choose) tokens differently.
    # accents kept: stripping them drops Devanagari and Tamil vowel signs, and a span mapped back lost its last one
    normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    splitter = pre_tokenizers.BertPreTokenizer()
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


# Words an essay draws from; higher-scored essays draw more of theirs from the richer list, and are longer.
PLAIN = ("the cars are bad because they make the air dirty and people get sick so we should use them less "
         "i think that students like phones and it is good to have fun at school with friends every day").split()
RICH = ("consequently emissions deteriorate urban air quality whereas autonomous vehicles could substantially mitigate "
        "congestion furthermore empirical evidence suggests that policymakers ought to prioritize sustainable "
        "infrastructure nevertheless adolescents benefit from structured extracurricular engagement").split()


def essays(n: int, rng, scores=(1, 2, 3, 4, 5, 6)) -> tuple[list[str], list[int]]:
    """`n` essays and their scores: a score of s gives about 40 + 35 s words, a share (s - 1) / 6 of them
    from the rich list, in sentences of 8 to 20 words."""
    texts, given = [], []
    for _ in range(n):
        score = int(rng.choice(scores))
        words = []
        for _ in range(int(rng.normal(40 + 35 * score, 15))):
            pool = RICH if rng.random() < (score - 1) / 6 else PLAIN
            words.append(pool[int(rng.integers(len(pool)))])
        sentences, i = [], 0
        while i < len(words):
            step = int(rng.integers(8, 21))
            sentences.append(" ".join(words[i : i + step]).capitalize() + ".")
            i += step
        texts.append(" ".join(sentences))
        given.append(score)
    return texts, given


def make_essays(spec: Spec, folder: Path, seed: int = 0, train: int = 240, test: int = 24) -> None:
    """learning-agency-lab-automated-essay-scoring-2's layout: train.csv essay_id,full_text,score (1 to 6),
    test.csv essay_id,full_text, sample_submission.csv essay_id,score (a code competition: Kaggle shows 3
    test essays; the smoke has more, so the submission says something)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    texts, scores = essays(train, rng)
    ids = [rng.bytes(4).hex() for _ in range(train + test)]
    key, target = spec.id_column, spec.target_column
    pd.DataFrame({key: ids[:train], **_columns(spec, texts), target: scores}).to_csv(folder / spec.train, index=False)
    test_texts, _ = essays(test, rng)
    pd.DataFrame({key: ids[train:], **_columns(spec, test_texts)}).to_csv(folder / spec.test, index=False)
    pd.DataFrame({key: ids[train:], target: 3}).to_csv(folder / spec.sample_submission, index=False)


def _columns(spec: Spec, texts: list[str]) -> dict[str, list[str]]:
    """The config's text columns: the essays in the first, a few of each essay's words in any other (a config of
    several, such as us-patent-phrase's anchor, target and context, reads them all)."""
    return {c: texts if j == 0 else [" ".join(t.split()[j: j + 3]) for t in texts] for j, c in enumerate(spec.text_columns)}


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    make_essays(spec, folder, seed)


def make_model_folder(spec: Spec, data_dir: Path, input_root: Path, parameters: dict, seed: int = 0) -> Path:
    """A tiny encoder and tokenizer over the smoke texts, where Kaggle mounts an attached model:
    <input>/models/<owner>/<model_path>/transformers/default/1/ (model_path names it by its name)."""
    with tempfile.TemporaryDirectory() as scratch:  # the training table as the kernel reads it (archived, JSON, TSV)
        train = tables.read_table(archives.find_file(data_dir, spec.train, "training table", Path(scratch), lambda line: None))
    texts = [t for c in spec.text_columns for t in train[c].fillna("").astype(str)]  # an empty cell reads as NaN
    folder = input_root / "models" / "kit" / parameters["model_path"] / "transformers" / "default" / "1"
    return build_tiny_encoder(texts, folder, seed, max_positions=512)
