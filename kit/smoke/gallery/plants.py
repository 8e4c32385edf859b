"""The gallery's leaf competitions with one class a photo: leaf-classification (silhouettes beside 192 shape
features, 99 species), plant-pathology-2020 (one-hot disease columns) and cassava (label numbers, a JSON map of
their names, TFRecords beside the images). Their MLE-bench public folders (names, columns, id formats) at smoke
size, each class showing in its picture."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from kit.smoke import tfrecords
from kit.smoke.gallery.grades import split
from kit.smoke.gallery.pictures import of_class, save

# mlebench/competitions/leaf-classification/classes.py: the sample's and the grader's 99 columns, in this order
SPECIES = tuple((
    "Acer_Capillipes Acer_Circinatum Acer_Mono Acer_Opalus Acer_Palmatum Acer_Pictum Acer_Platanoids Acer_Rubrum "
    "Acer_Rufinerve Acer_Saccharinum Alnus_Cordata Alnus_Maximowiczii Alnus_Rubra Alnus_Sieboldiana Alnus_Viridis "
    "Arundinaria_Simonii Betula_Austrosinensis Betula_Pendula Callicarpa_Bodinieri Castanea_Sativa Celtis_Koraiensis "
    "Cercis_Siliquastrum Cornus_Chinensis Cornus_Controversa Cornus_Macrophylla Cotinus_Coggygria Crataegus_Monogyna "
    "Cytisus_Battandieri Eucalyptus_Glaucescens Eucalyptus_Neglecta Eucalyptus_Urnigera Fagus_Sylvatica Ginkgo_Biloba "
    "Ilex_Aquifolium Ilex_Cornuta Liquidambar_Styraciflua Liriodendron_Tulipifera Lithocarpus_Cleistocarpus "
    "Lithocarpus_Edulis Magnolia_Heptapeta Magnolia_Salicifolia Morus_Nigra Olea_Europaea Phildelphus "
    "Populus_Adenopoda Populus_Grandidentata Populus_Nigra Prunus_Avium Prunus_X_Shmittii Pterocarya_Stenoptera "
    "Quercus_Afares Quercus_Agrifolia Quercus_Alnifolia Quercus_Brantii Quercus_Canariensis Quercus_Castaneifolia "
    "Quercus_Cerris Quercus_Chrysolepis Quercus_Coccifera Quercus_Coccinea Quercus_Crassifolia Quercus_Crassipes "
    "Quercus_Dolicholepis Quercus_Ellipsoidalis Quercus_Greggii Quercus_Hartwissiana Quercus_Ilex Quercus_Imbricaria "
    "Quercus_Infectoria_sub Quercus_Kewensis Quercus_Nigra Quercus_Palustris Quercus_Phellos Quercus_Phillyraeoides "
    "Quercus_Pontica Quercus_Pubescens Quercus_Pyrenaica Quercus_Rhysophylla Quercus_Rubra Quercus_Semecarpifolia "
    "Quercus_Shumardii Quercus_Suber Quercus_Texana Quercus_Trojana Quercus_Variabilis Quercus_Vulcanica "
    "Quercus_x_Hispanica Quercus_x_Turneri Rhododendron_x_Russellianum Salix_Fragilis Salix_Intergra Sorbus_Aria "
    "Tilia_Oliveri Tilia_Platyphyllos Tilia_Tomentosa Ulmus_Bergmanniana Viburnum_Tinus Viburnum_x_Rhytidophylloides "
    "Zelkova_Serrata").split())
FEATURES = tuple(f"{kind}{k}" for kind in ("margin", "shape", "texture") for k in range(1, 65))


def leaf(folder: Path, seed: int = 0, species: int = 4, per_species: int = 20, test: int = 16) -> None:
    """train.csv id,species + margin1-64, shape1-64, texture1-64 (ids whole numbers up to 1584), test.csv the same
    without species, sample_submission.csv id + the 99 species columns (1/99 each), and images/<id>.jpg for
    train and test alike (grey JPEGs). A few species in the smoke rows; the sample lists all 99."""
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(SPECIES), species, replace=False).tolist())
    k = rng.permutation(np.repeat(np.arange(species), per_species + test))[:species * per_species + test]
    ids = np.sort(rng.choice(np.arange(1, 1585), len(k), replace=False))
    for i, image_id in enumerate(ids):
        save(of_class(rng, int(k[i]), species).convert("L"), folder / "images" / f"{image_id}.jpg")
    table = pd.DataFrame({"id": ids, "species": [SPECIES[chosen[c]] for c in k],
                          **{f: rng.random(len(k)).round(6) * 0.1 for f in FEATURES}})
    rows, held = split(rng, len(k), test)
    table.iloc[rows].to_csv(folder / "train.csv", index=False)
    table.iloc[held].drop(columns="species").to_csv(folder / "test.csv", index=False)
    pd.DataFrame({"id": ids[held], **{s: 1 / len(SPECIES) for s in SPECIES}}).to_csv(
        folder / "sample_submission.csv", index=False)


DISEASES_2020 = ("healthy", "multiple_diseases", "rust", "scab")


def plant_pathology_2020(folder: Path, seed: int = 0, per_class: int = 22, test: int = 16) -> None:
    """train.csv image_id,healthy,multiple_diseases,rust,scab (one 1 a row; ids Train_<n>, numbered in the file's
    order), test.csv image_id (Test_<n>), sample_submission.csv image_id + the four columns at 0.25, and
    images/<image_id>.jpg for both."""
    rng = np.random.default_rng(seed)
    n = len(DISEASES_2020) * per_class
    k = rng.permutation(np.repeat(np.arange(len(DISEASES_2020)), per_class))
    ids = [f"Train_{i}" for i in range(n - test)] + [f"Test_{i}" for i in range(test)]
    for i, image_id in enumerate(ids):
        save(of_class(rng, int(k[i]), len(DISEASES_2020)), folder / "images" / f"{image_id}.jpg")
    table = pd.DataFrame({"image_id": ids, **{d: (k == j).astype(int) for j, d in enumerate(DISEASES_2020)}})
    table.iloc[:n - test].to_csv(folder / "train.csv", index=False)
    table.iloc[n - test:, :1].to_csv(folder / "test.csv", index=False)
    table.iloc[n - test:, :1].assign(**{d: 0.25 for d in DISEASES_2020}).to_csv(folder / "sample_submission.csv",
                                                                                index=False)


CASSAVA = ("Cassava Bacterial Blight (CBB)", "Cassava Brown Streak Disease (CBSD)", "Cassava Green Mottle (CGM)",
           "Cassava Mosaic Disease (CMD)", "Healthy")


def cassava(folder: Path, seed: int = 0, files: int = 6, per_file: int = 16) -> None:
    """train.csv image_id,label (image_id a number ending in .jpg, label 0 to 4; sorted by image_id),
    sample_submission.csv image_id,label=4, train_images/ and test_images/ of <image_id>, train_tfrecords/
    ld_train<i>-<n>.tfrec and test_tfrecords/ld_test<i>-<n>.tfrec holding the same images (image, image_name,
    target), and label_num_to_disease_map.json. MLE-bench splits by TFRecord file: one of `files` is the test's."""
    rng = np.random.default_rng(seed)
    n = files * per_file
    names = np.array([f"{v}.jpg" for v in rng.permutation(np.unique(rng.integers(10 ** 6, 5 * 10 ** 9, 2 * n)))[:n]])
    k = rng.permutation(np.repeat(np.arange(len(CASSAVA)), n // len(CASSAVA) + 1))[:n]
    rows, held = split(rng, files, 1)
    for part, name in ((rows, "train"), (held, "test")):
        for index, f in enumerate(part):
            records = []
            for i in range(f * per_file, (f + 1) * per_file):
                path = save(of_class(rng, int(k[i]), len(CASSAVA)), folder / f"{name}_images" / names[i])
                records.append({"image": path.read_bytes(), "image_name": names[i].encode(), "target": int(k[i])})
            tfrecords.write(records, folder / f"{name}_tfrecords" / f"ld_{name}{index:02d}-{per_file}.tfrec")
    table = pd.DataFrame({"image_id": names, "label": k}).sort_values("image_id")
    test = table["image_id"].isin([names[i] for f in held for i in range(f * per_file, (f + 1) * per_file)])
    table[~test].to_csv(folder / "train.csv", index=False)
    table[test].assign(label=4).to_csv(folder / "sample_submission.csv", index=False)
    (folder / "label_num_to_disease_map.json").write_text(json.dumps({str(j): d for j, d in enumerate(CASSAVA)}))
