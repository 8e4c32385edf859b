"""The gallery's competitions whose labels come in COCO-style JSON (images, annotations, categories): iwildcam-2020,
inaturalist-2019 and the herbarium years, in their MLE-bench public layouts at smoke size."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import inputs
from kit.smoke.gallery.photos import classes
from kit.smoke.gallery.pictures import hex_ids, of_class, save
from kit.spec import Spec


def write_json(path: Path, value, pretty: bool) -> None:
    """As prepare.py dumps it: `indent=4, sort_keys=True` (the herbarium and inaturalist files) or compact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=4, sort_keys=True) if pretty else json.dumps(value))


WILD_2020 = {0: "empty", 372: "tayassu pecari", 73: "dasyprocta punctata", 101: "meleagris ocellata"}


def iwildcam_2020(folder: Path, seed: int = 0, per_class: int = 20, locations: int = 8) -> None:
    """iwildcam2020_train_annotations.json (annotations, images, categories, info; compact), the test
    information JSON (images, categories, info) of the held-out locations, the megadetector results (every
    image), train/<id>.jpg, test/<id>.jpg, sample_submission.csv Id,Category (random category ids 0-675)."""
    rng = np.random.default_rng(seed)
    ids = list(WILD_2020)
    k = classes(rng, len(ids), per_class + 4)
    names = [f"{h[:8]}-21bc-11ea-a13a-{h[8:]}" for h in hex_ids(rng, len(k), 20)]
    location = rng.integers(0, locations, len(k))
    test = location >= locations - 2
    images, annotations = [], []
    for i, name in enumerate(names):
        images.append({"seq_num_frames": 3, "location": int(location[i]), "datetime": "2013-06-05 05:44:19.000",
                       "id": name, "frame_num": 1 + i % 3, "seq_id": f"30048d32-7d42-11eb-8fb5-{i:012x}", "width": 2048,
                       "height": 1536, "file_name": f"{name}.jpg"})
        annotations.append({"count": 1, "image_id": name, "id": f"a{i:07x}-21bc-11ea-a13a", "category_id": ids[k[i]]})
        save(of_class(rng, int(k[i]), len(ids)), folder / ("test" if test[i] else "train") / f"{name}.jpg")
    categories = [{"count": 100 + c, "id": c, "name": n} for c, n in WILD_2020.items()]
    info = {"version": "3.0", "description": "Camera trap data", "year": 2020}
    keep = [i for i in range(len(names)) if not test[i]]
    write_json(folder / "iwildcam2020_train_annotations.json", {"annotations": [annotations[i] for i in keep],
               "images": [images[i] for i in keep], "categories": categories, "info": info}, pretty=False)
    write_json(folder / "iwildcam2020_test_information.json", {"images": [images[i] for i in np.flatnonzero(test)],
               "categories": categories, "info": info}, pretty=False)
    write_json(folder / "iwildcam2020_megadetector_results.json", {"images": [{"detections": [], "id": n,
               "max_detection_conf": 0.0} for n in names], "detection_categories": {"1": "animal", "2": "person"},
               "info": {"detector": "megadetector_v3"}}, pretty=False)
    hidden = np.array(names)[test]
    pd.DataFrame({"Id": hidden, "Category": rng.integers(0, 676, len(hidden))}).to_csv(folder / "sample_submission.csv",
                                                                                       index=False)


def inaturalist_2019(folder: Path, seed: int = 0) -> None:
    """train2019.json and test2019.json, val2019.json (metadata only), train_val2019.tar.gz and test2019.tar.gz
    (plain tars of the folders' files, without the folder that the JSON file_names start with),
    kaggle_sample_submission.csv id,predicted (kit.smoke.inputs' maker)."""
    spec = Spec(slug="inaturalist-2019-fgvc6", layout="coco", train="train2019.json", test="test2019.json",
                sample_submission="kaggle_sample_submission.csv", id_column="id", target_column="predicted",
                train_images="train_val2019", test_images="test2019")
    inputs.make_coco(spec, folder, seed, per_class=16, test=12)
    write_json(folder / "val2019.json", {"annotations": [], "categories": [], "images": [], "info": {"year": 2019},
                                         "licenses": []}, pretty=True)


def herbarium(year: int) -> Callable[[Path, int], None]:
    """herbarium-<year>'s maker."""
    def make(folder: Path, seed: int = 0) -> None:
        (herbarium_2022 if year == 2022 else herbarium_2020_2021)(folder, seed, year)
    make.__doc__ = HERBARIUM_DOC[year]
    return make


