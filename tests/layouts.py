"""Tiny competition folders in the public layouts MLE-bench writes (/work/notes/gallery.md: names, columns, id
formats, archives, nested folders), for kit init's tests. Images are a few bytes: kit init never decodes one.
Each builder writes into `folder` and returns it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke.packing import write_7z, write_tar, write_zip

WORDS = "the cars are bad because they make the air dirty and people get sick so we should use them less".split()


def touch(path: Path, data: bytes = b"\xff\xd8 image") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def hexes(n: int, length: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(length).hex()[:length] for _ in range(n)]


def sentences(n: int, seed: int = 0, words: int = 8) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, words + int(rng.integers(0, 6)))) + f" {k}." for k in range(n)]


def csv(frame: dict | pd.DataFrame, path: Path, **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(frame).to_csv(path, index=False, **kwargs)
    return path


def aerial_cactus(folder: Path) -> Path:
    """train.csv id (with .jpg),has_cactus; train.zip and test.zip with the files at their root."""
    train, test = [f"{h}.jpg" for h in hexes(12, 32)], [f"{h}.jpg" for h in hexes(6, 32, 1)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            touch(folder.parent / f"staging-{split}" / name)
        write_zip(folder.parent / f"staging-{split}", _made(folder) / f"{split}.zip")
    csv({"id": train, "has_cactus": [k % 2 for k in range(12)]}, folder / "train.csv")
    csv({"id": test, "has_cactus": 0.5}, folder / "sample_submission.csv")
    return folder


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def dogs_vs_cats(folder: Path) -> Path:
    """train/cat.<k>.jpg and dog.<k>.jpg, test/<n>.jpg, both zipped too; sample id,label (P(dog))."""
    for animal in ("cat", "dog"):
        for k in range(5):
            touch(folder / "train" / f"{animal}.{k}.jpg")
    for n in range(1, 7):
        touch(folder / "test" / f"{n}.jpg")
    write_zip(folder / "train", folder / "train.zip")
    write_zip(folder / "test", folder / "test.zip")
    csv({"id": range(1, 7), "label": 0.5}, folder / "sample_submission.csv")
    return folder


def insults(folder: Path) -> Path:
    """No id column: the sample is Insult,Date,Comment in test.csv's order."""
    comments = sentences(16)
    dates = ["20120618192155Z", ""] * 8
    csv({"Insult": [k % 2 for k in range(12)], "Date": dates[:12], "Comment": comments[:12]}, folder / "train.csv")
    csv({"Date": dates[:4], "Comment": comments[12:]}, folder / "test.csv")
    csv({"Insult": 0, "Date": dates[:4], "Comment": comments[12:]}, folder / "sample_submission_null.csv")
    return folder


def pizza(folder: Path) -> Path:
    """train.json and test.json lists of records, also as train.zip and test.zip; sampleSubmission.csv."""
    texts = sentences(14, words=12)
    train = [{"request_id": f"t3_{k}", "request_title": f"Request {t}", "request_text_edit_aware": t, "request_text": t,
              "requester_subreddits_at_request": ["pizza", "food"], "requester_number_of_posts_at_request": k,
              "requester_received_pizza": bool(k % 2)} for k, t in enumerate(texts[:10])]
    test = [{"request_id": f"t3_x{k}", "request_title": f"Request {t}", "request_text_edit_aware": t,
             "requester_subreddits_at_request": [], "requester_number_of_posts_at_request": k} for k, t in enumerate(texts[10:])]
    for name, records in (("train", train), ("test", test)):
        (_made(folder) / f"{name}.json").write_text(json.dumps(records, indent=4))
        write_zip(folder / f"{name}.json", folder / f"{name}.zip")
    csv({"request_id": [r["request_id"] for r in test], "requester_received_pizza": 0}, folder / "sampleSubmission.csv")
    return folder


