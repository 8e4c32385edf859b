"""The metric records: each metric kit scores, everything kit asks of it (its direction, its rows' family, its
scorer, how runs blend under it) in one `Metric`, and the views other modules read of the one table (`METRICS`).
A config's metric is checked against them (kit.spec), and a template takes the metrics of its family alone
(`metric_misfit`)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit import templates


@dataclass(frozen=True)
class Metric:
    """One metric: everything kit asks of it, read from this one record. `score` names the function that scores
    its rows by dotted path, imported only when rows are scored, so that a template's import closure holds only
    the rooms of the metrics it can be scored by (the mask metrics' are the segmentation template's)."""

    name: str  # "map@k" stands for map@1, map@5, ...: the mean average precision of each row's k labels, best first
    greater_is_better: bool
    # what its rows are: "probability" (class or label probabilities), "ranking" (only the order of a row's likeliest
    # classes counts), "ordinal" (whole scores, from probabilities or a regressed value), "value" (one or several values
    # a row, the mean over columns), "label_set" (labels above a threshold), "subgroup" (bias_auc: toxicity and
    # identities), "mask" (overlap counts of masks: kit.train.mask_metrics), "span" (windows' spans: kit.train.spans),
    # "box" (an image's boxes, kit.data.boxes.ImageBoxes: kit.train.box_metrics), "text" (generated texts:
    # kit.train.seq2seq), "edit" (restored sentences' edit distances: kit.train.levenshtein)
    family: str
    # "module:function" scoring rows: (metric, pred, target, weight) -> float; a mask metric's (metric, pred, target)
    score: str
    multilabel: bool = False  # it scores a multi-label target (one 0/1 column per label)
    cut: bool = False  # its score is taken at a threshold searched on the out-of-fold rows (kit.train.metrics.decide)
    blend: str = "mean"  # how runs' predictions blend under it: "mean", or "rank" (only each column's order counts)
    absolute: bool = False  # it scores absolute errors: learnt by their loss (L1), its best constant the median
    grouped: bool = False  # it scores [data] score_groups' groups apart and averages them (its scorer takes groups)
    # its rows are a value and a confidence: the value learnt, the confidence fitted on the out-of-fold residuals
    # into the sample's one other column (osic's Laplace log-likelihood)
    confidence: bool = False
    soft: bool = False  # it scores rows of distributions (votes normalised): its target is kit.train.kinds' "soft"

    def scorer(self) -> Callable[..., float]:
        return templates.load(self.score)


_M = "kit.train.metrics:"
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("log_loss", False, "probability", _M + "log_loss", multilabel=True),
    Metric("accuracy", True, "ranking", _M + "accuracy"),
    Metric("mae", False, "value", _M + "mae", absolute=True),
    Metric("rmse", False, "value", _M + "rmse"),
    Metric("auc", True, "probability", _M + "auc", multilabel=True, blend="rank"),
    Metric("f1_samples", True, "label_set", _M + "at_cut", multilabel=True, cut=True),
    Metric("f2_samples", True, "label_set", _M + "at_cut", multilabel=True, cut=True),
    Metric("qwk", True, "ordinal", _M + "qwk"),
    Metric("pearson", True, "value", _M + "pearson"),
    Metric("macro_f1", True, "ranking", _M + "macro_f1"),
    Metric("f1_micro", True, "label_set", _M + "at_cut", multilabel=True, cut=True),
    Metric("map@k", True, "ranking", _M + "map_at_k"),
    Metric("spearman", True, "value", _M + "spearman"),
    Metric("rmsle", False, "value", _M + "rmsle"),
    Metric("weighted_auc", True, "probability", _M + "weighted_auc_score", blend="rank"),
    Metric("bias_auc", True, "subgroup", _M + "at_cut", cut=True),
    Metric("group_log_mae", False, "value", _M + "group_log_mae", absolute=True, grouped=True),
    Metric("laplace", True, "value", _M + "laplace", absolute=True, confidence=True),
    Metric("dice", True, "mask", "kit.train.mask_metrics:score"),
    Metric("iou", True, "mask", "kit.train.mask_metrics:score"),
    Metric("map_iou", True, "mask", "kit.train.mask_metrics:score"),
    Metric("jaccard", True, "span", "kit.train.spans:score"),
    Metric("global_dice", True, "mask", "kit.train.mask_metrics:score"),
    Metric("dice_hausdorff", True, "mask", "kit.train.mask_metrics:score"),
    # mlsp-2013-birds: one ROC AUC over every (recording, species) row pooled, as its grader scores the melted rows
    Metric("auc_micro", True, "probability", _M + "auc_micro", multilabel=True),
    # freesound-audio-tagging-2019: label-weighted label-ranking average precision (its grader's sklearn form); blends
    # average probabilities: a rank per column across rows would change the order of labels within a row, which it scores
    Metric("lwlrap", True, "probability", _M + "lwlrap", multilabel=True),
    # the detection template's: vinbigdata's, siim-covid19's and kuzushiji's graders
    Metric("coco_map40", True, "box", "kit.train.box_metrics:score"),
    Metric("voc_map50", True, "box", "kit.train.box_metrics:score"),
    Metric("centre_f1", True, "box", "kit.train.box_metrics:score"),
    # text normalization's: exact-match accuracy of generated texts (the seq2seq template's; its grader's accuracy_score)
    Metric("text_accuracy", True, "text", "kit.train.seq2seq:score"),
    # tensorflow2-question-answering: its grader's micro F1 of long and short answers (kit.train.nq), which is the
    # share of its rows right; the spans template reads Natural Questions' JSONL pages under it (kit.pipelines.nq)
    Metric("nq_micro_f1", True, "span", "kit.train.nq:score"),
    # hms-harmful-brain-activity-classification: KL divergence of the votes' distribution from the predicted one, each
    # row's sum over its voted classes, the prediction clipped to [1e-15, 1 - 1e-15] as the grader's scorer does
    Metric("kl_div", False, "probability", _M + "kl_div", soft=True),
    # vesuvius-challenge-ink-detection: each fragment's F0.5 of its ink pixels, the mean over the fragments (its grader's)
    Metric("f05", True, "mask", "kit.train.mask_metrics:score"),
    # billion-word-imputation: the mean Levenshtein distance of the restored sentences from the true ones (its grader's
    # python-Levenshtein distance); the imputation template's, its validation rows each sentence's distance
    Metric("levenshtein", False, "edit", "kit.train.levenshtein:score"),
)}


def metrics_where(**fields: Any) -> tuple[str, ...]:
    """The names of the metrics whose records hold these values: metrics_where(family="value")."""
    return tuple(m.name for m in METRICS.values() if all(getattr(m, k) == v for k, v in fields.items()))


MASK_METRICS = metrics_where(family="mask")  # the segmentation template's, with rmse for image to image
SPAN_METRICS = metrics_where(family="span")  # the spans template's
TEXT_METRICS = metrics_where(family="text")  # the seq2seq template's
BOX_METRICS = metrics_where(family="box")  # the detection template's (kit.pipelines.detection)
EDIT_METRICS = metrics_where(family="edit")  # the imputation template's (kit.pipelines.imputation)


def metric_key(metric: str) -> str:
    """The metric's key in METRICS, its name without its k: "map@5" -> "map@k"."""
    return "map@k" if re.fullmatch(r"map@[1-9][0-9]*", metric) else metric


