"""segmentation_models_pytorch (smp) models: an architecture (`model_name`: Unet, UnetPlusPlus, FPN,
DeepLabV3Plus, Segformer, ...) on an encoder (`encoder`: any timm model as `tu-<name>`, or one of smp's own),
its pretrained weights from a local file where one is given (internet off), checked names at build and set-up.

smp is not on Kaggle's image: a config that uses this template lists it in [kernel] packages (docs/offline.md).
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kit.errors import KitError
from kit.models.names import close_models, known, listed

STRIDE = 32  # every architecture's input side must be a multiple of its encoder's largest stride (smp: 32, or 16)


def _smp():
    import segmentation_models_pytorch as smp  # 5 s of torch, torchvision and timm imports: only where it is used

    return smp


def _architectures() -> list[str]:
    from segmentation_models_pytorch import MODEL_ARCHITECTURES_MAPPING

    return list(MODEL_ARCHITECTURES_MAPPING)


def architectures() -> list[str]:
    """smp's architecture names, listed once per smp version (kit.models.names.listed): a config's check at build
    does not import smp (~9 s) for them."""
    return listed("segmentation-models-pytorch", "architectures", _architectures)


def timm_name(encoder: str) -> str:
    """The timm model of a `tu-` encoder, without its pretrained tag ("" for smp's own encoders)."""
    return encoder[3:].split(".")[0] if encoder.startswith("tu-") else ""


def check_params(values: Mapping[str, Any], where: str) -> None:
    """A KitError unless smp knows the architecture and the encoder that `values` name (names they leave out keep
    the template's defaults), and image_size suits the encoders' strides."""
    if "model_name" in values and str(values["model_name"]).lower() not in architectures():
        close = difflib.get_close_matches(str(values["model_name"]).lower(), architectures(), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else f"smp has {', '.join(architectures())}"
        raise KitError(f"{where}: model_name = {values['model_name']!r} is not an smp architecture ({hint})")
    encoder = str(values.get("encoder", ""))
    if encoder.startswith("tu-"):
        if not known(timm_name(encoder)):
            close = [f"tu-{m}" for m in close_models(timm_name(encoder), 4)]
            hint = f"did you mean {', '.join(close)}?" if close else "no timm model has a similar name"
            raise KitError(f"{where}: encoder = {encoder!r} names no timm model ({hint}); write tu-<a name in "
                           "timm.list_models()> or one of smp's own encoders")
    elif encoder:
        smps = listed("segmentation-models-pytorch", "encoders", lambda: _smp().encoders.get_encoder_names())
        if encoder not in smps:
            close = difflib.get_close_matches(encoder, smps, n=3, cutoff=0.6)
            tu = f"tu-{encoder}" if known(encoder) else ""
            hint = f"timm has it: write {tu!r}" if tu else (f"did you mean {', '.join(close)}?" if close else
                                                          "write tu-<a timm model> for any timm encoder")
            raise KitError(f"{where}: encoder = {encoder!r} is neither smp's nor timm's ({hint})")
    size = values.get("image_size")
    if isinstance(size, int) and size % STRIDE:
        raise KitError(f"{where}: image_size = {size} is not a multiple of {STRIDE}, the encoders' largest stride; use "
                       f"{max(STRIDE, size // STRIDE * STRIDE)} or {(size // STRIDE + 1) * STRIDE}")


def normalization(encoder: str, channels: int = 3) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean and std (of RGB in [0, 1]) the encoder's pretrained weights expect: timm's for a `tu-` encoder,
    ImageNet's otherwise (smp's own encoders are ImageNet-trained). Other than three channels (a slab of layers),
    their averages in each: timm and smp give such an encoder its first convolution's RGB weights repeated and
    scaled to the channels' count, so each channel stands for the mean of the three."""
    import timm

    cfg = timm.models.get_pretrained_cfg(timm_name(encoder)) if timm_name(encoder) else None
    mean, std = ((tuple(cfg.mean), tuple(cfg.std)) if cfg is not None and cfg.mean and cfg.std
                 else ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))
    if channels == len(mean):
        return mean, std
    return (sum(mean) / len(mean),) * channels, (sum(std) / len(std),) * channels


def create(model_name: str, encoder: str, classes: int, in_channels: int = 3, weights: Path | None = None,
           pretrained: bool = False):
    """The smp model with `classes` output channels (logits). `weights`: a local file of the encoder's pretrained
    weights (a timm state dict for `tu-` encoders, timm reading it as it reads any pretrained file; smp's own
    encoders load it into the encoder); else `pretrained` asks the hub (timm's, or smp's on Hugging Face)."""
    smp = _smp()
    if weights is not None and encoder.startswith("tu-"):
        return smp.create_model(model_name, encoder_name=encoder, encoder_weights=True, in_channels=in_channels,
                                classes=classes, pretrained_cfg_overlay=dict(file=str(weights)))
    model = smp.create_model(model_name, encoder_name=encoder, in_channels=in_channels, classes=classes,
                             encoder_weights=(True if encoder.startswith("tu-") else "imagenet") if pretrained and weights is None
                             else None)
    if weights is not None:
        state = load_state(weights)
        missing, unexpected = _keys(model.encoder, state)
        if missing:
            raise KitError(f"{weights}: {len(missing)} of the encoder's weights are not in this file (such as {missing[0]}); "
                           f"it is not a {encoder} state dict")
        state = {k: v for k, v in state.items() if k not in unexpected}
        model.encoder.load_state_dict(first_conv(model.encoder, state, in_channels), strict=False)
    return model


def first_conv(encoder, state: dict, in_channels: int) -> dict:
    """`state` with its RGB first convolution made `in_channels` wide (a slab of layers), as timm adapts a pretrained
    file it loads: the three channels' weights repeated and scaled by 3 / in_channels (timm's adapt_input_conv)."""
    if in_channels == 3:
        return state
    from timm.models import adapt_input_conv

    own = encoder.state_dict()
    return {k: adapt_input_conv(in_channels, v) if (v.ndim == 4 and v.shape[1] == 3 and k in own
                                                     and own[k].shape[1] == in_channels) else v
            for k, v in state.items()}


def set_head_bias(model, bias: list[float] | None) -> None:
    """The output convolution's bias set to `bias` (one value per output channel), where the model has smp's
    segmentation head."""
    import torch

    head = getattr(model, "segmentation_head", None)
    convs = [m for m in head.modules() if isinstance(m, torch.nn.Conv2d)] if head is not None else []
    if bias is None or not convs or convs[-1].bias is None or convs[-1].out_channels != len(bias):
        return
    with torch.no_grad():
        convs[-1].bias.copy_(torch.tensor(bias))


def load_state(path: Path) -> dict:
    import torch

    if str(path).endswith(".safetensors"):
        from safetensors.torch import load_file

        return load_file(str(path))
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state.get("state_dict", state) if isinstance(state, dict) else state


def _keys(module, state: dict) -> tuple[list[str], list[str]]:
    own = set(module.state_dict())
    return sorted(own - set(state)), sorted(set(state) - own)
