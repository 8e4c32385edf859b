"""`kit init`'s guess of the metric: what the competition's description says, where the data folder holds one
(MLE-bench's public folders have description.md), else what the target's shape suggests, with the metrics the
data cannot tell it from."""
from __future__ import annotations

import re

import pandas as pd

from kit.build.guesses import Guess, numbers, text

# how an evaluation section names each metric; the earliest mention wins ("mean column-wise root mean squared
# error" starts before its "root mean squared error")
SAID = (
    (r"quadratic(ally)? weighted kappa|quadratic kappa", "qwk"),
    (r"\blwlrap\b|label[- ]weighted label[- ]ranking", "lwlrap"),  # freesound: before its "average precision"
    (r"kullback[- ]l(?:ei|ie)bler|\bkl[- ]divergence", "kl_div"),  # hms: "Kullback Liebler divergence", as it is spelt
    (r"weighted auc|weighted area under", "weighted_auc"),
    # vinbigdata: "mean Average Precision (mAP) at IoU > 0.4"; siim-covid19's at IoU > 0.5 (PASCAL VOC's)
    (r"(mean average precision )?\(?\bmap\)? ?(at|@) ?iou ?(>|>=|=|of|threshold of)? ?0?\.4\b", "coco_map40"),
    (r"(mean average precision )?\(?\bmap\)? ?(at|@) ?iou ?(>|>=|=|of|threshold of)? ?0?\.5\b", "voc_map50"),
    # TGS: "mean average precision at different intersection over union (IoU) thresholds"
    (r"(mean )?average precision at different intersection over union|precision at (different|each) iou", "map_iou"),
    (r"\bglobal\W{0,4}dice", "global_dice"),  # contrails: "evaluated on the **global** [Dice coefficient]"
    (r"dice[^.]{0,40}hausdorff", "dice_hausdorff"),  # uw-madison: "the mean Dice coefficient and 3D Hausdorff distance"
    # vesuvius: "a modified version of the Sørensen-Dice coefficient, where instead of using the F1 score, we are
    # using the F0.5 score"
    (r"(sørensen|dice)[\s\S]{0,250}?\bf0\.5\b|\bf0\.5 score", "f05"),
    (r"dice coefficient|dice score|dice similarity|sørensen", "dice"),
    (r"word[- ]level jaccard", "jaccard"),  # of texts' words (tweet-sentiment, chaii), not of masks
    (r"intersection over union|\bjaccard\b", "iou"),
    (r"unintended bias", "bias_auc"),
    (r"mean column-?wise root mean squared? error|mcrmse", "rmse"),
    (r"root mean squared? log(arithmic)? error|\brmsle\b", "rmsle"),
    (r"root mean squared? error|\brmse\b", "rmse"),
    (r"mean absolute error|\bmae\b", "mae"),
    (r"mean average precision ?@ ?(\d+)|\bmap ?@ ?(\d+)", "map@k"),
    (r"macro[- ]?(averaged )?\[?f1|f1[- ]score[^.]{0,40}macro", "macro_f1"),
    # MLE-bench grades Kaggle's "Mean F1-Score" (plant-pathology-2021) as micro F1 over the label sets
    (r"micro[- ]?(averaged )?\[?f1|f1[^.]{0,40}micro|mean \[?f1", "f1_micro"),
    (r"\bf2\b|f-2 score|f_2", "f2_samples"),
    (r"spearman", "spearman"),
    (r"pearson", "pearson"),
    (r"log(arithmic)? ?loss|cross[- ]entropy", "log_loss"),
    (r"area under the roc|roc curve|\bauc\b", "auc"),
    (r"accuracy|classification error|top-1 error", "accuracy"),  # inaturalist's top-1 error is 1 - accuracy
)
# a target named as a grade on a scale (essay-scoring's score, aptos' diagnosis, petfinder's AdoptionSpeed), not
# a class or a sentiment (movie-review's Sentiment 0-4 is graded by accuracy)
SCORES = re.compile(r"score|grade|rating|diagnosis|severity|speed", re.I)
# this many classes or more are scored class by class (herbarium's tens of thousands of species: macro F1), where
# inaturalist-2019's 1,010 and iwildcam-2020's 267 are scored by accuracy
MANY = 2000
SECTION = 1500  # characters of the description read from its first mention of evaluation


