"""Tiny folders of competitions no shipped config covers, each as MLE-bench's prepare.py writes it (names,
columns, nested folders; images of a few bytes, as kit init never decodes one), for kit init's tests
(tests/unit/test_init_unseen.py) and their drafts' smoke runs (tests/functional/test_init_unseen_e2e.py). Each
builder writes into `folder` and returns it."""
from __future__ import annotations

import json
from pathlib import Path

import layouts
import numpy as np
import pandas as pd


def cassava(folder: Path) -> Path:
    """cassava-leaf-disease-classification: train.csv image_id (with .jpg),label; train_images/, test_images/,
    train_tfrecords/ and test_tfrecords/, and label_num_to_disease_map.json (class number -> disease name)."""
    train, test = [f"{k}.jpg" for k in layouts.hexes(10, 9)], [f"{k}.jpg" for k in layouts.hexes(4, 9, 1)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            layouts.touch(folder / f"{split}_images" / name)
        layouts.touch(folder / f"{split}_tfrecords" / f"ld_{split}00-{len(names)}.tfrec", b"records")
    layouts.csv({"image_id": train, "label": [k % 5 for k in range(10)]}, folder / "train.csv")
    layouts.csv({"image_id": test, "label": 4}, folder / "sample_submission.csv")
    names = ["Cassava Bacterial Blight (CBB)", "Cassava Brown Streak Disease (CBSD)", "Cassava Green Mottle (CGM)",
             "Cassava Mosaic Disease (CMD)", "Healthy"]
    (folder / "label_num_to_disease_map.json").write_text(json.dumps({str(k): n for k, n in enumerate(names)}))
    return folder


def siim_isic(folder: Path) -> Path:
    """siim-isic-melanoma-classification: train.csv (image_name, patient_id, sex, age_approx,
    anatom_site_general_challenge, diagnosis, benign_malignant, target), test.csv (its first five), the sample
    image_name,target; DICOMs in train/ and test/, the same images as JPEGs in jpeg/train/ and jpeg/test/, and
    tfrecords/."""
    train, test = [f"ISIC_{k:07d}" for k in range(12)], [f"ISIC_{k:07d}" for k in range(100, 104)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            layouts.touch(folder / split / f"{name}.dcm", b"DICM")
            layouts.touch(folder / "jpeg" / split / f"{name}.jpg")
        layouts.touch(folder / "tfrecords" / f"{split}00-{len(names)}.tfrec", b"records")
    meta = {"sex": "male", "age_approx": 45.0, "anatom_site_general_challenge": "torso"}
    layouts.csv({"image_name": train, "patient_id": [f"IP_{k // 2:04d}" for k in range(12)], **meta, "diagnosis": "unknown",
                 "benign_malignant": "benign", "target": [k % 2 for k in range(12)]}, folder / "train.csv")
    layouts.csv({"image_name": test, "patient_id": ["IP_0100", "IP_0100", "IP_0101", "IP_0101"], **meta},
                folder / "test.csv")
    layouts.csv({"image_name": test, "target": 0}, folder / "sample_submission.csv")
    return folder


def leaf(folder: Path) -> Path:
    """leaf-classification: train.csv (id, species, margin1-64, shape1-64, texture1-64), test.csv (the same but
    species), the sample id + a probability column per species, and images/<id>.jpg for train and test alike."""
    species = ["Acer_Capillipes", "Acer_Circinatum", "Quercus_Rubra"]
    rng = np.random.default_rng(0)
    features = {f"{kind}{k}": rng.random(16).round(6) for kind in ("margin", "shape", "texture") for k in range(1, 65)}
    frame = pd.DataFrame({"id": range(1, 17), "species": [species[k % 3] for k in range(16)], **features})
    layouts.csv(frame.iloc[:12], folder / "train.csv")
    layouts.csv(frame.iloc[12:].drop(columns=["species"]), folder / "test.csv")
    layouts.csv({"id": frame["id"].iloc[12:], **{s: 1 / 3 for s in species}}, folder / "sample_submission.csv")
    for i in frame["id"]:
        layouts.touch(folder / "images" / f"{i}.jpg")
    return folder


def us_patent(folder: Path) -> Path:
    """us-patent-phrase-to-phrase-matching: train.csv id,anchor,target,context,score (phrases of a few words and a
    CPC code), test.csv without score, the sample id,score."""
    anchors = ["abatement", "acid absorption", "adjustable cup", "wood article"]
    targets = ["abatement of pollution", "act of abating", "eliminating process", "forest region", "absorbent of acid",
               "acid uptake", "cup holder", "height adjustable cup", "wooden article", "article of wood", "forest area",
               "pollution control", "water absorption", "adjustable basket", "timber product", "acid absorbent layer"]
    contexts = ["A47", "C08", "H01", "B44"]
    ids = layouts.hexes(16, 16, 2)
    frame = pd.DataFrame({"id": ids, "anchor": [anchors[k % 4] for k in range(16)], "target": targets,
                                  "context": [contexts[k % 4] for k in range(16)],
                                  "score": [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 0.5] * 2})
    layouts.csv(frame.iloc[:12], folder / "train.csv")
    layouts.csv(frame.iloc[12:].drop(columns=["score"]), folder / "test.csv")
    layouts.csv({"id": ids[12:], "score": 0}, folder / "sample_submission.csv")
    return folder


def iwildcam_2019(folder: Path) -> Path:
    """iwildcam-2019-fgvc6 as MLE-bench splits it, by camera location: train.csv (category_id, date, file_name,
    frame_num, id, location, seq_id, ...), test.csv without category_id at locations train.csv lacks, the sample
    Id,Category; train_images/ and test_images/ of <id>.jpg."""
    train, test = layouts.hexes(14, 12), layouts.hexes(4, 12, 1)
    for split, ids in (("train_images", train), ("test_images", test)):
        for i in ids:
            layouts.touch(folder / split / f"{i}.jpg")
    rows = {"date": "2012-03-17 03:48:44", "frame_num": 1, "seq_num_frames": 3, "width": 1024, "height": 747}
    layouts.csv({"category_id": [k % 3 for k in range(14)], **rows, "file_name": [f"{i}.jpg" for i in train], "id": train,
                 "location": [k % 6 for k in range(14)], "seq_id": [f"s{k // 3}" for k in range(14)]}, folder / "train.csv")
    layouts.csv({**rows, "file_name": [f"{i}.jpg" for i in test], "id": test, "location": [40, 41, 40, 41],
                 "seq_id": ["t0", "t0", "t1", "t1"]}, folder / "test.csv")
    layouts.csv({"Id": test, "Category": 0}, folder / "sample_submission.csv")
    return folder


def google_quest(folder: Path) -> Path:
    """google-quest-challenge: train.csv (qa_id, question_title, question_body, question_user_name,
    question_user_page, answer, answer_user_name, answer_user_page, url, category, host, then the 30 scores; three
    here), test.csv without the scores, the sample qa_id and the scores."""
    texts = layouts.sentences(30, words=12)
    host = "photo.stackexchange.com"
    rows = [{"qa_id": 10 + k, "question_title": texts[k][:40], "question_body": texts[k + 10], "question_user_name": f"ann{k}",
             "question_user_page": f"https://{host}/users/{1024 + k}/ann-the-photographer-{k}", "answer": texts[k + 20],
             "answer_user_name": f"bob{k}", "answer_user_page": f"https://{host}/users/{2048 + k}/bob-answers-{k}",
             "url": f"http://{host}/questions/{9000 + k}/what-is-the-distance-of-field-{k}",
             "category": ["LIFE_ARTS", "CULTURE", "SCIENCE"][k % 3], "host": host} for k in range(10)]
    scores = ["question_asker_intent_understanding", "question_body_critical", "answer_helpful"]
    frame = pd.DataFrame(rows)
    layouts.csv(frame.iloc[:7].assign(**{s: [k / 7 for k in range(7)] for s in scores}), folder / "train.csv")
    layouts.csv(frame.iloc[7:], folder / "test.csv")
    layouts.csv({"qa_id": frame["qa_id"].iloc[7:], **{s: 0.5 for s in scores}}, folder / "sample_submission.csv")
    return folder



def ventilator(folder: Path, breaths: int = 6, steps: int = 6) -> Path:
    """ventilator-pressure-prediction as MLE-bench splits it by breath: train.csv id,breath_id,R,C,time_step,u_in,
    u_out,pressure (u_out 0 while air goes in, then 1), test.csv without pressure, the sample id,pressure (0)."""
    rows = [{"breath_id": b + 1, "R": [5, 20, 50][b % 3], "C": [10, 20, 50][b % 3], "time_step": round(0.03 * s, 4),
             "u_in": round(10.0 * (b + 1) / (s + 1), 3), "u_out": int(s >= steps // 2), "pressure": 5.0 + b + s / 10}
            for b in range(breaths) for s in range(steps)]
    frame = pd.DataFrame(rows)
    cut = (breaths - 2) * steps  # the last two breaths are the test's
    train, test = frame.iloc[:cut].copy(), frame.iloc[cut:].drop(columns=["pressure"])
    train.insert(0, "id", range(1, len(train) + 1))
    test.insert(0, "id", range(1, len(test) + 1))
    layouts.csv(train, folder / "train.csv")
    layouts.csv(test, folder / "test.csv")
    layouts.csv({"id": test["id"], "pressure": 0}, folder / "sample_submission.csv")
    return folder


def herbarium_2021(folder: Path, species: int = 2500) -> Path:
    """herbarium-2021-fgvc8 as MLE-bench splits it: train/metadata.json (annotations, categories: every species,
    images at images/<category // 100>/<category % 100>/<id>.jpg), test/metadata.json (images at
    images/<k // 1000>/<k>.jpg, no annotations), the sample Id,Predicted."""
    categories = [{"id": k, "name": f"Species {k}", "family": "Asteraceae", "order": "Asterales"} for k in range(species)]
    images, annotations = [], []
    for k in range(12):
        category = (k % 4) * 600 + 3
        images.append({"id": 1000 + k, "file_name": f"images/{category // 100:03d}/{category % 100:02d}/{1000 + k}.jpg",
                       "height": 1000, "width": 680})
        annotations.append({"id": 1000 + k, "image_id": 1000 + k, "category_id": category, "institution_id": 0})
    hidden = [{"id": str(k), "file_name": f"images/{k // 1000:03d}/{k}.jpg", "height": 1000, "width": 680} for k in range(4)]
    for split, records in (("train", images), ("test", hidden)):
        for record in records:
            layouts.touch(folder / split / record["file_name"])
    (folder / "train" / "metadata.json").write_text(json.dumps(
        {"annotations": annotations, "categories": categories, "images": images, "info": {}, "licenses": [],
         "institutions": [{"id": 0, "name": "New York Botanical Garden"}]}))
    (folder / "test" / "metadata.json").write_text(json.dumps({"images": hidden, "info": {}, "licenses": []}))
    layouts.csv({"Id": [h["id"] for h in hidden], "Predicted": 0}, folder / "sample_submission.csv")
    return folder


def plant_pathology_2021(folder: Path) -> Path:
    """plant-pathology-2021-fgvc8: train.csv image,labels (space-separated diseases: "scab frog_eye_leaf_spot"),
    train_images/ and test_images/ of <image>, the sample image,labels ("healthy")."""
    train, test = [f"{k}.jpg" for k in layouts.hexes(12, 16)], [f"{k}.jpg" for k in layouts.hexes(4, 16, 1)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            layouts.touch(folder / f"{split}_images" / name)
    labels = ["healthy", "scab", "frog_eye_leaf_spot", "scab frog_eye_leaf_spot", "rust", "complex",
              "powdery_mildew", "rust frog_eye_leaf_spot", "healthy", "scab", "complex", "frog_eye_leaf_spot complex"]
    layouts.csv({"image": train, "labels": labels}, folder / "train.csv")
    layouts.csv({"image": test, "labels": "healthy"}, folder / "sample_submission.csv")
    return folder
