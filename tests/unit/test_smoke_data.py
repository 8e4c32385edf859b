"""The smoke datasets of the image layouts: each competition's files, folders, columns and ids as Kaggle mounts
them, made by make_dataset from the shipped config. Names are spelled out here, not imported from the module,
so that a typo there fails."""
import hashlib

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageFont

from kit import config, smoke
from kit.data.augment import ASYMMETRIC, mirror_asymmetry
from kit.errors import KitError
from kit.smoke import images as smoke_images

PIXELS = [f"pixel{k}" for k in range(784)]
PLANET_TAGS = {"agriculture", "artisinal_mine", "bare_ground", "blooming", "blow_down", "clear", "cloudy",
               "conventional_mine", "cultivation", "habitation", "haze", "partly_cloudy", "primary", "road",
               "selective_logging", "slash_burn", "water"}  # fmt: skip
WEATHER = {"clear", "partly_cloudy", "haze", "cloudy"}
SPECIES = ["Black-grass", "Charlock", "Cleavers", "Common Chickweed", "Common wheat", "Fat Hen", "Loose Silky-bent",
           "Maize", "Scentless Mayweed", "Shepherds Purse", "Small-flowered Cranesbill", "Sugar beet"]  # fmt: skip
# each image config: its generator, what its inference kernel sees, and sizes small enough to make twice
CASES = {
    "digit-recognizer": ("make_pixels", ["test.csv", "sample_submission.csv"], {"per_digit": 2, "test": 3}),
    "planet-understanding-the-amazon-from-space": ("make_tags", ["sample_submission_v2.csv", "test-jpg-v2"],
                                                   {"train": 30, "test": 2, "files": 1}),
    "plant-seedlings-classification": ("make_class_folders", ["sample_submission.csv", "test"], {"per_class": 1, "test": 2}),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A shipped config's spec and its smoke data folder, made once per config through make_dataset."""
    cache = {}

    def make(name: str):
        if name not in cache:
            spec = config.load(name).spec
            folder = tmp_path_factory.mktemp(name) / spec.slug
            smoke.make_dataset(spec, folder, seed=0)
            cache[name] = spec, folder
        return cache[name]

    return make


def listing(folder) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_digit_recognizer_tables(made):
    _, folder = made("digit-recognizer")
    assert listing(folder) == {"train.csv", "test.csv", "sample_submission.csv"}
    train, test = pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")
    sample = pd.read_csv(folder / "sample_submission.csv")
    assert list(train.columns) == ["label", *PIXELS] and list(test.columns) == PIXELS  # test.csv has no id
    for table in (train, test):
        assert all(pd.api.types.is_integer_dtype(t) for t in table.dtypes)
        pixels = table[PIXELS].to_numpy()
        assert pixels.min() == 0 and pixels.max() == 255
    assert sorted(train["label"].unique()) == list(range(10)) and train["label"].value_counts().min() >= 30
    assert list(sample.columns) == ["ImageId", "Label"]
    assert list(sample["ImageId"]) == list(range(1, len(test) + 1)) and (sample["Label"] == 0).all()


def test_digits_look_different_mirrored(made):
    """What lets hflip = "auto" train the digits without flips."""
    _, folder = made("digit-recognizer")
    train = pd.read_csv(folder / "train.csv")
    images = train[PIXELS].to_numpy(np.uint8).reshape(-1, 28, 28)  # (n, 28, 28), row-major as on Kaggle

    def read(rows):  # as the pipeline reads images: uint8 (n, S, S, 3)
        return np.repeat(images[rows][..., None], 3, axis=-1)

    assert mirror_asymmetry(read, np.arange(len(images)), train["label"].to_numpy()) > ASYMMETRIC


def test_digits_without_a_truetype_font(monkeypatch):
    """Pillow before 10.1 has no load_default(size=...): the bitmap font, scaled up, still draws a digit."""
    bitmap = ImageFont.load_default_imagefont() if hasattr(ImageFont, "load_default_imagefont") else ImageFont.load_default()

    def old_load_default(**kwargs):
        if kwargs:
            raise TypeError("load_default() got an unexpected keyword argument 'size'")
        return bitmap

    monkeypatch.setattr(smoke_images.ImageFont, "load_default", old_load_default)
    font = smoke_images._font(64)
    assert font is bitmap
    digit = smoke_images._digit(np.random.default_rng(0), 7, font)
    assert digit.shape == (784,) and digit.dtype == np.uint8 and (digit > 128).sum() > 20


def test_planet_layout_and_tags(made):
    _, folder = made("planet-understanding-the-amazon-from-space")
    assert listing(folder) == {"train_v2.csv", "sample_submission_v2.csv", "train-jpg", "test-jpg-v2"}
    train = pd.read_csv(folder / "train_v2.csv")
    assert list(train.columns) == ["image_name", "tags"]
    assert list(train["image_name"]) == [f"train_{k}" for k in range(len(train))]
    assert listing(folder / "train-jpg") == {f"{name}.jpg" for name in train["image_name"]}
    tags = [set(t.split(" ")) for t in train["tags"]]
    assert all(len(t & WEATHER) == 1 for t in tags)
    assert all(t == {"cloudy"} for t in tags if "cloudy" in t)
    counts = pd.Series([tag for t in tags for tag in t]).value_counts()
    assert set(counts.index) == PLANET_TAGS and counts.min() >= 4
    assert counts["primary"] > len(train) * 0.8  # real-ish shares: primary nearly everywhere, the rare ones rare
    assert counts["clear"] > counts["partly_cloudy"] > counts["cloudy"]
    with Image.open(folder / "train-jpg" / "train_0.jpg") as image:
        assert (image.format, image.mode, image.size) == ("JPEG", "RGB", (256, 256))


def test_planet_sample_lists_test_then_file_images(made):
    _, folder = made("planet-understanding-the-amazon-from-space")
    sample = pd.read_csv(folder / "sample_submission_v2.csv")
    assert list(sample.columns) == ["image_name", "tags"] and sample["tags"].notna().all()
    names = list(sample["image_name"])
    tests, files = [n for n in names if n.startswith("test_")], [n for n in names if n.startswith("file_")]
    assert tests and files and names == tests + files
    assert tests == [f"test_{k}" for k in range(len(tests))] and files == [f"file_{k}" for k in range(len(files))]
    assert listing(folder / "test-jpg-v2") == {f"{n}.jpg" for n in names}


def test_plant_seedlings_folders(made):
    _, folder = made("plant-seedlings-classification")
    assert listing(folder) == {"train", "test", "sample_submission.csv"}  # no label table: the folder is the label
    assert sorted(listing(folder / "train")) == SPECIES
    sizes = set()
    for species in SPECIES:
        pngs = sorted((folder / "train" / species).iterdir())
        assert pngs and all(p.suffix == ".png" for p in pngs)
        with Image.open(pngs[0]) as image:
            assert image.format == "PNG" and image.width == image.height
            sizes.add(image.size)
    assert len(sizes) > 1
    sample = pd.read_csv(folder / "sample_submission.csv")
    assert list(sample.columns) == ["file", "species"]
    assert sample["file"].str.endswith(".png").all() and set(sample["file"]) == listing(folder / "test")
    assert set(sample["species"]) <= set(SPECIES)


@pytest.mark.parametrize("name, generator", [*((name, case[0]) for name, case in CASES.items()), ("dog-breed", "make_images")])
def test_make_dataset_picks_the_generator_from_the_config(monkeypatch, tmp_path, name, generator):
    called = []
    for other in {case[0] for case in CASES.values()} | {"make_images"}:
        monkeypatch.setattr(smoke_images, other, lambda spec, folder, seed, other=other: called.append(other))
    smoke.make_dataset(config.load(name).spec, tmp_path, seed=0)
    assert called == [generator]


@pytest.mark.parametrize("name", CASES)
def test_inference_kernel_sees_the_test_files(made, name):
    assert smoke.test_files(*made(name)) == CASES[name][1]


@pytest.mark.parametrize("name", CASES)
def test_same_seed_same_bytes(tmp_path, name):
    generator, _, sizes = CASES[name]
    spec = config.load(name).spec
    digests = []
    for run in ("a", "b"):
        getattr(smoke_images, generator)(spec, tmp_path / run, seed=4, **sizes)
        files = sorted(p for p in (tmp_path / run).rglob("*") if p.is_file())
        digests.append({p.relative_to(tmp_path / run): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    assert digests[0] == digests[1] and len(digests[0]) > 2


def test_the_submission_check_takes_an_empty_run_length_code_for_no_mask(tmp_path):
    spec = config.load("tgs-salt-identification-challenge").spec
    sample, sub = tmp_path / "sample.csv", tmp_path / "sub.csv"
    pd.DataFrame({"id": ["a", "b"], "rle_mask": ["1 1", "1 1"]}).to_csv(sample, index=False)
    pd.DataFrame({"id": ["a", "b"], "rle_mask": ["3 4", ""]}).to_csv(sub, index=False)  # b: no salt
    assert smoke.check_submission(sub, sample, spec) == 2
    pd.DataFrame({"id": ["a", "b"], "rle_mask": ["3 4", "x"], "extra": [1, None]}).to_csv(sub, index=False)
    pd.DataFrame({"id": ["a", "b"], "rle_mask": ["1 1", "1 1"], "extra": [1, 2]}).to_csv(sample, index=False)
    with pytest.raises(KitError, match="empty values"):  # any other column still may not be empty
        smoke.check_submission(sub, sample, spec)