def imet(folder: Path) -> Path:
    """train.csv id,attribute_ids (space-separated), labels.csv beside it, train/<id>.png, test/<id>.png."""
    train, test = hexes(10, 16), hexes(4, 16, 1)
    for split, ids in (("train", train), ("test", test)):
        for i in ids:
            touch(folder / split / f"{i}.png")
    csv({"id": train, "attribute_ids": ["13 405", "13", "405 903", "903 1092 13"] * 2 + ["13", "405"]}, folder / "train.csv")
    csv({"attribute_id": [13, 405, 903, 1092], "attribute_name": ["a::x", "b::y", "c::z", "d::w"]}, folder / "labels.csv")
    csv({"id": test, "attribute_ids": "0 1 2"}, folder / "sample_submission.csv")
    return folder


def whale(folder: Path) -> Path:
    """train.csv Image,Id (Image with .jpg); sample Image,Id holding 5 labels; train/, test/."""
    train, test = [f"{h}.jpg" for h in hexes(10, 8)], [f"{h}.jpg" for h in hexes(4, 8, 1)]
    for split, names in (("train", train), ("test", test)):
        for name in names:
            touch(folder / split / name)
    csv({"Image": train, "Id": ["new_whale", "w_1287fbc", "w_98baff9", "w_7554f44", "w_1eafe46"] * 2}, folder / "train.csv")
    csv({"Image": test, "Id": "new_whale w_1287fbc w_98baff9 w_7554f44 w_1eafe46"}, folder / "sample_submission.csv")
    return folder


def hotel_id(folder: Path) -> Path:
    """train_images/<chain>/<image>, test_images/<image> (flat); train.csv image,chain,hotel_id,timestamp."""
    train, test = [f"{h}.jpg" for h in hexes(10, 16)], [f"{h}.jpg" for h in hexes(4, 16, 1)]
    chains = [k % 3 for k in range(10)]
    for name, chain in zip(train, chains):
        touch(folder / "train_images" / str(chain) / name)
    for name in test:
        touch(folder / "test_images" / name)
    csv({"image": train, "chain": chains, "hotel_id": [100 + k % 4 for k in range(10)], "timestamp": "2018-01-01 10:00:00"},
        folder / "train.csv")
    csv({"image": test, "hotel_id": "36363 53586 18807 64314 60181"}, folder / "sample_submission.csv")
    return folder


def iwildcam_2019(folder: Path) -> Path:
    """train.csv and test.csv (id, location, ...), a sample with a blank-headed index (,Id,Category), and
    train_images.zip, test_images.zip holding <id>.jpg at their root."""
    train, test = hexes(10, 12), hexes(4, 12, 1)
    for split, ids in (("train_images", train), ("test_images", test)):
        for i in ids:
            touch(folder.parent / f"staging-{split}" / f"{i}.jpg")
        write_zip(folder.parent / f"staging-{split}", _made(folder) / f"{split}.zip")
    csv({"category_id": [k % 3 for k in range(10)], "file_name": [f"{i}.jpg" for i in train], "id": train, "location": 1},
        folder / "train.csv")
    csv({"file_name": [f"{i}.jpg" for i in test], "id": test, "location": 2}, folder / "test.csv")
    pd.DataFrame({"Id": test, "Category": 0}, index=[5, 9, 11, 20]).to_csv(folder / "sample_submission.csv")
    return folder


def coco_files(folder: Path, train_name: str, test_name: str, train_root: str, test_root: str, prefix: bool,
               test_as_list: bool = False, string_ids: bool = False) -> tuple[list[dict], list[dict]]:
    """A COCO training file and a test file; the images' file_names (under <root>/ where `prefix`)."""
    root = f"{train_root}/" if prefix else ""
    images = [{"id": str(k) if string_ids else k, "file_name": f"{root}Plants/{400 + k % 2}/{k}.jpg"} for k in range(8)]
    annotations = [{"id": k, "image_id": image["id"], "category_id": 400 + k % 2} for k, image in enumerate(images)]
    hidden = [{"id": str(100 + k) if string_ids else 100 + k, "file_name": f"{test_root + '/' if prefix else ''}{k}.jpg"}
              for k in range(3)]
    train = {"annotations": annotations, "categories": [{"id": 400, "name": "a"}, {"id": 401, "name": "b"}], "images": images}
    (_made(folder) / train_name).parent.mkdir(parents=True, exist_ok=True)
    (folder / train_name).write_text(json.dumps(train))
    (folder / test_name).parent.mkdir(parents=True, exist_ok=True)
    (folder / test_name).write_text(json.dumps(hidden if test_as_list else {"images": hidden, "info": {}}))
    return images, hidden


