"""A run's resource plan (kit.runtime.resources): what every template's run holds and writes (validation rows, the
test predictions and their running sum, fold checkpoints, the blend files, the resume state, the submission), and
what its template adds (its record's `footprint`: caches, tables, tokens), from the run's sizes. The kernel prints
it before training, from the data it read, and refuses in one line only where nothing fits; `make plan` prints it
at a competition's real size from the config's [sizes]; the kernel's last line sets what it took beside it."""
from __future__ import annotations

import importlib
import json
from dataclasses import asdict, replace
from typing import Any

from kit import files, templates
from kit.data.layers import Layers
from kit.errors import KitError
from kit.metric_records import metric_key
from kit.params import TrainParams
from kit.run import predictions
from kit.runtime import paths, resources
from kit.runtime.resources import GB, Limits, Need, Plan, Sizes
from kit.runtime.session import Session
from kit.spec import Spec
from kit.train import metrics, targets, topk
from kit.train.cv import HOLDOUT

RECORD = "resources.json"  # in the output folder: the plan's totals, then what the run took
CSV_BYTES_PER_S = 15e6  # pandas writing a frame as text
# what a process's host memory grows by once its first steps load CUDA's libraries (cuBLAS, cuDNN, the kernels):
# 1.3 GB on an H200 (torch 2.11, CUDA 13), the plan made at 1.05 GB and the run's peak 2.32
CUDA_HOST_RAM = int(1.3 * GB)


def validation_rows(sizes: Sizes, folds: int) -> int:
    """Rows one fold validates: a holdout's share, or a fold's."""
    return int(sizes.train_rows * (HOLDOUT if folds == 1 else 1 / folds))


def common(sizes: Sizes, p: TrainParams, metric: str, device: str) -> list[Need]:
    """What every run needs, from its sizes: rows of predictions (of many classes, each row's likeliest:
    kit.train.topk), checkpoints, the blend files (kit.run.predictions), the resume state and the submission."""
    s, folds = sizes, p.folds
    val = validation_rows(s, folds) * s.row_steps
    oof = val if folds == 1 else s.train_rows * s.row_steps
    test_rows = s.test_rows * s.row_steps
    kind = targets.KINDS.get(s.kind)  # a [sizes] kind kit does not know: neither masks nor labels
    masks, labels = bool(kind and kind.masks), bool(kind and kind.multilabel)
    k_val = k_test = topk.kept(bool(kind and kind.likeliest), s.outputs, metric,  # as the kernel
                               max(s.train_rows * s.row_steps, test_rows))
    # a row's predictions in memory (float32, or a (class, probability) pair each), and as kept on disk
    val_row, test_row = 8 * k_val or 4 * s.outputs, 8 * k_test or 4 * s.outputs
    kept_row = 8 * k_val or s.outputs * topk.stored_dtype(s.outputs, 4 * s.outputs * oof).itemsize
    # its truth as a checkpoint keeps it: 0/1 labels of many outputs as bytes (kit.train.topk.stored), values, a class
    values = bool(kind and kind.by_column and not kind.classification and not labels)  # a float32 a column
    truth_row = s.outputs * (1 if s.outputs >= topk.WIDE else 4) if labels else 4 * s.outputs if values else 8
    if masks:  # validation keeps overlap counts of each image and class; prediction whole masks, float16 when large
        val_row = kept_row = 32 * s.outputs
        truth_row = 0
        test_row = s.outputs * s.pixels * (2 if test_rows * s.outputs * s.pixels * 4 > 2**30 else 4)
    weights = 4 * s.model_size
    passes = 2 if getattr(p, "ema", False) else 1
    kept = f"each row's {k_val} likeliest of {s.outputs:,} classes" if k_val else ""
    needs = [Need("validation rows", "ram", val * (val_row + truth_row) * (passes + 2), "training",
                  kept or f"{val:,} rows x {s.outputs:,} outputs, {passes} pass{'es' * (passes > 1)} and copies")]
    if labels and metric in metrics.THRESHOLDED:  # the cut search's masks of the truth and of a row's likeliest
        needs += [Need("the threshold search's masks", "ram", 3 * val * s.outputs, "training"),
                  Need("the threshold search over the out-of-fold rows", "ram", 2 * oof * s.outputs, "prediction")]
    sum_row = 8 * min(k_test * folds, topk.UNION) if k_test else test_row  # of many classes: the folds' union
    needs += [Need("test predictions, a fold's and their sum", "ram", test_rows * (test_row + sum_row), "prediction",
                   f"each row's {k_test} likeliest of {s.outputs:,} classes" if k_test else ""),
              Need("out-of-fold rows", "ram", 2 * oof * (kept_row + truth_row), "prediction")]
    if device == "cpu":
        needs.append(Need("the model, its gradients, Adam's and the EMA", "ram", 5 * weights, "training"))
    needs.append(Need("fold checkpoints", "output", folds * (weights + val * (kept_row + truth_row)),
                      note=f"{folds} x the weights ({weights / 2**20:.0f} MB) and validation rows"))
    blend = oof * (kept_row + min(truth_row, 4 * max(s.outputs, 1))) + folds * test_rows * kept_row
    if masks:
        needs.append(Need("blend files", "output", 0, note="masks are not kept for blends"))
        blend = 0
    elif blend > predictions.KEEP_BYTES:
        needs.append(Need("blend files", "output", 0, note=f"{blend / GB:.1f} GB: over the {predictions.KEEP_BYTES / GB:.0f} "
                          "GB kit keeps; not kept (no blends of this run)"))
        blend = 0
    else:
        needs.append(Need("blend files", "output", blend, note=kept or topk.stored_dtype(s.outputs, 4 * s.outputs * oof).name))
    # probabilities: a number a column; label sets: a trained model's few labels (every label a row's, untrained)
    per_row = {"probs": 12 * s.outputs, "onehot": 12 * s.outputs, "multi": 12 * s.outputs, "tags": 6 * min(s.outputs, 8)}
    submission = s.test_rows * s.outputs * 400 if masks else test_rows * (16 + per_row.get(s.kind, 16))
    needs += [Need("submission.csv", "output", submission, note="run-length codes of a few hundred characters" if masks
                   else ""),
              Need("resume state, a fold at a time", "scratch", weights * (2 + passes)),
              Need("writing the blend files and the submission", "tail",
                   blend / resources.WRITE_BYTES_PER_S + submission / CSV_BYTES_PER_S)]
    return needs


