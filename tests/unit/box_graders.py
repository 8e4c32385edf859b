"""MLE-bench's three detection graders, written out so that kit's box metrics are checked against them (the checks:
test_metrics_graded_boxes.py). pycocotools is not installed here: vinbigdata's grader calls its COCOeval, whose
bbox path (evaluate, computeIoU, evaluateImg, accumulate, summarize's stats[0]) and maskApi.c's bbIou are written
out below from cocodataset/cocoapi's source, on the dicts the grader builds."""
from collections import defaultdict

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score


# -- vinbigdata-chest-xray-abnormalities-detection: grade.py's VinBigDataEval, then COCOeval -----------------------
def vinbigdata_grade(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    image_ids = answers["image_id"].unique()
    gts, k = [], 0
    for idx, image_id in enumerate(image_ids):
        for _, row in answers[answers["image_id"] == image_id].iterrows():
            gts.append({"id": k, "image_id": idx, "category_id": row["class_id"],
                        "bbox": np.array([row["x_min"], row["y_min"], row["x_max"], row["y_max"]]),
                        "area": (row["x_max"] - row["x_min"]) * (row["y_max"] - row["y_min"]), "iscrowd": 0})
            k += 1
    dts, k = [], 0
    for _, row in submission.iterrows():
        preds = np.array(list(map(float, row["PredictionString"].split(" ")))).reshape(-1, 6)
        for pred in preds:
            dts.append({"id": k, "image_id": int(np.where(image_ids == row["image_id"])[0][0]),
                        "category_id": int(pred[0]), "bbox": np.array([pred[2], pred[3], pred[4], pred[5]]),
                        "area": (pred[4] - pred[2]) * (pred[5] - pred[3]), "iscrowd": 0, "score": pred[1]})
            k += 1
    return coco_stats0(gts, dts, list(range(len(image_ids))), sorted({g["category_id"] for g in gts}), 0.4)


def bb_iou(dt: list, gt: list, iscrowd: list) -> np.ndarray:
    """maskApi.c bbIou: boxes are x, y, w, h."""
    o = np.zeros((len(dt), len(gt)))
    for g, gb in enumerate(gt):
        ga = gb[2] * gb[3]
        for d, db in enumerate(dt):
            da = db[2] * db[3]
            w = min(db[2] + db[0], gb[2] + gb[0]) - max(db[0], gb[0])
            if w <= 0:
                continue
            h = min(db[3] + db[1], gb[3] + gb[1]) - max(db[1], gb[1])
            if h <= 0:
                continue
            i = w * h
            u = da if iscrowd[g] else da + ga - i
            o[d, g] = i / u
    return o


def coco_stats0(gts: list, dts: list, img_ids: list, cat_ids: list, thr: float) -> float:
    """COCOeval(iouType="bbox") with iouThrs [thr]: evaluate(), accumulate(), summarize()'s stats[0]."""
    _gts, _dts = defaultdict(list), defaultdict(list)
    for g in gts:  # _prepare
        g["ignore"] = "iscrowd" in g and g["iscrowd"]
        if g["category_id"] in cat_ids:
            _gts[g["image_id"], g["category_id"]].append(g)
    for d in dts:
        if d["category_id"] in cat_ids:
            _dts[d["image_id"], d["category_id"]].append(d)
    iou_thrs, rec_thrs, a_rng, max_det = np.array([thr]), np.linspace(0.0, 1.00, 101, endpoint=True), [0, 1e5 ** 2], 100

    def compute_iou(img, cat):
        gt, dt = _gts[img, cat], _dts[img, cat]
        if len(gt) == 0 and len(dt) == 0:
            return []
        inds = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in inds][:max_det]
        return bb_iou([d["bbox"] for d in dt], [g["bbox"] for g in gt], [int(o["iscrowd"]) for o in gt])

    ious = {(i, c): compute_iou(i, c) for i in img_ids for c in cat_ids}

    def evaluate_img(img, cat):
        gt, dt = _gts[img, cat], _dts[img, cat]
        if len(gt) == 0 and len(dt) == 0:
            return None
        for g in gt:
            g["_ignore"] = 1 if g["ignore"] or (g["area"] < a_rng[0] or g["area"] > a_rng[1]) else 0
        gtind = np.argsort([g["_ignore"] for g in gt], kind="mergesort")
        gt = [gt[i] for i in gtind]
        dtind = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in dtind[0:max_det]]
        iscrowd = [int(o["iscrowd"]) for o in gt]
        iou_m = ious[img, cat][:, gtind] if len(ious[img, cat]) > 0 else ious[img, cat]
        T, G, D = len(iou_thrs), len(gt), len(dt)
        gtm, dtm = np.zeros((T, G)), np.zeros((T, D))
        gt_ig = np.array([g["_ignore"] for g in gt])
        dt_ig = np.zeros((T, D))
        if not len(iou_m) == 0:
            for tind, t in enumerate(iou_thrs):
                for dind, d in enumerate(dt):
                    iou = min([t, 1 - 1e-10])
                    m = -1
                    for gind, _g in enumerate(gt):
                        if gtm[tind, gind] > 0 and not iscrowd[gind]:
                            continue
                        if m > -1 and gt_ig[m] == 0 and gt_ig[gind] == 1:
                            break
                        if iou_m[dind, gind] < iou:
                            continue
                        iou = iou_m[dind, gind]
                        m = gind
                    if m == -1:
                        continue
                    dt_ig[tind, dind] = gt_ig[m]
                    dtm[tind, dind] = gt[m]["id"]
                    gtm[tind, m] = d["id"]
        a = np.array([d["area"] < a_rng[0] or d["area"] > a_rng[1] for d in dt]).reshape((1, len(dt)))
        dt_ig = np.logical_or(dt_ig, np.logical_and(dtm == 0, np.repeat(a, T, 0)))
        return {"dtMatches": dtm, "dtScores": [d["score"] for d in dt], "gtIgnore": gt_ig, "dtIgnore": dt_ig}

    precision = -np.ones((len(iou_thrs), len(rec_thrs), len(cat_ids)))
    for k, cat in enumerate(cat_ids):  # accumulate, one area range and maxDets 100
        E = [evaluate_img(i, cat) for i in img_ids]
        E = [e for e in E if e is not None]
        if len(E) == 0:
            continue
        dt_scores = np.concatenate([e["dtScores"][0:max_det] for e in E])
        inds = np.argsort(-dt_scores, kind="mergesort")
        dtm = np.concatenate([e["dtMatches"][:, 0:max_det] for e in E], axis=1)[:, inds]
        dt_ig = np.concatenate([e["dtIgnore"][:, 0:max_det] for e in E], axis=1)[:, inds]
        gt_ig = np.concatenate([e["gtIgnore"] for e in E])
        npig = np.count_nonzero(gt_ig == 0)
        if npig == 0:
            continue
        tps = np.logical_and(dtm, np.logical_not(dt_ig))
        fps = np.logical_and(np.logical_not(dtm), np.logical_not(dt_ig))
        tp_sum = np.cumsum(tps, axis=1).astype(dtype=np.float64)
        fp_sum = np.cumsum(fps, axis=1).astype(dtype=np.float64)
        for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
            nd = len(tp)
            rc = tp / npig
            pr = (tp / (fp + tp + np.spacing(1))).tolist()
            q = np.zeros((len(rec_thrs),)).tolist()
            for i in range(nd - 1, 0, -1):
                if pr[i] > pr[i - 1]:
                    pr[i - 1] = pr[i]
            inds = np.searchsorted(rc, rec_thrs, side="left")
            try:
                for ri, pi in enumerate(inds):
                    q[ri] = pr[pi]
            except IndexError:
                pass
            precision[t, :, k] = np.array(q)
    s = precision
    return -1 if len(s[s > -1]) == 0 else float(np.mean(s[s > -1]))


