"""Each template's part of the resource plan (kit.run.footprint): its sizes read from the data it loaded, its
model's parameters, and what it holds or writes beyond every run's rows (the decoded caches, tables, tokens). A
template's record names its object (`footprint`): here, or detection's in kit.pipelines.detection_footprint. Each is
three functions of plain values, so that `make plan` sizes a competition from a config's [sizes] alone."""
from __future__ import annotations

import json
from typing import Any

import torch

from kit.data import canvas, images, tiffs
from kit.data.nq import KIND_ROWS
from kit.models import segmentation
from kit.params import TrainParams
from kit.pipelines.nq import METRIC as NQ_METRIC
from kit.runtime import paths
from kit.runtime.resources import GB, Limits, Need, Sizes
from kit.spec import Spec
from kit.train import targets


def counted(build) -> int:
    """Parameters of the model `build()` makes, made on the meta device (no memory, no weights); 0 where it cannot."""
    try:
        with torch.device("meta"):
            return sum(t.numel() for t in build().parameters())
    except Exception:  # noqa: BLE001 - a model that cannot be made so is sized by its checkpoint at the end instead
        return 0


def cache_need(what: str, nbytes: int, limits: Limits, form: str) -> Need:
    """A decode-once cache in scratch, or nothing where it would not fit (kit.data.images.cache_refusal's rule: a
    tenth of the disk kept free, and within 80% of the RAM, whose page cache serves it): the images are then
    decoded again each epoch."""
    if nbytes <= paths.DISK_SHARE * limits.scratch and nbytes <= 0.8 * limits.ram:
        return Need(what, "scratch", nbytes, note=form)
    return Need(what, "scratch", 0, note=f"{nbytes / GB:.0f} GB would not fit: the images are decoded each epoch (slower)")


class Cnn:
    @staticmethod
    def sizes(session, data) -> Sizes:
        t = data.target
        form = getattr(data.test_cache, "form", None)
        return Sizes(len(data.usable), data.test_cache.count, t.outputs, t.kind,
                     side=images.cache_side(session.params.image_size), channels=data.recipe.get("channels", 3),
                     value_bytes=form.itemsize() if form is not None else 1)

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        import timm

        def build():
            try:
                return timm.create_model(p.model_name, num_classes=sizes.outputs, in_chans=sizes.channels, img_size=p.image_size)
            except TypeError:  # a CNN: any input size
                return timm.create_model(p.model_name, num_classes=sizes.outputs, in_chans=sizes.channels)

        return counted(build)

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        side = s.side or images.cache_side(p.image_size)
        cache = (s.train_rows + s.test_rows) * side * side * s.channels * s.value_bytes
        kind = targets.KINDS.get(s.kind)
        multilabel = bool(kind and kind.multilabel)
        labels = s.train_rows * (4 * s.outputs if multilabel else 8)
        return [cache_need("image cache", cache, limits, f"{side} px, uint8"),
                Need("training labels", "ram", labels, note="a 0/1 row per image" if multilabel else "")]


class Audio:
    """The wave cache: two bytes a sample of every clip and channel, at the run's rate ([sizes] samples: a clip's mean
    frames; channels: 1 for sound, mono, or an EEG montage's 16 bipolar channels)."""

    @staticmethod
    def sizes(session, data) -> Sizes:
        t = data.target
        clips = [c for c in (data.train_cache, data.test_cache) if c is not None]
        samples = sum(int(c.lengths().sum()) for c in clips) // max(1, sum(c.count for c in clips))
        return Sizes(len(data.usable), data.test_cache.count, t.outputs, t.kind, channels=data.recipe.get("channels", 1),
                     samples=samples)

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        import timm

        return counted(lambda: timm.create_model(p.model_name, num_classes=sizes.outputs, in_chans=sizes.channels))

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        cache = (s.train_rows + s.test_rows) * s.samples * s.channels * 2
        what = "mono" if s.channels == 1 else f"{s.channels} channels"
        return [cache_need("wave cache", cache, limits, f"{s.samples:,} samples a clip, {what} int16"),
                Need("training labels", "ram", s.train_rows * 8)]