def plan(template: str, sizes: Sizes, p: TrainParams, spec: Spec, limits: Limits, device: str = "cuda",
         headline: str = "") -> Plan:
    """The run's plan: every template's needs and its own (its record's `footprint`), the model's parameters
    counted where the sizes do not give them."""
    record = templates.get(template)
    if record.kinds:  # its own kinds of target ([sizes] kind "rle"), which the shared table does not list
        importlib.import_module(record.kinds)
    own = templates.load(record.footprint)
    if not sizes.model_size:
        sizes = replace(sizes, model_size=own.parameters(p, sizes))
    if getattr(p, "train_rows", 0):  # a table read to train_rows (the rest sampled away)
        sizes = replace(sizes, train_rows=min(sizes.train_rows, p.train_rows))
    return Plan(common(sizes, p, spec.metric, device) + own.needs(sizes, p, spec, limits), headline=headline)


def with_workers(made: Plan, workers: int, each: int) -> Plan:
    """The plan of a run that trains in `workers` processes (a T4 x2's two: folds, or DDP ranks) while this one
    waits: each holds `each` bytes of its own (its libraries and its data) and its own training needs; prediction
    is this process's alone."""
    if not workers:
        return made
    needs = [replace(n, amount=n.amount * workers, what=f"{n.what}, in each of {workers} workers")
             if n.place == "ram" and n.phase == "training" else n for n in made.needs]
    return replace(made, needs=[*needs, Need(f"{workers} worker processes, each with its data", "ram", workers * each,
                                             "training")])


def workers_on(machine_shape: str, p: TrainParams) -> int:
    """The worker processes a run trains in on Kaggle's machine `machine_shape`, as kit.runtime.workers chooses them
    by default: two on a T4 x2 (its GPUs), none where `parallel` is "none"."""
    if p.parallel == "none" or machine_shape != "NvidiaTeslaT4":
        return 0
    return p.world_size or 2