def from_description(description: str) -> tuple[str, str]:
    """(metric, the words that say it) from a competition description's evaluation section, or ("", "")."""
    lower = re.sub(r"[^\S\n]+", " ", description.lower())  # one space for any run of them (imet's no-break space)
    heading = re.search(r"^#+\W*evaluation", lower, re.M)  # "## Evaluation"; else the first mention
    start = heading.start() if heading else lower.find("evaluat")
    section = lower[start: start + SECTION] if start >= 0 else ""
    found = []
    for pattern, metric in SAID:
        match = re.search(pattern, section)
        if match:
            k = next((g for g in match.groups() if g and g.isdigit()), "")
            found.append((match.start(), metric.replace("@k", f"@{k}") if metric == "map@k" else metric, match.group(0)))
    found = [f for f in found if f[1] != "map@"]
    if not found:
        return "", ""
    _, metric, words = min(found, key=lambda f: f[0])
    return metric, words


def from_data(guess: Guess, sample: pd.DataFrame) -> tuple[str, str, str]:
    """(metric, why, what else it may be) from the target's shape: the sample's target columns and the training
    labels."""
    if guess.metric:
        return guess.metric
    targets, labels = guess.targets, guess.labels
    if len(targets) > 1:
        if not isinstance(labels, pd.DataFrame):
            return "log_loss", "one probability column per class", "auc or accuracy"
        values = labels.apply(pd.to_numeric, errors="coerce")
        binary = bool(values.isin([0, 1]).all().all())
        if binary and (values.sum(axis=1) == 1).all():
            return "log_loss", "one-hot target columns: one class per row, written as probabilities", "auc"
        if binary:
            return "auc", "0/1 target columns: any number of labels per row", "log_loss, f1_samples or f1_micro"
        return "rmse", "numeric target columns", "mae, rmsle, pearson or spearman"
    column = sample[targets[0]].dropna() if targets else pd.Series(dtype=object)
    if labels is None or labels.dropna().empty:
        return "accuracy", "a label per row", "the training labels were not found"
    labels = labels.dropna()
    tokens = text(labels).str.split()
    vocabulary = {t for row in tokens for t in row}
    if tokens.str.len().max() > 1 and len(vocabulary) < text(labels).nunique():  # a few labels, combined: tags
        # imet's and plant-pathology-2021's label sets are graded by micro F1 (MLE-bench), planet's by F2
        return "f1_micro", "rows hold several space-separated labels", "f1_samples or f2_samples"
    k = int(text(column).str.split().str.len().max()) if len(column) else 1
    if k > 1 and not text(column).isin(set(text(labels))).all():  # k labels, not one label with a space ("Sugar beet")
        return f"map@{k}", f"the sample lists {k} labels a row, best first", "another k"
    distinct = text(labels).nunique()
    numeric_sample = numbers(column) is not None
    values = numbers(labels)
    if distinct == 2 and numeric_sample and values is None and not _booleans(labels):  # dogs-vs-cats' P(dog)
        classes = sorted(text(labels).unique())
        return "log_loss", (f"the sample asks for a number a row, the probability of one of the two named classes "
                            f"({classes[0]}, {classes[1]})"), "auc"
    if distinct == 2 and numeric_sample:
        return "auc", "two classes in one column: the second class's probability", "log_loss"
    classes = max(distinct, guess.classes)
    whole = values is None or (values == values.round()).all()
    if classes >= MANY and whole and (values is None or guess.template == "cnn"):  # herbarium's species
        return "macro_f1", f"{classes:,} classes: a long tail, each class counted alike", "accuracy"
    if values is not None and (distinct > 20 or not (values == values.round()).all()):
        return "rmse", "a number per row", "mae, rmsle, pearson or spearman"
    if values is not None and numeric_sample and 3 <= distinct <= 10:
        named = next((str(n) for n in (targets[0], labels.name) if n is not None and SCORES.search(str(n))), "")
        if named and values.max() - values.min() + 1 == distinct:  # essay-scoring's score 1-6, aptos' diagnosis 0-4
            return "qwk", (f"ordered scores: '{named}' holds the whole numbers {int(values.min())} to {int(values.max())}"), \
                "accuracy or macro_f1"
        return "accuracy", "a whole score per row", "qwk for ordered scores, or macro_f1"
    return "accuracy", "a class per row", "macro_f1"


def _booleans(labels: pd.Series) -> bool:
    """True/False labels (random-acts-of-pizza's): a yes or no, whose probability is ranked, not two named classes."""
    return bool(text(labels).str.lower().isin(["true", "false"]).all())