# kit.data.tiffs' decode (and reduction) of a gigapixel TIFF, in millions of full-resolution pixels a second on one
# core: bench/tiff_decode.py, a 4,096 px square read whole as kit reads it, on this project's dev machine (AMD EPYC,
# 2 cores shared by others). An RGB slide at 1/4 (the reduction's mean is much of it): JPEG tiles 16.6, LZW strips
# 17.8, raw strips 27.2 with the machine quiet, 11.3, 6.4 and 7.5 with it loaded (load average 4); a 16-bit grey layer
# (vesuvius') at full size: 141 quiet, 78 loaded. Counted: about the loaded figures, a bound for a Kaggle vCPU.
TIFF_RGB_MPX_S = 8.0
TIFF_LAYER_MPX_S = 80.0


def decode_need(s: Sizes, spec: Spec) -> Need | None:
    """The seconds to decode gigapixel TIFFs (a `reduce` slide, or a fragment's `layers`) onto the canvases, on
    KAGGLE_CPUS workers, each image counted at the canvas's size (the largest image's): a bound."""
    if not (spec.reduce or spec.layers):
        return None
    reduce, planes = max(spec.reduce, 1), max(len(spec.layers), 1)
    pixels = (s.train_rows + s.test_rows) * s.height * s.width * reduce * reduce * planes
    rate = TIFF_LAYER_MPX_S if spec.layers else TIFF_RGB_MPX_S
    what = f"{planes} layers" if spec.layers else "RGB slides"
    return Need("decoding the TIFFs onto the canvases", "before", pixels / 1e6 / rate / KAGGLE_CPUS,
                note=f"at most: {pixels / 1e9:.1f} gigapixels of {what} at {rate:g} Mpx/s a core, {KAGGLE_CPUS} cores")


class Segmentation:
    @staticmethod
    def sizes(session, data) -> Sizes:
        t = data.test
        return Sizes(len(data.usable), t.count, data.recipe["outputs"], data.target.kind, height=t.height, width=t.width,
                     channels=t.channels)

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        return counted(lambda: segmentation.create(p.model_name, p.encoder, sizes.outputs, sizes.channels))

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        pixels = max(s.height, p.image_size) * max(s.width, p.image_size)  # canvases hold a tile at least
        channels = s.channels  # a slab of layers: one a channel (kit.run.footprint.completed, or the canvas read)
        canvases = s.train_rows * pixels * (channels + 1) + s.test_rows * pixels * channels
        decoding = decode_need(s, spec)
        return [cache_need("image and mask canvases", canvases, limits, f"uint8, {channels} channels"),
                Need("the masks cut from the sum", "ram", s.test_rows * s.outputs * pixels, "prediction"),
                decoded_need(s, spec, pixels, channels), *([decoding] if decoding else [])]


