"""The gallery's photo competitions whose labels are a table, file names or folders: their MLE-bench public
folders (names, columns, id formats, archives) at smoke size, each label showing in its pictures."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import inputs, packing
from kit.smoke.gallery.pictures import hex_ids, of_class, of_labels, save, with_message
from kit.spec import Spec


def classes(rng: np.random.Generator, n: int, per_class: int) -> np.ndarray:
    """per_class rows of each of n classes, shuffled (MLE-bench's splits shuffle the rows)."""
    return rng.permutation(np.repeat(np.arange(n), per_class))


def aerial_cactus(folder: Path, seed: int = 0, train: int = 80, test: int = 20) -> None:
    """train.csv id,has_cactus (ids end in .jpg), sample_submission.csv id,has_cactus=0.5, train.zip and test.zip
    holding the 32 px JPEGs at their root (the folders removed); about 3 in 4 with a cactus."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    ids = [f"{h}.jpg" for h in hex_ids(rng, train + test, 32)]
    cactus = (rng.random(train + test) < 0.75).astype(int)
    for split, rows in (("train", range(train)), ("test", range(train, train + test))):
        for i in rows:
            save(of_class(rng, int(cactus[i]), 2), staging / split / ids[i])
        packing.write_zip(staging / split, folder / f"{split}.zip")
    shutil.rmtree(staging)
    pd.DataFrame({"id": ids[:train], "has_cactus": cactus[:train]}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"id": ids[train:], "has_cactus": 0.5}).to_csv(folder / "sample_submission.csv", index=False)


def dogs_vs_cats(folder: Path, seed: int = 0) -> None:
    """train/cat.<k>.jpg and dog.<k>.jpg, test/<n>.jpg, both also zipped, sample_submission.csv id,label=0.5
    (kit.smoke.inputs' maker)."""
    spec = Spec(slug="dogs-vs-cats-redux-kernels-edition", id_column="id", target_column="label")
    inputs.make_named(spec, folder, seed)


ATTRIBUTES = {13: "culture::french", 147: "culture::american", 405: "medium::oil on canvas", 903: "tags::flowers",
              1059: "tags::landscapes", 1092: "tags::men", 3465: "dimension::large"}  # a few of imet's 3,474


def imet(folder: Path, seed: int = 0, train: int = 96, test: int = 16) -> None:
    """train.csv id,attribute_ids (space-separated ints), labels.csv attribute_id,attribute_name, train/<id>.png,
    test/<id>.png (ids 16 hex digits, no extension), sample_submission.csv id,attribute_ids="0 1 2"."""
    rng = np.random.default_rng(seed)
    ids = hex_ids(rng, train + test, 16)
    attributes = list(ATTRIBUTES)
    rows = []
    for i, image_id in enumerate(ids):
        chosen = sorted(rng.choice(len(attributes), int(rng.integers(1, 4)), replace=False).tolist())
        save(of_labels(rng, chosen), folder / ("train" if i < train else "test") / f"{image_id}.png")
        rows.append(" ".join(str(attributes[j]) for j in chosen))
    pd.DataFrame({"id": ids[:train], "attribute_ids": rows[:train]}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"attribute_id": attributes, "attribute_name": list(ATTRIBUTES.values())}).to_csv(folder / "labels.csv",
                                                                                                  index=False)
    pd.DataFrame({"id": ids[train:], "attribute_ids": "0 1 2"}).to_csv(folder / "sample_submission.csv", index=False)


DISEASES = ("healthy", "scab", "frog_eye_leaf_spot", "rust", "complex", "powdery_mildew")


def plant_pathology_2021(folder: Path, seed: int = 0, train: int = 96, test: int = 16) -> None:
    """train.csv image,labels (image ends in .jpg; labels space-separated, one or two of the 6), train_images/,
    test_images/, sample_submission.csv image,labels="healthy"."""
    rng = np.random.default_rng(seed)
    images = [f"{h}.jpg" for h in hex_ids(rng, train + test, 16)]
    labels = []
    for i, image in enumerate(images):
        first = int(rng.integers(len(DISEASES)))
        chosen = [first] if first == 0 or rng.random() < 0.7 else [first, int(rng.integers(1, len(DISEASES)))]
        chosen = sorted(set(chosen))
        save(of_labels(rng, chosen), folder / ("train_images" if i < train else "test_images") / image)
        labels.append(" ".join(DISEASES[j] for j in chosen))
    pd.DataFrame({"image": images[:train], "labels": labels[:train]}).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"image": images[train:], "labels": "healthy"}).to_csv(folder / "sample_submission.csv", index=False)


