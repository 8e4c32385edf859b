"""Template parameters: the contract every template's `parameters` cell mirrors, name for name.

A config's [params] and [smoke] tables and a notebook's globals are checked against these, so a typo is an
error naming the key, in the build and in the kernel alike. Defaults here equal the template's cell (tested).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kit import fields
from kit.fields import setting


@dataclass(frozen=True)
class TrainParams:
    """Names every template honours (DESIGN.md's parameter contract)."""

    data_dir: str = ""  # competition input folder; "" finds it under /kaggle/input
    output_dir: str = ""  # checkpoints, logs, plots, submission.csv; "" is /kaggle/working on Kaggle
    # train: train the folds, then predict; predict: only predict, with the folds a training run left in model_dir
    mode: str = setting("train", choices=("train", "predict"))
    model_dir: str = ""  # predict mode: the training kernel's output; "" searches /kaggle/input
    device: str = setting("auto", choices=("auto", "cuda", "cpu"))
    epochs: int = setting(10, minimum=1)
    folds: int = setting(5, minimum=1)  # 1 is a single holdout split
    lr: float = setting(1e-3, minimum=0.0)
    seed: int = 42
    batch_size: int | str = setting("auto", choices=("auto",), minimum=1)
    precision: str = setting("auto", choices=("auto", "fp32", "fp16", "bf16"))  # auto: fp16 on a T4, bf16 on Ampere+
    time_budget_s: float = setting(0.0, minimum=0.0)  # 0: Kaggle's session limit less a margin
    weight_decay: float = setting(0.05, minimum=0.0)
    warmup_epochs: float = setting(1.0, minimum=0.0)
    patience: int = setting(3, minimum=0)  # epochs without a better score before a fold stops (from half the planned); 0 never
    ema: bool = True  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
    num_workers: int = setting(-1, minimum=-1)  # data loader processes; -1 from the CPU count
    compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer): minutes of compiling for ~10-30%
    parallel: str = setting("auto", choices=("auto", "none", "folds", "ddp"))  # several GPUs: folds at once or DDP
    world_size: int = setting(0, minimum=0)  # worker processes; 0 is every visible GPU (gloo on the CPU)


@dataclass(frozen=True)
class CnnParams(TrainParams):
    model_name: str = "efficientnet_b0"  # any timm model name
    pretrained: bool = True
    weights_path: str = ""  # local weights file for internet-off runs (an attached dataset or model)
    image_size: int = setting(224, minimum=16)
    # the smallest share of the image a training crop keeps; auto: 0.25 at 224 px and up, more on smaller images
    crop_scale: float | str = setting("auto", choices=("auto",), minimum=0.0, maximum=1.0)
    # the probability of a mirrored training image; auto: 0.5, or 0 where the classes look different mirrored (digits, text)
    hflip: float | str = setting("auto", choices=("auto",), minimum=0.0, maximum=1.0)
    vflip: float = setting(0.0, minimum=0.0, maximum=1.0)  # the probability of an upside-down training image
    rotate90: bool = False  # turn each training image 0, 90, 180 or 270 degrees at random (satellite, microscopy)
    tta: bool = True  # average predictions over the flipped and turned views that training showed
    mixup: float = setting(0.0, minimum=0.0)  # mixup alpha (0 is off), applied on the GPU
    cutmix: float = setting(0.0, minimum=0.0)  # cutmix alpha (0 is off)


@dataclass(frozen=True)
class SequenceParams(TrainParams):
    d_model: int = setting(128, minimum=8)  # width of the input projection (and of the Transformer)
    hidden_size: int = setting(256, minimum=8)  # LSTM units per direction; the Transformer's feed-forward width
    num_layers: int = setting(3, minimum=1)
    dropout: float = setting(0.1, minimum=0.0)
    nhead: int = setting(8, minimum=1)  # Transformer attention heads (the LSTM has none)
    conv_kernel: int = setting(3, minimum=0)  # a 1-D convolution over time before the backbone; 0 is off
    patience: int = setting(6, minimum=0)
    weight_decay: float = setting(0.01, minimum=0.0)
    epochs: int = setting(40, minimum=1)


@dataclass(frozen=True)
class LstmParams(SequenceParams):
    pass


@dataclass(frozen=True)
class TransformerParams(SequenceParams):
    num_layers: int = setting(4, minimum=1)
    hidden_size: int = setting(512, minimum=8)


@dataclass(frozen=True)
class TextParams(TrainParams):
    model_path: str = ""  # the Hugging Face model folder (config, weights, tokenizer), a path or its name under /kaggle/input
    max_length: int = setting(512, minimum=8)  # tokens per text at most (longer texts are cut)
    layer_decay: float = setting(0.9, minimum=0.0, maximum=1.0)  # each layer down learns at this times the rate above; 1 is off
    gradient_checkpointing: bool = False  # recompute activations in backward: a third slower, much less memory
    accumulate: int = setting(1, minimum=1)  # batches whose gradients make one optimizer step
    lr: float = setting(2e-5, minimum=0.0)
    epochs: int = setting(4, minimum=1)
    weight_decay: float = setting(0.01, minimum=0.0)
    warmup_epochs: float = setting(0.5, minimum=0.0)
    patience: int = setting(0, minimum=0)
    ema: bool = False


def check(cls: type[TrainParams], values: Mapping[str, Any], where: str) -> TrainParams:
    return fields.build(cls, values, where)


def from_namespace(cls: type[TrainParams], namespace: Mapping[str, Any]) -> TrainParams:
    """The parameters `cls` names, as a notebook cell left them in its globals."""
    return fields.build(cls, {n: namespace[n] for n in fields.names(cls) if n in namespace}, "parameters cell")