def inaturalist(folder: Path) -> Path:
    """COCO JSONs whose file_names start with the folder's name; the folders as plain tars named .tar.gz,
    whose members lack that prefix; val2019.json annotated too."""
    images, hidden = coco_files(folder, "train2019.json", "test2019.json", "train_val2019", "test2019", prefix=True)
    (folder / "val2019.json").write_text((folder / "train2019.json").read_text())
    for root, records in (("train_val2019", images), ("test2019", hidden)):
        for record in records:
            touch(folder.parent / f"staging-{root}" / record["file_name"].split("/", 1)[1])
        write_tar(folder.parent / f"staging-{root}", folder / f"{root}.tar.gz", compress=False)
    csv({"id": [h["id"] for h in hidden], "predicted": 3}, folder / "kaggle_sample_submission.csv")
    return folder


def herbarium_2020(folder: Path) -> Path:
    """nybg2020/train/metadata.json and nybg2020/train/images/..., the same for test; ids as text in test."""
    images, hidden = coco_files(folder, "nybg2020/train/metadata.json", "nybg2020/test/metadata.json", "", "",
                                prefix=False, string_ids=True)
    for record in images:
        touch(folder / "nybg2020" / "train" / record["file_name"])
    for record in hidden:
        touch(folder / "nybg2020" / "test" / record["file_name"])
    csv({"Id": [h["id"] for h in hidden], "Predicted": 0}, folder / "sample_submission.csv")
    return folder


def iwildcam_2020(folder: Path) -> Path:
    """COCO annotations and test information, a MegaDetector file that is neither, train/ and test/."""
    images, hidden = coco_files(folder, "iwildcam2020_train_annotations.json", "iwildcam2020_test_information.json",
                                "", "", prefix=False)
    for split, records in (("train", images), ("test", hidden)):
        for record in records:
            touch(folder / split / record["file_name"])
    (folder / "iwildcam2020_megadetector_results.json").write_text(json.dumps({"images": [{"id": 1, "detections": []}],
                                                                               "detection_categories": {"1": "animal"}}))
    csv({"Id": [h["id"] for h in hidden], "Category": 0}, folder / "sample_submission.csv")
    return folder


def alaska2(folder: Path) -> Path:
    """Cover/, JMiPOD/, JUNIWARD/, UERD/ (the same names in each), Test/; sample Id (with .jpg),Label."""
    for name in ("Cover", "JMiPOD", "JUNIWARD", "UERD"):
        for n in range(1, 5):
            touch(folder / name / f"{n:05d}.jpg")
    for n in range(1, 4):
        touch(folder / "Test" / f"{n:04d}.jpg")
    csv({"Id": [f"{n:04d}.jpg" for n in range(1, 4)], "Label": 0}, folder / "sample_submission.csv")
    return folder


def seti(folder: Path) -> Path:
    """train_labels.csv id,target; train/<id[0]>/<id>.npy, test/<id[0]>/<id>.npy; old_leaky_data/ beside them."""
    train, test = hexes(10, 15), hexes(4, 15, 1)
    for split, ids in (("train", train), ("test", test)):
        for i in ids:
            np.save(_made(folder / split / i[0]) / f"{i}.npy", np.zeros((2, 4, 4), np.float16))
            touch(folder / "old_leaky_data" / split / f"{i}.npy")
    csv({"id": train, "target": [k % 2 for k in range(10)]}, folder / "train_labels.csv")
    csv({"id": test, "target": 0.5}, folder / "sample_submission.csv")
    return folder


def statoil(folder: Path) -> Path:
    """train.json.7z, test.json.7z and sample_submission.csv.7z, one file at each archive's root."""
    staging = _made(folder.parent / "staging-statoil")

    def record(k: int) -> dict:
        return {"id": f"{k:08x}", "band_1": [float(k)] * 81, "band_2": [0.5] * 81, "inc_angle": "na" if k == 3 else 38.5}

    (staging / "train.json").write_text(json.dumps([{**record(k), "is_iceberg": k % 2} for k in range(8)]))
    (staging / "test.json").write_text(json.dumps([record(100 + k) for k in range(3)]))
    csv({"id": [f"{100 + k:08x}" for k in range(3)], "is_iceberg": 0.5}, staging / "sample_submission.csv")
    for name in ("train.json", "test.json", "sample_submission.csv"):
        write_7z(staging / name, _made(folder) / f"{name}.7z")
    return folder


