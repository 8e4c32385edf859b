"""`kit weights NAME`: pretrained weights saved on a machine with the internet and published as a Kaggle Model,
for kernels that run with it off; prints the config lines that attach and use them.

NAME is a timm model name (its pretrained weights, or those of a local file with --file, are saved as
model.safetensors: what `weights_path` loads through timm's file overlay), a Hugging Face model folder, or a
hub id (saved with save_pretrained, with its tokenizer, an encoder-decoder with its LM head: the folder
`model_path` names). The files go to kernels/weights/<slug>/ and become the next version of the model <you>/<slug>."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import timm
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoTokenizer

from kit import files
from kit.build import bundle, models
from kit.build.client import Client
from kit.errors import KitError
from kit.runtime.paths import MODEL_FILE

LICENSE = "Apache 2.0"
WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class Saved:
    kind: str  # "timm" or "transformers"
    name: str  # the timm model name, or the Hugging Face folder or id
    folder: Path  # kernels/weights/<slug>/
    slug: str


@dataclass(frozen=True)
class Weights:
    saved: Saved
    version: str  # owner/slug/framework/default/N: the model_sources entry

    def config_lines(self) -> str:
        """What to put in a competition config to attach these weights and load them."""
        relative = "/".join(self.version.split("/")[1:])  # found under /kaggle/input in every mount layout
        if self.saved.kind == "timm":
            params = (f'model_name = "{self.saved.name}"\npretrained = true\n'
                      f'weights_path = "{relative}/{WEIGHTS}"')
        else:
            params = f'model_path = "{relative}"'
        return f'[kernel]\nmodel_sources = ["{self.version}"]\n\n[params]\n{params}\n'


def kind_of(name: str) -> str:
    """"transformers" for a Hugging Face model folder or hub id, "timm" for a timm model name."""
    if Path(name).expanduser().is_dir():
        if not (Path(name).expanduser() / MODEL_FILE).is_file():
            raise KitError(f"{name} is a folder without {MODEL_FILE}; give a Hugging Face model folder, a hub id or a timm "
                           "model name")
        return "transformers"
    if timm.is_model(name):
        return "timm"
    if "/" in name:
        return "transformers"
    raise KitError(f"'{name}' is neither a timm model (timm.list_models() names them), a Hugging Face model folder nor a "
                   "hub id (owner/name)")


def save(name: str, out: Path | None = None, file: str = "", slug: str = "") -> Saved:
    """The weights of `name` in kernels/weights/<slug>/ (written whole): model.safetensors for timm, the
    save_pretrained folder with its tokenizer for Hugging Face. `file`: timm weights already on this machine."""
    kind = kind_of(name)
    slug = models.model_slug(slug or Path(name.rstrip("/")).name)
    folder = out or bundle.kernels_dir() / "weights" / slug
    if file and kind != "timm":
        raise KitError(f"--file is for timm weights; {name} is a Hugging Face model, whose folder holds its weights")
    with files.atomic_dir(folder) as tmp:
        if kind == "timm":
            _save_timm(name, tmp, file)
        else:
            _save_transformers(name, tmp)
    return Saved(kind, name, folder, slug)


def _save_timm(name: str, folder: Path, file: str) -> None:
    overlay = {}
    if file:
        if not Path(file).expanduser().is_file():
            raise KitError(f"--file {file}: no such file")
        overlay = {"pretrained_cfg_overlay": {"file": str(Path(file).expanduser())}}
    try:
        model = timm.create_model(name, pretrained=True, **overlay)
    except Exception as e:  # no pretrained weights for the name, no network, a file of another model
        raise KitError(f"timm could not load pretrained weights for {name} ({type(e).__name__}: "
                       f"{str(e).splitlines()[0][:200] if str(e) else ''}); check the name, the network or --file") from None
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(folder / WEIGHTS))


def _save_transformers(name: str, folder: Path) -> None:
    local = Path(name).expanduser().is_dir()
    try:
        config = AutoConfig.from_pretrained(name, local_files_only=local)
        # an encoder-decoder (T5, BART) as its LM class: AutoModel saves the bare T5Model, without the generation config
        # (the decoder's start and end tokens) and BART's final_logits_bias
        # a masked language model (BERT, RoBERTa, DeBERTa as published) as its masked-LM class: AutoModel drops the head
        # the imputation template fills its masks with; the text and spans templates' AutoModel reads the encoder in it
        masked = any(str(a).endswith("ForMaskedLM") for a in getattr(config, "architectures", None) or ())
        auto = (AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False)
                else AutoModelForMaskedLM if masked else AutoModel)
        model = auto.from_pretrained(name, config=config, local_files_only=local)
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=local)
    except Exception as e:  # no such id, no network, a folder transformers cannot read
        first = str(e).splitlines()[0][:200] if str(e) else ""
        raise KitError(f"transformers could not load {name} ({type(e).__name__}: {first}); check the name or the "
                       "folder") from None
    model.save_pretrained(folder)  # safetensors
    tokenizer.save_pretrained(folder)


def publish(name: str, file: str = "", slug: str = "", license_name: str = LICENSE, private: bool = True) -> Weights:
    """Save `name`'s weights and publish them as the next version of <you>/<slug>."""
    client = Client()
    saved = save(name, file=file, slug=slug)
    framework = "pytorch" if saved.kind == "timm" else "transformers"
    handle = models.Handle(client.creds.username, saved.slug, framework)
    local = "a local folder" if Path(name).expanduser().is_dir() else "the hub"
    source = f"a local file ({Path(file).name})" if file else local
    description = f"Pretrained weights of {name} ({saved.kind}), from {source}, saved by kit weights for internet-off kernels."
    number = models.publish(client, saved.folder, handle, saved.slug, description, license_name,
                            notes=f"kit weights {name}", private=private)
    return Weights(saved, handle.version(number))
