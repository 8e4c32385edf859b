"""Template parameters: the contract every template's `parameters` cell mirrors, name for name.

A config's [params] and [smoke] tables and a notebook's globals are checked against these, so a typo is an
error naming the key, in the build and in the kernel alike. Each field's `doc` is the one source of its
comment in the notebooks' parameters cells and of docs/parameters.md (`make sync` writes both; a test holds
them equal). A template that means something else by a name says so in its class's DOCS.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kit import fields
from kit.fields import setting


@dataclass(frozen=True)
class TrainParams:
    """Names every template honours (DESIGN.md's parameter contract)."""

    DOCS: ClassVar[dict[str, str]] = {}

    data_dir: str = setting("", doc="competition input folder; empty finds it under /kaggle/input")
    output_dir: str = setting("", doc="checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle")
    mode: str = setting("train", choices=("train", "predict"),
                        doc="train, then predict; predict: only predict with the folds a training run left (model_dir)")
    model_dir: str = setting("", doc="predict mode: the training kernel's output; empty searches /kaggle/input")
    blend: tuple[str, ...] = setting((), doc="predict mode: the runs to blend (Kaggle sources or folders); empty "
                                             "predicts with the one run found")
    device: str = setting("auto", choices=("auto", "cuda", "cpu"), doc="auto, cuda or cpu")
    epochs: int = setting(10, minimum=1, doc="at most this many epochs per fold")
    folds: int = setting(5, minimum=1, doc="cross-validation folds; 1 is a single holdout split")
    lr: float = setting(1e-3, minimum=0.0, doc="peak AdamW learning rate (for a batch of 64 or fewer)")
    seed: int = setting(42)
    batch_size: int | str = setting("auto", choices=("auto",), minimum=1,
                                    doc="an int, or auto: the largest batch that fits and runs fastest")
    precision: str = setting("auto", choices=("auto", "fp32", "fp16", "bf16"),
                             doc="auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16")
    time_budget_s: float = setting(0.0, minimum=0.0,
                                   doc="wall-clock budget for the whole notebook; 0 is Kaggle's session limit")
    fallback: str = setting("prior", choices=("prior", "none"),
                            doc="no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops")
    weight_decay: float = setting(0.05, minimum=0.0, doc="AdamW weight decay (not on biases and norms)")
    warmup_epochs: float = setting(1.0, minimum=0.0, doc="linear warm-up, then cosine decay")
    patience: int = setting(3, minimum=0,
                            doc="epochs without a better score before a fold stops (from half the planned); 0 never")
    ema: bool = setting(True, doc="validate a moving average of the weights too (timm's ModelEmaV3) and keep the better")
    num_workers: int = setting(-1, minimum=-1, doc="loader processes; -1 picks from the CPU count")
    compile: bool = setting(False, doc="torch.compile the model (CUDA, sm_70 and newer): minutes of compiling for 10-30%")
    parallel: str = setting("auto", choices=("auto", "none", "folds", "ddp"),
                            doc="several GPUs: auto, none, folds (each GPU trains whole folds) or ddp")
    world_size: int = setting(0, minimum=0,
                              doc="worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)")


def sync_bn_setting():
    """The BatchNorm templates' `sync_bn` (kit.runtime.collective.sync_batchnorm decides "auto")."""
    return setting("auto", choices=("auto",), doc="ddp: BatchNorm statistics over every GPU's rows (SyncBatchNorm); "
                                                 "auto: only below 16 rows per GPU")


@dataclass(frozen=True)
class CnnParams(TrainParams):
    model_name: str = setting("efficientnet_b0", doc="any timm model name")
    pretrained: bool = setting(True, doc="start from ImageNet weights")
    weights_path: str = setting("", doc="local weights file (an attached dataset or model) for internet-off runs")
    image_size: int = setting(224, minimum=16, doc="training and prediction size in pixels")
    crop_scale: float | str = setting("auto", choices=("auto",), minimum=0.0, maximum=1.0,
                                      doc="smallest image share a training crop keeps; auto: 0.25 at 224 px and up, "
                                          "more below")
    hflip: float | str = setting("auto", choices=("auto",), minimum=0.0, maximum=1.0,
                                 doc="mirrored training images' share; auto: 0.5, or 0 where classes look different "
                                     "mirrored (digits)")
    vflip: float = setting(0.0, minimum=0.0, maximum=1.0, doc="upside-down training images' share")
    rotate90: bool = setting(False, doc="turn training images 0, 90, 180 or 270 degrees at random (satellite, microscopy)")
    tta: bool = setting(True, doc="average each prediction over the flipped and turned views training showed")
    mixup: float = setting(0.0, minimum=0.0, doc="mixup alpha, 0 is off (augmentation on the GPU, with soft targets)")
    cutmix: float = setting(0.0, minimum=0.0, doc="cutmix alpha, 0 is off")
    sync_bn: bool | str = sync_bn_setting()


@dataclass(frozen=True)
class AudioParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "folds": "cross-validation folds of whole clips; 1 is a single holdout split",
    }

    model_name: str = setting("efficientnet_b0", doc="any timm model name: a 2-D CNN reading one log-mel channel")
    pretrained: bool = setting(True, doc="start from ImageNet weights (timm adapts the first layer to one channel)")
    weights_path: str = setting("", doc="local weights file (an attached dataset or model) for internet-off runs")
    sample_rate: int | str = setting("auto", choices=("auto",), minimum=1,
                                     doc="Hz each clip is resampled to at decode; auto: the first training clip's (.csv: set it)")
    window_s: float | str = setting("auto", choices=("auto",), minimum=0.05,
                                    doc="seconds of a training crop and a prediction window; auto: the median clip, at most 10 s")
    n_fft: int | str = setting("auto", choices=("auto",), minimum=16,
                               doc="STFT size in samples; auto: the power of two nearest 32 ms")
    hop: int | str = setting("auto", choices=("auto",), minimum=1, doc="STFT hop in samples; auto: n_fft / 4")
    n_mels: int = setting(64, minimum=8, doc="mel bands: the spectrogram image's height")
    fmin: float = setting(0.0, minimum=0.0, doc="lowest frequency the mel bands cover, Hz")
    fmax: float | str = setting("auto", choices=("auto",), minimum=1.0,
                                doc="highest frequency the mel bands cover, Hz; auto: half the sample rate")
    top_db: float = setting(80.0, minimum=1.0, doc="decibels below each clip's peak its spectrogram is clipped at")
    level: bool = setting(False, doc="keep each spectrogram's loudness (fixed-scale decibels), not normalise it away")
    gain_db: float = setting(6.0, minimum=0.0, doc="training clips' random gain, within this many decibels either way")
    shift: float = setting(0.0, minimum=0.0, maximum=1.0, doc="training clips rolled in time by up to this share of a window")
    freq_masks: int = setting(2, minimum=0, doc="SpecAugment: masked bands of mel bins per training clip")
    freq_width: float = setting(0.1, minimum=0.0, maximum=1.0, doc="SpecAugment: a frequency mask's widest share of the bins")
    time_masks: int = setting(2, minimum=0, doc="SpecAugment: masked spans of frames per training clip")
    time_width: float = setting(0.05, minimum=0.0, maximum=1.0, doc="SpecAugment: a time mask's widest share of the frames")
    mixup: float = setting(0.0, minimum=0.0, doc="mixup alpha of the spectrograms, 0 is off (one class a clip only)")
    max_seconds: float = setting(0.0, minimum=0.0,
                                 doc="seconds of each clip's start the cache keeps (0: whole clips): a large set's fit")
    noisy_weight: float = setting(0.0, minimum=0.0, maximum=1.0,
                                  doc="loss weight of [data] extra_train's rows (a noisy set); 0 leaves them out")
    tta_hop: float = setting(0.5, minimum=0.05, maximum=1.0,
                             doc="prediction windows start this share of a window apart; their predictions are averaged")
    sync_bn: bool | str = sync_bn_setting()