# -- siim-covid19-detection: grade.py ------------------------------------------------------------------------------
def siim_iou(box1, box2) -> float:
    xmin1, ymin1, xmax1, ymax1 = box1
    xmin2, ymin2, xmax2, ymax2 = box2
    inter_area = max(0, min(xmax1, xmax2) - max(xmin1, xmin2)) * max(0, min(ymax1, ymax2) - max(ymin1, ymin2))
    union_area = (xmax1 - xmin1) * (ymax1 - ymin1) + (xmax2 - xmin2) * (ymax2 - ymin2) - inter_area
    return inter_area / union_area if union_area > 0 else 0.0


def siim_parse(prediction_string: str) -> list:
    toks = prediction_string.strip().split()
    return [(toks[i], float(toks[i + 1]), float(toks[i + 2]), float(toks[i + 3]), float(toks[i + 4]), float(toks[i + 5]))
            for i in range(0, len(toks), 6)]


def siim_grade(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    submission, answers = submission.sort_values("id"), answers.sort_values("id")
    assert (submission["id"].values == answers["id"].values).all()
    submission_preds = submission["PredictionString"].apply(siim_parse)
    answers_preds = answers["PredictionString"].apply(siim_parse)
    aps = []
    classes = sorted(list(set(pred[0] for preds in answers_preds for pred in preds)))
    for cls in classes:
        y_pairs = []
        for img_preds, img_gts in zip(submission_preds, answers_preds):
            y_pairs_ = []
            gt_boxes = [gt[2:] for gt in img_gts if gt[0] == cls]
            img_preds.sort(key=lambda x: x[1], reverse=True)
            matched_gt = [False] * len(gt_boxes)
            for pred in img_preds:
                if pred[0] == cls:
                    best_iou, best_gt_idx = 0, -1
                    for i, gt in enumerate(gt_boxes):
                        if matched_gt[i]:
                            continue
                        iou = siim_iou(pred[2:], gt)
                        if iou > best_iou and iou > 0.5:
                            best_iou, best_gt_idx = iou, i
                    if best_gt_idx != -1:
                        y_pairs_.append((1, pred[1]))
                        matched_gt[best_gt_idx] = True
                    else:
                        y_pairs_.append((0, pred[1]))
            y_pairs_.extend([(1, 0)] * matched_gt.count(False))
            if len(y_pairs_) == 0:
                y_pairs_.append((0, 0))
            y_pairs.extend(y_pairs_)
        y_true, y_scores = [p[0] for p in y_pairs], [p[1] for p in y_pairs]
        assert not all(y == 1 for y in y_true)
        aps.append(average_precision_score(y_true, y_scores))
    return np.mean(aps) if aps else 0.0


# -- kuzushiji-recognition: kuzushiji_metric.py (one process) --------------------------------------------------------
def kuzushiji_page(preds, truth) -> dict:
    tp = fp = fn = 0
    if pd.isna(truth) and pd.isna(preds):
        return {"tp": tp, "fp": fp, "fn": fn}
    if pd.isna(truth):
        return {"tp": tp, "fp": fp + len(preds.split(" ")) // 3, "fn": fn}
    if pd.isna(preds):
        return {"tp": tp, "fp": fp, "fn": fn + len(truth.split(" ")) // 5}
    truth = truth.split(" ")
    truth_label = np.array(truth[0::5])
    truth_xmin = np.array(truth[1::5]).astype(float)
    truth_ymin = np.array(truth[2::5]).astype(float)
    truth_xmax = truth_xmin + np.array(truth[3::5]).astype(float)
    truth_ymax = truth_ymin + np.array(truth[4::5]).astype(float)
    preds = preds.split(" ")
    preds_label = np.array(preds[0::3])
    preds_x = np.array(preds[1::3]).astype(float)
    preds_y = np.array(preds[2::3]).astype(float)
    preds_unused = np.ones(len(preds_label)).astype(bool)
    for xmin, xmax, ymin, ymax, label in zip(truth_xmin, truth_xmax, truth_ymin, truth_ymax, truth_label):
        matching = ((xmin < preds_x) & (xmax > preds_x) & (ymin < preds_y) & (ymax > preds_y)
                    & (preds_label == label) & preds_unused)
        if matching.sum() == 0:
            fn += 1
        else:
            tp += 1
            preds_unused[np.argmax(matching)] = False
    fp += preds_unused.sum()
    return {"tp": tp, "fp": fp, "fn": fn}


def kuzushiji_grade(sub: pd.DataFrame, solution: pd.DataFrame) -> float:
    results = [kuzushiji_page(p, t) for p, t in zip(sub["labels"].values, solution["labels"].values)]
    tp, fp, fn = (sum(x[k] for x in results) for k in ("tp", "fp", "fn"))
    if (tp + fp) == 0 or (tp + fn) == 0:
        return 0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return (2 * precision * recall) / (precision + recall) if precision > 0 and recall > 0 else 0