def describe(sizes: Sizes, name: str = "") -> str:
    s = sizes
    kind = targets.KINDS.get(s.kind)
    what = f"{s.outputs:,} {'classes' if kind and kind.classification else 'outputs'}"
    return f"{name + ' at ' if name else ''}{s.train_rows:,} training and {s.test_rows:,} test rows, {what}"


def kernel_plan(session: Session, data: Any, workers: int = 0) -> Plan:
    """The kernel's plan, from the data it read (the process measured with it), printed before training; a plan
    no setting can bring within the machine's limits stops the run in one line. With `workers` (a T4 x2's two,
    training folds or DDP ranks), each worker holds what this process holds, its own CUDA libraries and its own
    training needs, while this process waits; prediction is this process's alone."""
    try:
        sizes = templates.load(templates.get(session.template).footprint).sizes(session, data)
    except (AttributeError, KeyError, TypeError) as e:  # data of a shape the template's record does not know
        session.warn(f"resource plan: the {session.template} template's sizes cannot be read from this data ({e}); "
                     "training goes on unplanned")
        return Plan([])
    limits = resources.machine_limits(session.output_dir, paths.scratch_dir(), paths.on_kaggle())
    made = plan(session.template, sizes, session.params, session.spec, limits, session.hardware.device,
                describe(sizes))
    made = resources.measured_base(made)
    if session.hardware.device == "cuda":  # a laptop's plan counts it in the libraries' share
        made.needs.append(Need("CUDA's libraries on the host (cuBLAS, cuDNN, kernels)", "ram", CUDA_HOST_RAM, "training"))
    made = with_workers(made, workers, made.base_ram)
    session.log(made.table(limits))
    files.write_text(session.output_dir / RECORD, json.dumps({"planned": made.totals(), "limits": asdict(limits)}, indent=1)
                     + "\n")
    over = made.over(limits)
    if over:
        raise KitError(f"resource plan: {over[0]}; lower folds, image_size or the rows read (train_rows), or run on a "
                       "larger machine")
    return made


def measured(session: Session) -> dict | None:
    """What the run took (its peak RAM, its output folder) beside what its plan said (RECORD, written before training),
    logged in one line and kept in the record; None where no plan was made here (predict mode)."""
    path = session.output_dir / RECORD
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    took = {"ram": resources.peak_rss(), "output": resources.folder_bytes(session.output_dir)}
    planned = record["planned"]
    session.log(f"resources: peak RAM {took['ram'] / GB:.2f} GB (planned {planned['ram'] / GB:.2f}), output "
                f"{took['output'] / GB:.2f} GB (planned {planned['output'] / GB:.2f})")
    files.write_text(path, json.dumps({**record, "measured": took}, indent=1) + "\n")
    return took


def completed(sizes: Sizes, spec: Spec) -> Sizes:
    """A config's [sizes] with what they leave to the metric and the template: the target's kind, the metric rows a
    sequence yields (its steps, per step), and the channels a slab of layers reads (the model's first convolution
    is as wide)."""
    kind = sizes.kind or kind_of(spec, sizes.outputs)
    steps = sizes.steps if spec.task == "per_step" and sizes.steps else 1
    channels = Layers(spec.layers).image_channels if spec.layers else sizes.channels
    return replace(sizes, kind=kind, row_steps=steps, channels=channels)


def kind_of(spec: Spec, outputs: int) -> str:
    """The target's kind a metric implies (kit.train.targets infers it from the data)."""
    metric = spec.metric
    if spec.template == "segmentation":
        return "pixels" if metric == "rmse" else "rle"
    if metric in metrics.LABEL_SETS:
        return "tags"
    if metric == "bias_auc":
        return "multi"
    if metric in (*metrics.VALUE_METRICS, "qwk"):
        return "value" if outputs == 1 else "values"
    if metric_key(metric) in topk.RANKING:
        return "label"
    return "binary" if outputs == 2 else "probs"