@dataclass(frozen=True)
class SequenceParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "folds": "cross-validation folds of whole sequences; 1 is a single holdout split",
        "num_workers": "unused by sequences (batches are gathered in place); kept for the contract",
        "compile": "torch.compile the model (CUDA, sm_70 and newer)",
    }

    d_model: int = setting(128, minimum=8, doc="width of the input projection (features and embeddings)")
    hidden_size: int = setting(256, minimum=8, doc="LSTM units per direction")
    num_layers: int = setting(3, minimum=1, doc="stacked bidirectional LSTM layers")
    dropout: float = setting(0.1, minimum=0.0)
    nhead: int = setting(8, minimum=1, doc="attention heads: the Transformer template's; the LSTM has none")
    conv_kernel: int = setting(3, minimum=0, doc="a 1-D convolution over time before the LSTM; 0 is off")
    patience: int = setting(6, minimum=0)
    weight_decay: float = setting(0.01, minimum=0.0)
    epochs: int = setting(40, minimum=1)


@dataclass(frozen=True)
class LstmParams(SequenceParams):
    pass


@dataclass(frozen=True)
class TransformerParams(SequenceParams):
    DOCS: ClassVar[dict[str, str]] = {
        **SequenceParams.DOCS,
        "d_model": "width of the model: the input projection and every encoder layer",
        "hidden_size": "width of each feed-forward block",
        "num_layers": "encoder layers",
        "nhead": "attention heads (d_model must be a multiple of it)",
        "conv_kernel": "a 1-D convolution over time before the encoder; 0 is off",
    }

    num_layers: int = setting(4, minimum=1)
    hidden_size: int = setting(512, minimum=8)