HERBARIUM_DOC = {
    2020: "nybg2020/train/metadata.json (annotations, categories, images, info, licenses, regions), "
          "nybg2020/train/images/<c3>/<c2>/<id>.jpg, nybg2020/test/metadata.json (images with ids '0'.., info, "
          "licenses), nybg2020/test/images/<k3>/<k>.jpg, sample_submission.csv Id,Predicted=0.",
    2021: "herbarium-2020's layout without nybg2020/: train/metadata.json (... institutions), test/metadata.json.",
    2022: "train_metadata.json (annotations, categories, genera, images, distances, licenses, institutions; image ids "
          "<category:05d>__<n:03d>), train_images/<c3>/<c2>/<id>.jpg, test_metadata.json a list of image records "
          "(ids '0'..), test_images/<k3>/test-<k:06d>.jpg, sample_submission.csv Id,Predicted=42.",
}
PLANTS = {2020: (15504, 3, 780, 23100), 2021: (1104, 517, 44001, 61230), 2022: (15504, 37, 10021, 2409)}


def herbarium_2020_2021(folder: Path, seed: int, year: int, per_class: int = 20, test_per_class: int = 5) -> None:
    rng = np.random.default_rng(seed)
    root = folder / ("nybg2020" if year == 2020 else "")
    species = PLANTS[year]
    images, annotations, hidden = [], [], []
    for k, category in enumerate(species):
        for n in range(per_class + test_per_class):
            image_id = 354_106 + 3 * (len(images) + len(hidden))  # ints, as the raw metadata's
            picture = of_class(rng, k, len(species))
            if n < per_class:
                file_name = f"images/{category // 100:03d}/{category % 100:02d}/{image_id}.jpg"
                images.append({"file_name": file_name, "height": 1000, "id": image_id, "license": 0, "width": 661})
                annotations.append({"category_id": category, "id": image_id, "image_id": image_id, "region_id": k % 2})
                save(picture, root / "train" / file_name)
            else:
                hidden.append(picture)
    order = rng.permutation(len(hidden))
    tests = []
    for idx, j in enumerate(order):
        file_name = f"images/{idx // 1000:03d}/{idx}.jpg"
        tests.append({"file_name": file_name, "height": 1000, "id": str(idx), "license": 0, "width": 661})
        save(hidden[j], root / "test" / file_name)
    third = "family" if year == 2020 else "order"
    categories = [{"family": "Fabaceae", "genus": "Acacia", third: "Fabales", "id": c, "name": f"Acacia species{c}"}
                  for c in species]
    info = {"contributor": "New York Botanical Garden", "year": year}
    licenses = [{"id": 0, "name": "Public Domain Dedication", "url": "http://creativecommons.org/publicdomain/zero/1.0/"}]
    extra = {"regions": [{"id": 0, "name": "Asia"}, {"id": 1, "name": "Africa"}]} if year == 2020 else \
        {"institutions": [{"id": 0, "name": "New York Botanical Garden"}, {"id": 1, "name": "Royal Botanic Gardens"}]}
    write_json(root / "train" / "metadata.json", {"annotations": annotations, "categories": categories, "images": images,
                                                 "info": info, "licenses": licenses, **extra}, pretty=True)
    write_json(root / "test" / "metadata.json", {"images": tests, "info": info, "licenses": licenses}, pretty=True)
    pd.DataFrame({"Id": range(len(tests)), "Predicted": 0}).to_csv(folder / "sample_submission.csv", index=False)


def herbarium_2022(folder: Path, seed: int, year: int = 2022, per_class: int = 20, test_per_class: int = 5) -> None:
    rng = np.random.default_rng(seed)
    species = PLANTS[year]
    images, annotations, hidden = [], [], []
    for k, category in enumerate(species):
        for n in range(per_class + test_per_class):
            picture = of_class(rng, k, len(species))
            if n >= per_class:
                hidden.append(picture)
                continue
            image_id = f"{category:05d}__{n + 1:03d}"
            file_name = f"{category // 100:03d}/{category % 100:02d}/{image_id}.jpg"
            images.append({"file_name": file_name, "image_id": image_id, "license": 0})
            annotations.append({"category_id": category, "genus_id": k + 1, "image_id": image_id, "institution_id": k % 2})
            save(picture, folder / "train_images" / file_name)
    tests = []
    for idx, j in enumerate(rng.permutation(len(hidden))):
        file_name = f"{idx // 1000:03d}/test-{idx:06d}.jpg"
        tests.append({"file_name": file_name, "image_id": str(idx), "license": 0})
        save(hidden[j], folder / "test_images" / file_name)
    categories = [{"authors": "L.", "category_id": c, "family": "Fabaceae", "genus": "Acacia",
                   "scientificName": f"Acacia species{c} L.", "species": f"species{c}"} for c in species]
    write_json(folder / "train_metadata.json", {
        "annotations": annotations, "categories": categories, "distances": [],
        "genera": [{"genus": "Acacia", "genus_id": k + 1} for k in range(len(species))], "images": images,
        "institutions": [{"collectionCode": "NY", "institution_id": 0}, {"collectionCode": "K", "institution_id": 1}],
        "licenses": [{"id": 0, "name": "Public Domain Dedication"}]}, pretty=True)
    write_json(folder / "test_metadata.json", tests, pretty=True)
    pd.DataFrame({"Id": range(len(tests)), "Predicted": 42}).to_csv(folder / "sample_submission.csv", index=False)