def decoded_need(s: Sizes, spec: Spec, pixels: int, channels: int) -> Need:
    """The largest image as its reader holds it before it is written to its canvas (kit.data.canvas), in each of
    the workers that decode at once (a pool where a split has more than a job's rows)."""
    if spec.layers:  # kit.data.layers: the slab, and one 16-bit layer as it is read
        each, how = pixels * (channels + 2), "its bytes and one 16-bit layer"
    elif spec.reduce:  # kit.data.tiffs.Tiff.reduced: a block of full-resolution rows in three copies, its means
        block = tiffs.BLOCK_ROWS * s.width * spec.reduce * 3
        each, how = pixels * 3 + 3 * block + 2 * 8 * block // spec.reduce ** 2, "its bytes, a block of rows read and averaged"
    else:  # an image file: PIL's image and its array
        each, how = 2 * pixels * channels, "its bytes as PIL and numpy hold them"
    workers = min(KAGGLE_CPUS, -(-max(s.train_rows, s.test_rows) // canvas.CHUNK_ROWS))
    return Need("the largest image, decoded", "ram", workers * each, "reading",
                f"{how}{f', in each of {workers} workers' if workers > 1 else ''}")


class Text:
    @staticmethod
    def sizes(session, data) -> Sizes:
        n = len(data.y) if data.y is not None else 0
        tokens = int(data.test.offsets[-1] / max(len(data.test), 1))
        folder = data.folder / "config.json"
        parameters = Text.from_config(json.loads(folder.read_text())) if folder.is_file() else 0
        return Sizes(n, len(data.test), data.target.outputs, data.target.kind, tokens=tokens, model_size=parameters)

    @staticmethod
    def from_config(config: dict[str, Any]) -> int:
        """A Transformer encoder's parameters from its config.json: 12 h^2 a layer and the embeddings (an
        encoder-decoder's, T5's d_model and its encoder's and decoder's layers, counted alike)."""
        h = config.get("hidden_size", config.get("d_model", 768))
        layers = config.get("num_hidden_layers",
                            config.get("num_layers", 6) + config.get("num_decoder_layers", config.get("num_layers", 6))
                            if "d_model" in config else 12)
        return 12 * h * h * layers + (config.get("vocab_size", 30522) + config.get("max_position_embeddings", 512)) * h

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        """Without the model's folder (a laptop's plan), by its name: the multilingual encoders' (their vocabularies of
        a quarter million words), DeBERTa-v3's sizes, BERT-base's otherwise."""
        name = p.model_path.lower()
        for part, count in (("xlm-roberta-large", 560_000_000), ("xlm-roberta-base", 278_000_000),
                            ("muril-large", 506_000_000), ("xsmall", 70_000_000), ("small", 141_000_000),
                            ("large", 435_000_000), ("base", 184_000_000)):
            if part in name:
                return count
        return 110_000_000

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        tokens = min(s.tokens, p.max_length) if isinstance(p.max_length, int) else s.tokens
        return [Need("the texts and their tokens", "ram", (s.train_rows + s.test_rows) * tokens * (4 + 8),
                     note=f"{tokens} tokens a text")]


# a table cell read as text: a Python string object (49 bytes and its characters) and its pointer, in Kaggle's pandas 2.2
# (object columns). Measured on champs at Kaggle's size: 4 text columns of 7.2M pairs took 2.15 GB, 75 bytes a cell
STRING_BYTES = 75
CHARS_PER_TOKEN = 4  # a subword token's characters in English text (a byte each in an ASCII str): a context's text
JOIN_ROW_BYTES = 60  # a joined row's share of the join: 55 bytes measured on champs (kit.data.joins)
class Spans(Text):
    """Rows are contexts, each cut into `windows` windows of up to max_length tokens: each window's tokens and their
    characters in the context, and at prediction each test window's start and end logits (max_length x 2, and
    Natural Questions' answer-type logits after them): the folds' running sum in memory (float32), a fold's in a
    float16 file in scratch (kit.pipelines.spans.predict): what a context of tens of thousands of tokens costs."""

    @staticmethod
    def sizes(session, data) -> Sizes:
        test = data.test_windows
        contexts = max(len(test.contexts), 1)
        train = len(data.train_windows.contexts) if data.train_windows is not None else 0
        folder = data.folder / "config.json"
        parameters = Text.from_config(json.loads(folder.read_text())) if folder.is_file() else 0
        return Sizes(train, len(test.contexts), data.target.outputs, data.target.kind,
                     tokens=int(test.tokens.offsets[-1] / max(len(test), 1)), windows=-(-len(test) // contexts),
                     model_size=parameters)

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s, length = sizes, p.max_length
        windows = max(s.windows, 1)
        tokens = min(s.tokens or length, length)
        note = f"{windows} window{'s' * (windows > 1)} a context of {tokens} tokens"
        test_windows = s.test_rows * windows
        new = max(tokens - p.doc_stride, 1) if windows > 1 else tokens  # a window's tokens the one before lacks
        rows = length + (KIND_ROWS if spec.metric == NQ_METRIC else 0)  # a window's positions of logits
        return [Need("the windows' tokens and their characters", "ram", (s.train_rows + s.test_rows) * windows * tokens
                     * (4 + 8), note=note),
                Need("the contexts' texts", "ram", (s.train_rows + s.test_rows) * windows * new * CHARS_PER_TOKEN,
                     note=f"~{CHARS_PER_TOKEN} characters a token"),
                Need("test windows' logits, the folds' running sum", "ram", test_windows * rows * 2 * 4, "prediction",
                     f"{test_windows:,} windows x {rows} positions x 2 logits, float32"),
                Need("test windows' logits, a fold's", "scratch", test_windows * rows * 2 * 2, "prediction",
                     "a fold's test logits float16 on scratch, memory-mapped")]
# a series file's features (kit.data.signal_features) take this long a million values on one core: 0.09 s measured
# for a 60,001 x 10 volcano segment (read 0.02, features 0.07) here, doubled for Kaggle's slower vCPUs
SERIES_S_PER_MILLION = 0.3
KAGGLE_CPUS = 4  # a GPU session's vCPUs: the feature step's workers


class Tabular:
    @staticmethod
    def sizes(session, data) -> Sizes:
        test = data.test
        columns = test.numbers.shape[1] + test.codes.shape[1]
        return Sizes(len(data.y) if data.y is not None else 0, len(data.where), data.target.outputs, data.target.kind,
                     columns=columns, strings=test.codes.shape[1] + 1)  # categories are read as text, and the ids

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        return 5_000_000  # a booster's trees (a few thousand, of 2^6 leaves) or the network: about 20 MB a fold

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        strings = f"; {s.strings} text column{'s' * (s.strings != 1)} at {STRING_BYTES} bytes a cell" if s.strings else ""
        needs = [Need("the tables (frames, then float32 features)", "ram",
                      (s.train_rows + s.test_rows) * (s.columns * 12 + s.strings * STRING_BYTES),
                      note=f"{s.columns} columns at 12 bytes a cell{strings}"),
                 Need("a fold's booster matrices", "ram", s.train_rows * s.columns * 8, "training")]
        if spec.train_series:  # volcano: each row's series file read once into a row of features, cached in scratch
            files, values = s.train_rows + s.test_rows, s.samples * s.channels
            seconds = files * values / 1e6 * SERIES_S_PER_MILLION / KAGGLE_CPUS
            needs.append(Need("the series files' features, cached", "scratch", files * s.columns * 4,
                              note=f"{files:,} files of {s.samples:,} x {s.channels} read once"))
            needs.append(Need("a series file read in each worker", "ram", KAGGLE_CPUS * values * 12, note="float32 and its text"))
            streamed = f"{files * values * 4 / GB:.1f} GB as float32, streamed on {KAGGLE_CPUS} vCPUs; none when cached"
            needs.append(Need("computing the series' features", "before", seconds, note=streamed))
        if spec.join_table:  # its keys' index and the joined columns: measured 0.39 GB on champs' 7.2M pairs (Kaggle's)
            needs.append(Need(f"the join of {spec.join_table} (keys' index, joined columns)", "ram",
                              (s.train_rows + s.test_rows) * JOIN_ROW_BYTES))
        return needs


class Sequence:
    @staticmethod
    def sizes(session, data) -> Sizes:
        test = data.test
        columns = test.x.shape[2] + test.cat.shape[2]
        steps = int(test.mask.sum(1).mean()) if data.per_step and len(test.ids) else 1  # a sequence's real steps
        return Sizes(len(data.train.ids) if data.train is not None else 0, len(test.ids), data.target.outputs,
                     data.target.kind, steps=test.length, columns=columns, row_steps=max(steps, 1))

    @staticmethod
    def parameters(p: TrainParams, sizes: Sizes) -> int:
        return 4 * p.num_layers * (2 * max(p.hidden_size, p.d_model)) ** 2  # an LSTM's or an encoder's, of each layer

    @staticmethod
    def needs(sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits) -> list[Need]:
        s = sizes
        per_row = s.columns * 4 + 8 + 8 + 1 + 4  # features, codes, row index, mask, weight
        return [Need("sequences, padded (the table read, then arrays)", "ram",
                     (s.train_rows + s.test_rows) * max(s.steps, 1) * per_row * 2)]