@dataclass(frozen=True)
class TextParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "lr": "peak AdamW learning rate of the top layer and the head (for a batch of 64 or fewer)",
        "batch_size": "an int, or auto: the largest batch of the longest texts that fits and runs fastest",
        "num_workers": "unused by text (token ids are batched in this process); kept for the contract",
        "compile": "torch.compile the model (CUDA, sm_70 and newer)",
    }

    model_path: str = setting("", doc="Hugging Face model folder (config, weights, tokenizer); a path or a name")
    max_length: int | str = setting("auto", choices=("auto",), minimum=8,
                                    doc="tokens per text at most (longer are cut); auto: the model's, at most 512, "
                                        "and the longest text's")
    layer_decay: float = setting(0.9, minimum=0.0, maximum=1.0,
                                 doc="each layer down learns at this times the rate of the one above; 1 is off")
    gradient_checkpointing: bool = setting(False, doc="recompute activations in backward: a third slower, much less memory")
    accumulate: int = setting(1, minimum=1, doc="batches per optimizer step (an effective batch of accumulate x batch_size)")
    lr: float = setting(2e-5, minimum=0.0)
    epochs: int = setting(4, minimum=1)
    weight_decay: float = setting(0.01, minimum=0.0)
    warmup_epochs: float = setting(0.5, minimum=0.0)
    patience: int = setting(0, minimum=0)
    ema: bool = setting(False)


@dataclass(frozen=True)
class SpansParams(TextParams):
    DOCS: ClassVar[dict[str, str]] = {
        **TextParams.DOCS,
        "batch_size": "an int, or auto: the largest batch of the longest windows that fits and runs fastest",
    }

    max_length: int = setting(384, minimum=16,
                              doc="tokens per window (question, context, special tokens); longer contexts: more windows")
    doc_stride: int = setting(128, minimum=0,
                              doc="tokens a context's windows overlap by: an answer one window cuts is whole in the next")
    max_answer_length: int = setting(64, minimum=1, doc="tokens a predicted span holds at most")
    max_examples: int = setting(0, minimum=0, doc="tf2-qa: training pages kept from the JSONL, streamed (0: all)")
    negatives: float = setting(1.0, minimum=0.0, doc="tf2-qa: unanswered training pages kept, per answered one")


@dataclass(frozen=True)
class Seq2SeqParams(TextParams):
    DOCS: ClassVar[dict[str, str]] = {
        **TextParams.DOCS,
        "lr": "peak AdamW learning rate of the top blocks and the LM head (for a batch of 64 or fewer)",
        "batch_size": "an int, or auto: the largest batch of the longest inputs that fits and runs fastest",
    }

    max_length: int = setting(64, minimum=8, doc="input tokens at most: the token and its neighbours (longer are cut)")
    max_new_tokens: int = setting(48, minimum=1, doc="tokens a generated text holds at most")
    num_beams: int = setting(1, minimum=1, doc="beam search's width; 1 is greedy (the fastest)")
    context_words: int = setting(3, minimum=0, doc="neighbours each side of a token in the model's input")
    table: bool = setting(True, doc="copy and a table of the training pairs answer the tokens seen; false: the model all")
    max_pairs: int = setting(200000, minimum=1, doc="training pairs the model learns from at most (changed ones "
                                                    "distinct, as many rare unchanged)")
    lr: float = setting(3e-4, minimum=0.0)
    layer_decay: float = setting(1.0, minimum=0.0, maximum=1.0,
                                 doc="each block down learns at this times the rate of the one above; 1 is off")
    epochs: int = setting(3, minimum=1)