def stanford_covid(folder: Path) -> Path:
    """train.json and test.json as JSON lines; sample id_seqpos and the five targets, every position."""
    rng = np.random.default_rng(0)
    targets = ["reactivity", "deg_Mg_pH10", "deg_pH10", "deg_Mg_50C", "deg_50C"]

    def rna(k: int, train: bool) -> dict:
        row = {"index": k, "id": f"id_{k:09x}", "sequence": "".join(rng.choice(list("ACGU"), 10)),
               "structure": "".join(rng.choice(list("(.)"), 10)), "predicted_loop_type": "".join(rng.choice(list("SMHE"), 10)),
               "seq_length": 10, "seq_scored": 6}
        if train:
            row.update({t: rng.normal(0, 1, 6).round(3).tolist() for t in targets})
            row["reactivity_error"] = [0.1] * 6
        return row

    pd.DataFrame([rna(k, True) for k in range(6)]).to_json(_made(folder) / "train.json", orient="records", lines=True)
    test = [rna(100 + k, False) for k in range(2)]
    pd.DataFrame(test).to_json(folder / "test.json", orient="records", lines=True)
    csv({"id_seqpos": [f"{r['id']}_{p}" for r in test for p in range(10)], **{t: 0.0 for t in targets}},
        folder / "sample_submission.csv")
    return folder


def invasive(folder: Path) -> Path:
    """train_labels.csv.zip, sample_submission.csv.zip, train.7z and test.7z of <name>.jpg."""
    staging = _made(folder.parent / "staging-invasive")
    csv({"name": range(1, 11), "invasive": [k % 2 for k in range(10)]}, staging / "train_labels.csv")
    csv({"name": range(11, 15), "invasive": 0.5}, staging / "sample_submission.csv")
    for name in ("train_labels.csv", "sample_submission.csv"):
        write_zip(staging / name, _made(folder) / f"{name}.zip")
    for split, names in (("train", range(1, 11)), ("test", range(11, 15))):
        for n in names:
            touch(staging / split / f"{n}.jpg")
        write_7z(staging / split, folder / f"{split}.7z")
    return folder


