"""The template registry: one record per template, everything the build, the kernel and the smoke need to know
about it. A new template is one record here, plus its own rooms (params class, pipeline, notebook prose, smoke maker);
or, from outside kit, its rooms and one record that `register` adds (its notebook is kit's skeleton's).

Floors above this one (pipelines, the smoke data) are named by their dotted path and imported only when
asked for (`load`), as timm's registries name model entry points: the kernel never imports the build side,
and nothing here imports upward.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any

from kit import params
from kit.errors import KitError

_SEQUENCE_KEYS = ("train", "test", "sample_submission", "id_column", "target_column", "sequence_column", "order_column",
                  "features", "categorical", "task", "score_mask")
# the [data] keys of a template whose labels are a table's (the pipeline's and the fallback's: kit.run.fallback)
_TABLE_READS = ("train", "test", "sample_submission", "id_column", "target_column", "submission_columns", "target_range")
_FOLD_READS = ("group_column", "fold_column")  # kit.pipelines.base.fold_keys
_SEQUENCE_READS = (*_TABLE_READS, "sequence_column", "order_column", "features", "categorical", "task", "score_mask",
                   "step_columns")


@dataclass(frozen=True)
class Template:
    name: str
    params: type[params.TrainParams]  # the parameters cell's contract
    data_keys: tuple[str, ...]  # the [data] keys the notebook's `competition` parameter shows even at their defaults
    # every [data] key it reads (data_keys among them): a config or parameters cell that sets another is refused
    # (kit.spec.refuse_unread), as [params] refuses a parameter the template does not have
    data_reads: tuple[str, ...]
    pipeline: str  # "module:Class" of its pipeline (kit.pipelines.base.Pipeline), or a function of the session making one
    smoke: str  # "module:function" writing smoke data in the competition's layout: (spec, folder, seed)
    # "module:function" writing what else the kernel mounts for a smoke run, beside the competition's data:
    # (spec, data_dir, input_root, parameters, seed); "" for nothing
    smoke_inputs: str = ""
    # it reads a Hugging Face model folder from an attached dataset or model: the hub stays offline, the
    # inference kernel is attached to the same sources, and the build warns when none is attached
    model_folder: bool = False
    channels_last: bool = False  # its batches are images, which convolutions read faster in channels_last
    prefetch: bool = True  # its loaders copy the next batch on a side stream (text builds its batches in place)
    # "module:function" checking the model names a [params] table or parameters cell sets: (values, where), at build
    # and at set-up, before any data is read; "" where the parameters' own choices say it all (the boosters)
    names: str = "kit.models.names:check_params"
    # pip requirements Kaggle's image lacks, which a config of this template lists in [kernel] packages (kit init
    # drafts them so): their wheels travel with the kernel as a dataset
    packages: tuple[str, ...] = ()
    # "module:object" of its part of the resource plan (kit.run.footprint): sizes(session, data), parameters(p, sizes)
    # and needs(sizes, p, spec, limits)
    footprint: str = ""
    # its training labels are values in a table, which alone give a submission where no model can (kit.run.fallback:
    # the prior, where the data cannot be read for training); segmentation's are masks
    labels_table: bool = True
    # "module" of its own whose import registers its own kinds of target (kit.train.kinds.register), which its pipeline
    # imports too: named here for a resource plan made without the pipeline (kit.run.footprint); "" for none
    kinds: str = ""
    # the kit.run verbs its notebook's last step draws with, each (session, cv) (kit.build.skeleton writes the cell)
    plots: tuple[str, ...] = ("plot_history",)
    # "module:attribute" of a record registered from outside kit (`register`), which its notebook registers the same
    # way before set-up; "" for kit's own
    origin: str = ""
    # "module:function" settling the precision its model trains in from the machine's: (precision name, parameters)
    # -> (precision name, a line for the log or ""); "" where the machine's is the model's (kit.run.start)
    precision: str = ""


TEMPLATES: dict[str, Template] = {t.name: t for t in (
    Template("cnn", params.CnnParams,
             ("train", "sample_submission", "id_column", "target_column", "train_images", "test_images", "image_ext"),
             (*_TABLE_READS, *_FOLD_READS, "layout", "train_images", "test_images", "image_ext", "image_path",
              "test_image_path", "label_pattern", "class_folders", "category_field", "array_columns", "identity_columns"),
             "kit.pipelines.cnn:CnnPipeline", "kit.smoke.images:make_dataset", channels_last=True,
             footprint="kit.pipelines.footprints:Cnn"),
    Template("audio", params.AudioParams,
             ("layout", "train", "sample_submission", "id_column", "target_column", "train_images", "test_images", "image_ext"),
             (*_TABLE_READS, *_FOLD_READS, "layout", "train_images", "test_images", "image_ext", "image_path",
              "test_image_path", "label_pattern", "class_folders", "identity_columns", "label_lists", "clip_table",
              "split_table", "label_separator", "extra_train", "extra_images", "sample_repeats"),
             "kit.pipelines.audio:AudioPipeline", "kit.smoke.audio:make_dataset", channels_last=True,
             footprint="kit.pipelines.footprints:Audio", kinds="kit.train.audio_kinds"),
    Template("lstm", params.LstmParams, _SEQUENCE_KEYS, _SEQUENCE_READS, "kit.pipelines.sequence:SequencePipeline",
             "kit.smoke.sequences:make_dataset", footprint="kit.pipelines.footprints:Sequence"),
    Template("transformer", params.TransformerParams, _SEQUENCE_KEYS, _SEQUENCE_READS,
             "kit.pipelines.sequence:SequencePipeline",
             "kit.smoke.sequences:make_dataset", footprint="kit.pipelines.footprints:Sequence"),
    Template("text", params.TextParams,
             ("train", "test", "sample_submission", "id_column", "target_column", "text_columns"),
             (*_TABLE_READS, *_FOLD_READS, "text_columns", "identity_columns"),
             "kit.pipelines.text:TextPipeline", "kit.smoke.text:make_dataset", smoke_inputs="kit.smoke.text:make_model_folder",
             model_folder=True, prefetch=False, footprint="kit.pipelines.footprints:Text"),
    Template("spans", params.SpansParams,
             ("train", "test", "sample_submission", "id_column", "target_column", "text_columns"),
             ("train", "test", "sample_submission", "id_column", "target_column", "submission_columns", *_FOLD_READS,
              "text_columns", "answer_start_column"),
             "kit.pipelines.spans:SpansPipeline", "kit.smoke.text:make_dataset", smoke_inputs="kit.smoke.text:make_model_folder",
             model_folder=True, prefetch=False, footprint="kit.pipelines.footprints:Spans", labels_table=False,
             kinds="kit.train.nq"),  # span and nq (which imports kit.train.spans)
    Template("seq2seq", params.Seq2SeqParams,
             ("train", "test", "sample_submission", "id_column", "target_column", "text_columns", "group_column",
              "order_column"),
             ("train", "test", "sample_submission", "id_column", "target_column", "submission_columns", "text_columns",
              "group_column", "order_column"),
             "kit.pipelines.seq2seq:Seq2SeqPipeline", "kit.smoke.seq2seq:make_dataset",
             smoke_inputs="kit.smoke.seq2seq:make_model_folder", model_folder=True, prefetch=False,
             footprint="kit.pipelines.footprints:Text", labels_table=False, kinds="kit.train.seq2seq",
             precision="kit.models.seq2seq:model_precision"),
    Template("imputation", params.ImputationParams,
             ("train", "test", "sample_submission", "id_column", "target_column", "text_columns"),
             ("train", "test", "sample_submission", "id_column", "target_column", "submission_columns", "text_columns"),
             "kit.pipelines.imputation:ImputationPipeline", "kit.smoke.imputation:make_dataset",
             smoke_inputs="kit.smoke.imputation:make_model_folder", model_folder=True, prefetch=False,
             footprint="kit.pipelines.imputation:Footprint", labels_table=False, kinds="kit.train.imputation"),
    Template("tabular", params.TabularParams,
             ("train", "test", "sample_submission", "id_column", "target_column", "features", "drop_columns", "categorical"),
             (*_TABLE_READS, *_FOLD_READS, "features", "drop_columns", "categorical", "join_table", "join_keys", "join_on",
              "join_columns", "join_distance", "score_groups", "id_parts", "baseline_key", "baseline_order", "score_mask",
              "train_series", "test_series", "series_columns"),
             "kit.pipelines.tabular:pipeline", "kit.smoke.tabular:make_dataset", names="",
             footprint="kit.pipelines.footprints:Tabular", plots=("plot_history", "plot_importance")),
    Template("segmentation", params.SegmentationParams,
             ("train", "sample_submission", "id_column", "target_column", "train_images", "train_masks", "test_images",
              "image_ext", "rle_order"),
             ("train", "sample_submission", "id_column", "target_column", "submission_columns", *_FOLD_READS, "train_images",
              "train_masks", "test_images", "image_ext", "mask_ext", "rle_order", "empty_mask", "bands", "band_frame", "slices",
              "class_column", "reduce", "layers"),
             "kit.pipelines.segmentation:SegmentationPipeline", "kit.smoke.segmentation:make_dataset", channels_last=True,
             names="kit.models.segmentation:check_params", packages=("segmentation-models-pytorch==0.6.0",),
             footprint="kit.pipelines.footprints:Segmentation", labels_table=False, kinds="kit.train.mask_kinds"),
    Template("detection", params.DetectionParams,
             ("train", "sample_submission", "id_column", "target_column", "train_images", "test_images", "image_ext"),
             ("train", "sample_submission", "id_column", "target_column", "submission_columns", "train_images",
              "test_images", "image_ext", "study_table"),
             "kit.pipelines.detection:DetectionPipeline", "kit.smoke.detection:make_dataset", channels_last=False,
             packages=("pydicom==3.0.2",), footprint="kit.pipelines.detection_footprint:Detection", labels_table=False,
             kinds="kit.train.box_kinds"),
)}


def names() -> tuple[str, ...]:
    return tuple(TEMPLATES)


def register(dotted: str) -> Template:
    """Add the template whose record `dotted` names ("module:attribute", importable wherever its notebook runs, as a
    record names its pipeline): a template from outside kit, whose notebook registers it the same way before set-up.
    The same record again changes nothing; another of a known name is an error."""
    record = dataclasses.replace(load(dotted), origin=dotted)
    if TEMPLATES.get(record.name, record) != record:
        raise KitError(f"register('{dotted}'): a template named '{record.name}' is known already; name yours otherwise")
    TEMPLATES[record.name] = record
    return record


def get(name: str) -> Template:
    if name not in TEMPLATES:
        raise KitError(f"unknown template '{name}' (known: {', '.join(TEMPLATES)})")
    return TEMPLATES[name]


def load(dotted: str) -> Any:
    """The object a record names as "module:attribute"."""
    module, _, attribute = dotted.partition(":")
    return getattr(importlib.import_module(module), attribute)