@dataclass(frozen=True)
class ImputationParams(TextParams):
    DOCS: ClassVar[dict[str, str]] = {
        **TextParams.DOCS,
        "lr": "peak AdamW learning rate of the top layer and the heads (for a batch of 64 or fewer)",
        "batch_size": "an int, or auto: the largest batch of the longest sentences that fits and runs fastest",
    }

    max_length: int = setting(96, minimum=8, doc="tokens per sentence at most (a gap past it is not read)")
    train_rows: int = setting(1000000, minimum=0, doc="training sentences drawn at random from the file as it streams; "
                                                      "0: all")
    lr: float = setting(5e-5, minimum=0.0)
    epochs: int = setting(2, minimum=1)
    folds: int = setting(1, minimum=1)


@dataclass(frozen=True)
class TabularParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "epochs": "mlp: at most this many epochs per fold (the boosters count rounds)",
        "lr": "mlp: peak AdamW learning rate (for a batch of 64 or fewer); boosters: learning_rate",
        "batch_size": "mlp: an int, or auto: the largest batch that fits and runs fastest",
        "precision": "mlp: auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16, bf16",
        "weight_decay": "mlp: AdamW weight decay (not on biases and norms)",
        "warmup_epochs": "mlp: linear warm-up, then cosine decay",
        "patience": "mlp: epochs without a better score before a fold stops (from half the planned); 0 never",
        "ema": "mlp: validate a moving average of the weights too (timm's ModelEmaV3), keep the better",
        "num_workers": "unused by tables (batches are gathered in place); kept for the contract",
        "compile": "mlp: torch.compile the model (CUDA, sm_70 and newer)",
        "parallel": "several GPUs: auto, none, folds (each GPU trains whole folds) or ddp (the mlp only)",
    }

    model_name: str = setting("xgboost", choices=("xgboost", "lightgbm", "catboost", "mlp"),
                              doc="xgboost, lightgbm, catboost (trees; xgboost, catboost on the GPU) or mlp (a network)")
    rounds: int = setting(10000, minimum=1,
                          doc="boosters: at most this many rounds per fold (early stopping, the budget: fewer)")
    learning_rate: float = setting(0.05, minimum=0.0, doc="boosters: each round's shrinkage")
    early_stopping_rounds: int = setting(200, minimum=0,
                                         doc="boosters: rounds without a better validation score before a fold stops")
    max_depth: int = setting(6, minimum=1, doc="xgboost, catboost: tree depth (lightgbm grows num_leaves leaves)")
    num_leaves: int = setting(31, minimum=2, doc="lightgbm: leaves per tree")
    subsample: float = setting(0.8, minimum=0.0, maximum=1.0, doc="boosters: the share of rows each tree sees")
    colsample: float = setting(0.8, minimum=0.0, maximum=1.0,
                               doc="xgboost, lightgbm: the share of columns each tree sees")
    train_rows: int = setting(0, minimum=0,
                              doc="training rows read, drawn at random; 0: all (a table too big for the memory stops)")
    models_by: str = setting("", doc="boosters: one per value of this feature (champs' types); \"\" one for all")
    hidden_size: int = setting(256, minimum=8, doc="mlp: units per hidden layer")
    num_layers: int = setting(3, minimum=1, doc="mlp: hidden layers")
    dropout: float = setting(0.1, minimum=0.0, maximum=0.9, doc="mlp: dropout after each hidden layer")
    epochs: int = setting(40, minimum=1)
    lr: float = setting(2e-3, minimum=0.0)
    weight_decay: float = setting(0.01, minimum=0.0)
    patience: int = setting(8, minimum=0)