def movie_review(folder: Path) -> Path:
    """train.tsv.zip and test.tsv.zip (PhraseId, SentenceId, Phrase[, Sentiment]); sampleSubmission.csv."""
    staging = _made(folder.parent / "staging-movie")
    phrases = sentences(14, words=4)
    csv({"PhraseId": range(1, 11), "SentenceId": [k // 3 for k in range(10)], "Phrase": phrases[:10],
         "Sentiment": [k % 5 for k in range(10)]}, staging / "train.tsv", sep="\t")
    csv({"PhraseId": range(11, 15), "SentenceId": 9, "Phrase": phrases[10:]}, staging / "test.tsv", sep="\t")
    for name in ("train.tsv", "test.tsv"):
        write_zip(staging / name, _made(folder) / f"{name}.zip")
    csv({"PhraseId": range(11, 15), "Sentiment": 2}, folder / "sampleSubmission.csv")
    return folder


def lmsys(folder: Path) -> Path:
    """train.csv with one-hot winner columns; test.csv id,prompt,response_a,response_b."""
    texts = [json.dumps([t]) for t in sentences(24)]
    winners = np.eye(3, dtype=int)[[k % 3 for k in range(6)]]
    csv({"id": range(6), "model_a": "gpt-4", "model_b": "claude-1", "prompt": texts[:6], "response_a": texts[6:12],
         "response_b": texts[12:18], "winner_model_a": winners[:, 0], "winner_model_b": winners[:, 1],
         "winner_tie": winners[:, 2]}, folder / "train.csv")
    csv({"id": [10, 11], "prompt": texts[18:20], "response_a": texts[20:22], "response_b": texts[22:24]}, folder / "test.csv")
    csv({"id": [10, 11], "winner_model_a": 1 / 3, "winner_model_b": 1 / 3, "winner_tie": 1 / 3}, folder / "sample_submission.csv")
    return folder


def jigsaw(folder: Path) -> Path:
    """train.csv id,target,comment_text, other scores and identities; test.csv id,comment_text; sample id,prediction."""
    texts = sentences(12)
    csv({"id": range(8), "target": [0.0, 0.2, 0.8, 1.0] * 2, "comment_text": texts[:8], "severe_toxicity": 0.0,
         "male": [np.nan, 1.0] * 4, "female": 0.0, "black": [0.0, np.nan] * 4, "created_date": "2015-09-29"},
        folder / "train.csv")
    csv({"id": range(8, 12), "comment_text": texts[8:]}, folder / "test.csv")
    csv({"id": range(8, 12), "prediction": 0.0}, folder / "sample_submission.csv")
    return folder


def tables_only(folder: Path) -> Path:
    """A table of numbers per row: no images, texts or sequences (spaceship-titanic's kind)."""
    csv({"PassengerId": ["0001_01", "0002_01", "0003_01", "0004_01"], "Age": [20, 30, 40, 50],
         "Transported": [True, False, True, False]}, folder / "train.csv")
    csv({"PassengerId": ["0005_01", "0006_01"], "Age": [22, 33]}, folder / "test.csv")
    csv({"PassengerId": ["0005_01", "0006_01"], "Transported": False}, folder / "sample_submission.csv")
    return folder


def hubmap(folder: Path) -> Path:
    """hubmap-kidney-segmentation: train.csv id,encoding (a run-length code per kidney image), train/<id>.tiff with
    <id>-anatomical-structure.json beside each, HuBMAP-20-dataset_information.csv, test/<id>.tiff, and
    sample_submission.csv id,predicted with the codes left empty."""
    train, test = hexes(6, 9), hexes(2, 9, 1)
    for split, ids in (("train", train), ("test", test)):
        for i in ids:
            touch(folder / split / f"{i}.tiff", b"II*\x00 tiff")
            touch(folder / split / f"{i}-anatomical-structure.json", b"[]")
    csv({"id": train, "encoding": ["61 3 89 4", "5 2", "1 9 30 2", "7 7", "12 3 40 3", "3 3"]}, folder / "train.csv")
    csv({"image_file": [f"{i}.tiff" for i in train + test], "width_pixels": 48, "height_pixels": 32},
        folder / "HuBMAP-20-dataset_information.csv")
    csv({"id": test, "predicted": [None] * len(test)}, folder / "sample_submission.csv")
    return folder


def carvana(folder: Path) -> Path:
    """carvana-image-masking-challenge: train/<car>_<view>.jpg, train_masks/<car>_<view>_mask.gif, train_masks.csv
    img,rle_mask (the same masks as codes; img ends in .jpg), test/, sample_submission.csv img,rle_mask."""
    cars = hexes(3, 12)
    train = [f"{c}_{v:02d}" for c in cars[:2] for v in (1, 2, 3)]
    test = [f"{cars[2]}_{v:02d}" for v in (1, 2)]
    for i in train:
        touch(folder / "train" / f"{i}.jpg")
        touch(folder / "train_masks" / f"{i}_mask.gif", b"GIF89a")
    for i in test:
        touch(folder / "test" / f"{i}.jpg")
    csv({"img": [f"{i}.jpg" for i in train], "rle_mask": "1 4 20 4"}, folder / "train_masks.csv")
    csv({"img": [f"{i}.jpg" for i in test], "rle_mask": "1 1"}, folder / "sample_submission.csv")
    return folder


def mask_files(folder: Path) -> Path:
    """No table of codes: train/<id>.jpg and a mask file each in train_masks/<id>_mask.gif; the sample's ids are
    the test files' names without their extension."""
    train, test = hexes(6, 10), hexes(2, 10, 1)
    for i in train:
        touch(folder / "train" / f"{i}.jpg")
        touch(folder / "train_masks" / f"{i}_mask.gif", b"GIF89a")
    for i in test:
        touch(folder / "test" / f"{i}.jpg")
    csv({"id": test, "rle_mask": "1 1"}, folder / "sample_submission.csv")
    return folder