def top_k(metric: str) -> int:
    """How many labels a row's prediction lists: the k of map@k, else 1."""
    return int(metric.split("@")[1]) if metric_key(metric) == "map@k" else 1


def metric_record(metric: str) -> Metric:
    """The record of a metric by its name ("map@5": map@k's)."""
    return METRICS[metric_key(metric)]


def absolute(metric: str) -> bool:
    """Whether `metric` scores absolute errors (mae, group_log_mae, laplace): learnt by L1, its best constant the median; False
    for a name kit does not know (a scorer asked for no metric)."""
    return metric_key(metric) in METRICS and METRICS[metric_key(metric)].absolute


def greater_is_better(metric: str) -> bool:
    return metric_record(metric).greater_is_better


def metric_misfit(template: str, metric: str) -> str:
    """Why `template` cannot be scored by `metric`, or "" where it can: mask metrics score masks only, and masks
    are scored by them (or per pixel by rmse, image to image)."""
    if template == "segmentation" and metric not in (*MASK_METRICS, "rmse"):
        return (f"metric {metric} does not score masks: the segmentation template takes {', '.join(MASK_METRICS)}, or "
                "rmse for image to image")
    if template != "segmentation" and metric in MASK_METRICS:
        return f"metric {metric} scores masks, which only the segmentation template predicts"
    if template == "spans" and metric not in SPAN_METRICS:
        return f"metric {metric} does not score spans of text: the spans template takes {', '.join(SPAN_METRICS)}"
    if template != "spans" and metric in SPAN_METRICS:
        return f"metric {metric} scores spans of text, which only the spans template predicts"
    if template == "seq2seq" and metric not in TEXT_METRICS:
        return f"metric {metric} does not score generated texts: the seq2seq template takes {', '.join(TEXT_METRICS)}"
    if template != "seq2seq" and metric in TEXT_METRICS:
        return f"metric {metric} scores generated texts, which only the seq2seq template predicts"
    if template != "detection" and metric in BOX_METRICS:
        return f"metric {metric} scores boxes on images, which only the detection template predicts"
    if template == "detection" and metric not in BOX_METRICS:
        return f"metric {metric} does not score boxes: the detection template takes {', '.join(BOX_METRICS)}"
    if template == "imputation" and metric not in EDIT_METRICS:
        return f"metric {metric} does not score restored sentences: the imputation template takes {', '.join(EDIT_METRICS)}"
    if template != "imputation" and metric in EDIT_METRICS:
        return f"metric {metric} scores restored sentences, which only the imputation template predicts"
    return ""


def metric_name(metric: str) -> str:
    """`metric` if kit knows it, else ValueError listing what it knows."""
    if metric_key(metric) in METRICS and metric != "map@k":
        return metric
    known = ", ".join(m if m != "map@k" else "map@k (such as map@5)" for m in METRICS)
    raise ValueError(f"is not a metric kit knows ({known})")