@dataclass(frozen=True)
class SegmentationParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "batch_size": "an int, or auto: the largest batch of tiles that fits and runs fastest",
        "folds": "cross-validation folds of whole images; 1 is a single holdout split",
    }

    model_name: str = setting("Unet", doc="smp architecture: Unet, UnetPlusPlus, FPN, DeepLabV3Plus, Segformer, ...")
    encoder: str = setting("tu-resnet34", doc="encoder: tu-<any timm model>, or one of smp's own (resnet34, ...)")
    pretrained: bool = setting(True, doc="start the encoder from ImageNet weights")
    weights_path: str = setting("", doc="local encoder weights file (an attached dataset or model) for internet-off runs")
    image_size: int = setting(256, minimum=32,
                              doc="tile side in pixels, a multiple of 32: smaller images mirrored out to it, larger tiled")
    tile_overlap: float = setting(0.25, minimum=0.0, maximum=0.75, doc="share of a prediction tile its neighbours overlap")
    tissue_min: float = setting(0.0, minimum=0.0, maximum=1.0,
                                doc="tiles under this share of tissue (coloured pixels): not trained on, predicted empty")
    classes: int = setting(0, minimum=0,
                           doc="mask classes; 0 reads them from the data (two mask values: binary; more: class indices)")
    crop_scale: float = setting(0.5, minimum=0.1, maximum=1.0,
                                doc="smallest share of a training tile a crop keeps (zoomed back to the tile)")
    hflip: float = setting(0.5, minimum=0.0, maximum=1.0, doc="mirrored training tiles' share")
    vflip: float = setting(0.0, minimum=0.0, maximum=1.0, doc="upside-down training tiles' share")
    rotate90: bool = setting(False, doc="turn training tiles 0, 90, 180 or 270 degrees at random (satellite, microscopy)")
    tta: bool = setting(True, doc="average predictions over the flips and turns training made, each undone on the mask")
    dice_weight: float = setting(1.0, minimum=0.0, doc="the loss is cross-entropy + dice_weight x Dice (masks)")
    postprocess: bool = setting(True, doc="each class's threshold and smallest kept component chosen out of fold (else 0.5)")
    sync_bn: bool | str = sync_bn_setting()
    epochs: int = setting(20, minimum=1)
    lr: float = setting(5e-4, minimum=0.0)
    weight_decay: float = setting(0.01, minimum=0.0)
    patience: int = setting(5, minimum=0)


@dataclass(frozen=True)
class DetectionParams(TrainParams):
    DOCS: ClassVar[dict[str, str]] = {
        "folds": "cross-validation folds of whole images; 1 is a single holdout split",
        "tta": "predict each image mirrored too, the two views' boxes fused",
    }

    model_name: str = setting("resnet34", doc="the backbone: any timm model with features_only (under an FPN and Faster R-CNN)")
    pretrained: bool = setting(True, doc="start the backbone from ImageNet weights")
    weights_path: str = setting("", doc="local backbone weights file (an attached dataset or model) for internet-off runs")
    image_size: int = setting(512, minimum=64, doc="side in pixels, a multiple of 32: every image is cached at it, boxes scaled")
    crop_scale: float = setting(0.6, minimum=0.1, maximum=1.0,
                                doc="smallest share of the side a training crop keeps (zoomed back; boxes cut to it)")
    hflip: float = setting(0.5, minimum=0.0, maximum=1.0, doc="mirrored training images' share")
    tta: bool = setting(True)
    score_threshold: float = setting(0.0, minimum=0.0, maximum=1.0,
                                     doc="boxes below this confidence are left out of the submission (mAP: keep 0)")
    fusion_iou: float = setting(0.55, minimum=0.05, maximum=0.95,
                                doc="IoU above which boxes of views, folds or readers fuse into one (weighted box fusion)")
    max_detections: int = setting(100, minimum=1, doc="boxes an image keeps at most, by confidence")
    sync_bn: bool | str = sync_bn_setting()
    epochs: int = setting(20, minimum=1)
    lr: float = setting(2e-4, minimum=0.0)
    weight_decay: float = setting(1e-4, minimum=0.0)
    ema: bool = setting(False)
    patience: int = setting(5, minimum=0)


def doc(cls: type[TrainParams], name: str) -> str:
    """What parameter `name` means in template class `cls`: the class's own word for it, else its field's doc
    (a subclass that changes only a default keeps the doc of the field it overrides)."""
    for klass in cls.__mro__:
        if name in vars(klass).get("DOCS", {}):
            return klass.DOCS[name]
    for klass in cls.__mro__:
        field = vars(klass).get("__dataclass_fields__", {}).get(name)
        if field is not None and field.metadata.get("doc"):
            return field.metadata["doc"]
    return ""


def check(cls: type[TrainParams], values: Mapping[str, Any], where: str) -> TrainParams:
    return fields.build(cls, values, where)


def from_namespace(cls: type[TrainParams], namespace: Mapping[str, Any]) -> TrainParams:
    """The parameters `cls` names, as a notebook cell left them in its globals."""
    return fields.build(cls, {n: namespace[n] for n in fields.names(cls) if n in namespace}, "parameters cell")