WILD_2019 = (0, 1, 10, 11)  # empty, deer, coyote, raccoon: a few of iwildcam-2019's 23 categories


def iwildcam_2019(folder: Path, seed: int = 0, per_class: int = 24, locations: int = 8) -> None:
    """train.csv and test.csv with the raw columns (test without category_id), split by location; images
    <id>.jpg at the root of train_images.zip and test_images.zip; sample_submission.csv written with pandas'
    index: ",Id,Category", the index the rows' labels in the raw table."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    k = classes(rng, len(WILD_2019), per_class + 4)
    n = len(k)
    ids = [f"{h[:8]}-{h[8:12]}-11e8-a6a3-{h[12:]}" for h in hex_ids(rng, n, 24)]
    location = rng.integers(0, locations, n)
    test = location >= locations - 2  # the last two locations are the test set's, as prepare splits by location
    table = pd.DataFrame({"category_id": [WILD_2019[c] for c in k], "date_captured": "2012-03-17 03:48:44",
                          "file_name": [f"{i}.jpg" for i in ids], "frame_num": 1, "id": ids, "location": location,
                          "rights_holder": "Justin Brown", "seq_id": [f"6f084ccc-5567-11e8-bc84-{h}" for h in
                                                                      hex_ids(rng, n, 12)],
                          "seq_num_frames": 3, "width": 1024, "height": 747})
    for i in range(n):
        save(of_class(rng, int(k[i]), len(WILD_2019)), staging / ("test" if test[i] else "train") / f"{ids[i]}.jpg")
    packing.write_zip(staging / "train", folder / "train_images.zip")
    packing.write_zip(staging / "test", folder / "test_images.zip")
    shutil.rmtree(staging)
    table[~test].to_csv(folder / "train.csv", index=False)
    table[test].drop(columns="category_id").to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"Id": table["id"][test], "Category": 0}).to_csv(folder / "sample_submission.csv", index=True)


def whale(folder: Path, seed: int = 0, whales: int = 6, per_whale: int = 12, new: int = 12) -> None:
    """train.csv Image,Id (Image ends in .jpg; Id w_ and 7 hex digits, or new_whale), train/ and test/
    JPEGs, sample_submission.csv Image,Id holding five labels. Each whale its own look; new_whale any look."""
    rng = np.random.default_rng(seed)
    names = [f"w_{h}" for h in hex_ids(rng, whales, 7)]
    k = np.concatenate([classes(rng, whales, per_whale), np.full(new, whales)])
    images = [f"{h}.jpg" for h in hex_ids(rng, len(k), 8)]
    test = rng.random(len(k)) < 0.15
    for i, image in enumerate(images):
        look = int(k[i]) if k[i] < whales else int(rng.integers(whales, whales + 2))
        save(of_class(rng, look, whales + 2), folder / ("test" if test[i] else "train") / image)
    labels = [names[c] if c < whales else "new_whale" for c in k]
    train = pd.DataFrame({"Image": images, "Id": labels})[~test]
    train.to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"Image": np.array(images)[test], "Id": "new_whale w_1287fbc w_98baff9 w_7554f44 w_1eafe46"}).to_csv(
        folder / "sample_submission.csv", index=False)


HOTELS = {36363: 3, 53586: 3, 18807: 5, 64314: 5, 60181: 0, 10042: 0}  # hotel id: its chain (0 = none)


def hotel_id(folder: Path, seed: int = 0, per_hotel: int = 14, test: int = 16) -> None:
    """train.csv image,chain,hotel_id,timestamp, train_images/<chain>/<image>, test_images/<image> (flat),
    sample_submission.csv image,hotel_id holding five hotel ids."""
    rng = np.random.default_rng(seed)
    hotels = list(HOTELS)
    k = classes(rng, len(hotels), per_hotel)
    images = [f"{h}.jpg" for h in hex_ids(rng, len(k) + test, 16)]
    rows = []
    for i, c in enumerate(k):
        chain = HOTELS[hotels[c]]
        save(of_class(rng, int(c), len(hotels)), folder / "train_images" / str(chain) / images[i])
        rows.append((images[i], chain, hotels[c], f"2018-0{1 + i % 9}-1{i % 10} 0{i % 10}:17:42"))
    for image in images[len(k):]:
        save(of_class(rng, int(rng.integers(len(hotels))), len(hotels)), folder / "test_images" / image)
    pd.DataFrame(rows, columns=["image", "chain", "hotel_id", "timestamp"]).to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"image": images[len(k):], "hotel_id": "36363 53586 18807 64314 60181"}).to_csv(
        folder / "sample_submission.csv", index=False)


STEGO = ("JMiPOD", "JUNIWARD", "UERD")


def alaska2(folder: Path, seed: int = 0, covers: int = 32, test: int = 24) -> None:
    """Cover/<n:05d>.jpg and the same names in JMiPOD/, JUNIWARD/ and UERD/ (each cover with a message hidden
    by each algorithm), Test/<n:04d>.jpg (a cover or one algorithm's version, half and half),
    sample_submission.csv Id,Label=0. No label table: the folder is the label."""
    rng = np.random.default_rng(seed)
    for n in range(1, covers + 1):
        cover = of_class(rng, int(rng.integers(4)), 4)
        save(cover, folder / "Cover" / f"{n:05d}.jpg")
        for algorithm in STEGO:
            save(with_message(cover, rng), folder / algorithm / f"{n:05d}.jpg")
    names = [f"{n:04d}.jpg" for n in range(1, test + 1)]
    for name in names:
        cover = of_class(rng, int(rng.integers(4)), 4)
        save(with_message(cover, rng) if rng.random() < 0.5 else cover, folder / "Test" / name)
    pd.DataFrame({"Id": names, "Label": 0}).to_csv(folder / "sample_submission.csv", index=False)


def invasive_species(folder: Path, seed: int = 0, train: int = 72, test: int = 18) -> None:
    """train_labels.csv.zip (train_labels.csv name,invasive), sample_submission.csv.zip (name,invasive=0.5),
    train.7z and test.7z holding train/<name>.jpg and test/<name>.jpg. MLE-bench's prepare.py writes its 7z files
    with py7zr's write(folder) and no arcname, which stores an empty folder entry and no image (its bug); these
    hold the images as Kaggle's own train.7z does, in a folder named as the archive."""
    rng = np.random.default_rng(seed)
    staging = folder / ".staging"
    names = rng.permutation(np.arange(1, train + test + 1))
    invasive = (rng.random(train + test) < 0.6).astype(int)
    for split, rows in (("train", range(train)), ("test", range(train, train + test))):
        for i in rows:
            save(of_class(rng, int(invasive[i]), 2), staging / split / f"{names[i]}.jpg")
        packing.write_7z(staging / split, folder / f"{split}.7z", prefix=split)
    pd.DataFrame({"name": names[:train], "invasive": invasive[:train]}).to_csv(staging / "train_labels.csv", index=False)
    pd.DataFrame({"name": names[train:], "invasive": 0.5}).to_csv(staging / "sample_submission.csv", index=False)
    for name in ("train_labels.csv", "sample_submission.csv"):
        packing.write_zip(staging / name, folder / f"{name}.zip")
    shutil.rmtree(staging)


def invasive_species_as_prepared(folder: Path, seed: int = 0) -> None:
    """invasive-species-monitoring's public files exactly as MLE-bench's prepare.py writes them: its train.7z and
    test.7z hold one empty folder entry each and no image (mle-bench issue #122). No model can train on them; a
    run submits the training labels' prior (kit.run.fallback). Not in MAKERS: the gallery's run trains."""
    invasive_species(folder, seed)
    for split in ("train", "test"):
        (folder / f"{split}.7z").unlink()
        packing.write_7z_folder(folder / f"{split}.7z", split)
