"""Tiny image datasets in each cnn competition's Kaggle layout, for `make smoke`: files, folders and names
as Kaggle mounts them, and labels that show in the pixels, so a tiny CNN on the CPU has something to learn."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from kit.smoke import inputs
from kit.spec import Spec

# A few of dog-breed-identification's 120 classes, spelled as its sample submission spells them.
DOG_BREEDS = (
    "affenpinscher", "black-and-tan_coonhound", "border_collie", "curly-coated_retriever",
    "german_short-haired_pointer", "scottish_deerhound", "soft-coated_wheaten_terrier", "wire-haired_fox_terrier",
)  # fmt: skip


MULTI_LABEL = ("f1_samples", "f2_samples")  # rows holding several labels: Planet's tags
GROUPS = 8  # groups a training table holds where the config names a group_column: more than the smoke's folds


def make_dataset(spec: Spec, folder: Path, seed: int = 0) -> None:
    """The image layout the config names: pixel tables, class folders, tagged chips, or a label table; labels
    in file names, COCO files, .npy arrays and JSON arrays (kit.smoke.inputs)."""
    npy = (spec.image_path or spec.image_ext).endswith(".npy")
    makers = {"names": inputs.make_named, "coco": inputs.make_coco, "arrays": inputs.make_arrays}
    if spec.layout in makers or npy:
        (inputs.make_npy if npy else makers[spec.layout])(spec, folder, seed)
    elif spec.layout == "pixels":
        make_pixels(spec, folder, seed)
    elif spec.layout == "folders":
        make_class_folders(spec, folder, seed)
    elif spec.metric in MULTI_LABEL:
        make_tags(spec, folder, seed)
    else:
        make_images(spec, folder, seed)


def class_names(spec: Spec, n: int) -> list[str]:
    if spec.slug == "dog-breed-identification":
        return sorted(DOG_BREEDS[:n])
    return [f"class_{k}" for k in range(n)]


def make_images(spec: Spec, folder: Path, seed: int = 0, classes: int = 6, per_class: int = 10, test: int = 16) -> None:
    """Photos-like JPEGs of varied sizes (a few grayscale) whose class shows in colour and stripe angle;
    the label table and sample submission shaped as the metric implies (see kit.train.targets)."""
    rng = np.random.default_rng(seed)
    names = class_names(spec, 2 if spec.metric == "auc" else classes)
    train_dir, test_dir = folder / spec.train_images, folder / spec.test_images
    train_dir.mkdir(parents=True, exist_ok=True)  # one folder for both where the config says so (leaf's images/)
    test_dir.mkdir(parents=True, exist_ok=True)
    named = "" if spec.image_ext else ".jpg"  # image_ext = "": the ids end in their extension (cassava's 1000015157.jpg)
    train_ids, train_k = [], []
    for k in range(len(names)):
        for _ in range(per_class):
            train_ids.append(rng.bytes(16).hex() + named)
            train_k.append(k)
    order = rng.permutation(len(train_ids))
    train_ids, train_k = [train_ids[i] for i in order], [train_k[i] for i in order]
    for i, k in zip(train_ids, train_k):
        _image(rng, k, len(names)).save(train_dir / f"{i}{spec.image_ext}", quality=90)
    test_ids = [rng.bytes(16).hex() + named for _ in range(test)]
    for i in test_ids:
        _image(rng, int(rng.integers(len(names))), len(names)).save(test_dir / f"{i}{spec.image_ext}", quality=90)
    regression = spec.metric in ("mae", "rmse")
    labels = [float(k) * 1.5 + rng.normal(0, 0.1) for k in train_k] if regression else [names[k] for k in train_k]
    table = pd.DataFrame({spec.id_column: train_ids, spec.target_column: labels})
    if spec.group_column:  # rows in groups, as the config's folds read them (a patient's images)
        table[spec.group_column] = [f"group{j % GROUPS}" for j in range(len(table))]
    table.to_csv(folder / spec.train, index=False)
    sample = pd.DataFrame({spec.id_column: test_ids})
    if spec.metric == "log_loss":
        for name in names:
            sample[name] = 1.0 / len(names)
    elif regression or spec.metric == "auc":
        sample[spec.target_column] = 0.5
    else:
        sample[spec.target_column] = names[0]
    sample.to_csv(folder / spec.sample_submission, index=False)


COLORS = np.array(
    [[200, 60, 50], [60, 170, 70], [50, 90, 200], [210, 180, 40], [160, 60, 180], [40, 170, 180], [230, 120, 30],
     [120, 120, 120]],
    dtype=np.float32,
)


def _image(rng: np.random.Generator, k: int, n: int) -> Image.Image:
    w, h = int(rng.integers(96, 420)), int(rng.integers(96, 420))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32) / max(w, h)
    angle = np.pi * k / n
    stripes = np.sin(2 * np.pi * 5 * (xx * np.cos(angle) + yy * np.sin(angle)) + rng.uniform(0, 2 * np.pi))
    pixels = COLORS[k % len(COLORS)] * (0.65 + 0.35 * stripes[..., None]) + rng.normal(0, 18, (h, w, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    return image.convert("L") if rng.random() < 0.1 else image


def make_pixels(spec: Spec, folder: Path, seed: int = 0, per_digit: int = 40, test: int = 50) -> None:
    """digit-recognizer's layout: train.csv label,pixel0..pixel783 and test.csv pixel0..pixel783 (28x28
    grayscale, row-major, 0-255), sample_submission.csv ImageId,Label with ImageId 1..n. The digits are a
    font's glyphs, white on black, shifted, scaled, tilted and noisy: they look different mirrored, as
    handwritten ones do."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    font = _font(64)
    labels = rng.permutation(np.repeat(np.arange(10), per_digit))
    columns = [f"pixel{k}" for k in range(28 * 28)]
    train = pd.DataFrame(np.stack([_digit(rng, int(d), font) for d in labels]), columns=columns)
    train.insert(0, spec.target_column, labels)
    train.to_csv(folder / spec.train, index=False)
    hidden = rng.integers(0, 10, test)
    pd.DataFrame(np.stack([_digit(rng, int(d), font) for d in hidden]), columns=columns).to_csv(folder / spec.test, index=False)
    # Kaggle capitalises the sample's label column (Label), unlike train.csv's (label)
    pd.DataFrame({spec.id_column: np.arange(1, test + 1), "Label": 0}).to_csv(folder / spec.sample_submission, index=False)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)  # Pillow >= 10.1 with FreeType: a scalable TrueType font
    except TypeError:
        return ImageFont.load_default()  # older Pillow: a small bitmap font, which _digit scales up


def _digit(rng: np.random.Generator, d: int, font) -> np.ndarray:
    """One 28x28 digit as 784 uint8 values, row-major."""
    canvas = Image.new("L", (160, 160))
    ImageDraw.Draw(canvas).text((40, 20), str(d), fill=255, font=font)
    glyph = canvas.crop(canvas.getbbox())
    glyph = glyph.resize((max(1, round(glyph.width * 48 / glyph.height)), 48), Image.BILINEAR)  # one scale for either font
    if rng.random() < 0.5:  # a thicker pen
        glyph = glyph.filter(ImageFilter.MaxFilter(3))
    height = int(rng.integers(15, 22))  # MNIST's digits are about 20 px tall in a 28 px box
    width = max(2, round(glyph.width * height / 48 * rng.uniform(0.8, 1.2)))
    glyph = glyph.resize((width, height), Image.LANCZOS).rotate(rng.uniform(-15, 15), Image.BILINEAR, expand=True)
    image = Image.new("L", (28, 28))
    x, y = (28 - glyph.width) // 2 + int(rng.integers(-3, 4)), (28 - glyph.height) // 2 + int(rng.integers(-3, 4))
    image.paste(glyph, (x, y))
    pixels = np.asarray(image, np.float32) + rng.normal(0, 12, (28, 28))
    return np.clip(pixels, 0, 255).astype(np.uint8).reshape(-1)


# planet-understanding-the-amazon-from-space's 17 tags. Exactly one weather tag per chip, and a cloudy chip
# shows nothing else; the land tags' shares roughly follow the real train_v2.csv's (primary in nine of ten).
WEATHER = {"clear": 0.70, "partly_cloudy": 0.18, "haze": 0.07, "cloudy": 0.05}
LAND = {"primary": 0.92, "agriculture": 0.30, "road": 0.20, "water": 0.18, "cultivation": 0.11, "habitation": 0.09,
        "bare_ground": 0.03, "selective_logging": 0.01, "artisinal_mine": 0.01, "blooming": 0.01,
        "slash_burn": 0.01, "blow_down": 0.01, "conventional_mine": 0.01}  # fmt: skip
RARE_AT_LEAST = 6  # training chips per tag at least, so that each of the 17 is likely seen in both smoke folds
TAG_COLORS = {"agriculture": (190, 200, 90), "road": (205, 185, 150), "water": (40, 60, 120), "cultivation": (160, 120, 70),
              "habitation": (235, 235, 230), "bare_ground": (200, 150, 90), "selective_logging": (120, 80, 50),
              "artisinal_mine": (220, 120, 40), "blooming": (230, 90, 200), "slash_burn": (25, 20, 20),
              "blow_down": (230, 220, 160), "conventional_mine": (170, 170, 180)}  # fmt: skip


def make_tags(spec: Spec, folder: Path, seed: int = 0, train: int = 240, test: int = 20, files: int = 10) -> None:
    """planet-understanding-the-amazon-from-space's layout: train_v2.csv image_name,tags (space-separated),
    train-jpg/train_<k>.jpg, test-jpg-v2/ holding test_<k>.jpg and file_<k>.jpg (the additional test set),
    sample_submission_v2.csv listing test_ then file_ names. 256x256 JPEG chips: weather sets the veil and the
    contrast, each land tag draws its own colour and shape somewhere on the chip. 240 chips: with 120, the
    smoke's tiny CNN (2 folds x 8 epochs, about 30 steps) stayed near the prior's F2; with 240 it passes it
    clearly (F2 0.81-0.83 against 0.63 over three seeds of a plain 8-epoch loop)."""
    rng = np.random.default_rng(seed)
    train_dir, test_dir = folder / spec.train_images, folder / spec.test_images
    train_dir.mkdir(parents=True, exist_ok=True)  # one folder for both where the config says so
    test_dir.mkdir(parents=True, exist_ok=True)
    counts = {w: max(RARE_AT_LEAST, round(share * train)) for w, share in WEATHER.items() if w != "clear"}
    weather = ["clear"] * (train - sum(counts.values())) + [w for w, n in counts.items() for _ in range(n)]
    tags = [_tags(rng, str(w)) for w in rng.permutation(weather)]
    ground = [i for i, t in enumerate(tags) if "cloudy" not in t]
    for tag in LAND:  # a rare tag too few times: add it to some chips that can show land
        lacking = [i for i in ground if tag not in tags[i]]
        for i in rng.choice(lacking, max(0, RARE_AT_LEAST - sum(tag in tags[i] for i in ground)), replace=False):
            tags[i].append(tag)
    names = [f"train_{k}" for k in range(train)]
    for name, chip_tags in zip(names, tags):
        _chip(rng, chip_tags).save(train_dir / f"{name}{spec.image_ext}", quality=90)
    spelled = [" ".join(sorted(t)) for t in tags]  # train_v2.csv lists a chip's tags alphabetically
    pd.DataFrame({spec.id_column: names, spec.target_column: spelled}).to_csv(folder / spec.train, index=False)
    hidden = [f"test_{k}" for k in range(test)] + [f"file_{k}" for k in range(files)]
    for name in hidden:
        sky = str(rng.choice(list(WEATHER), p=list(WEATHER.values())))
        _chip(rng, _tags(rng, sky)).save(test_dir / f"{name}{spec.image_ext}", quality=90)
    sample = pd.DataFrame({spec.id_column: hidden, spec.target_column: "primary clear"})
    sample.to_csv(folder / spec.sample_submission, index=False)


def _tags(rng: np.random.Generator, weather: str) -> list[str]:
    if weather == "cloudy":
        return [weather]
    return [weather] + [tag for tag, share in LAND.items() if rng.random() < share]


def _chip(rng: np.random.Generator, tags: list[str], size: int = 256) -> Image.Image:
    """Forest (primary) or pale scrub, the land tags' marks at random places, then the weather over it all."""
    base = (35, 75, 35) if "primary" in tags else (150, 140, 110)
    texture = rng.normal(0, 1, (size // 8, size // 8, 1)).repeat(8, 0).repeat(8, 1)  # canopy blotches of 8 px
    pixels = np.asarray(base, np.float32) * (1 + 0.15 * texture) + rng.normal(0, 6, (size, size, 3))
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for tag in tags:
        if tag in TAG_COLORS:
            _mark(rng, draw, tag, TAG_COLORS[tag], size)
    pixels = np.asarray(image, np.float32)
    weather = next(t for t in tags if t in WEATHER)
    if weather == "haze":  # a pale veil and washed-out contrast
        pixels = 0.5 * pixels + 0.5 * np.array([190, 190, 200], np.float32)
    elif weather == "partly_cloudy":  # a few soft white clouds over part of the chip
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
        cover = np.zeros((size, size), np.float32)
        for _ in range(int(rng.integers(2, 5))):
            cy, cx, r = rng.uniform(0, size, 2).tolist() + [rng.uniform(20, 50)]
            cover = np.maximum(cover, np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r)))
        pixels = pixels * (1 - cover[..., None]) + 245 * cover[..., None]
    elif weather == "cloudy":  # grey-white cloud deck: the ground does not show
        pixels = 0.1 * pixels + 0.9 * (215 + 25 * rng.normal(0, 1, (size // 16, size // 16, 1)).repeat(16, 0).repeat(16, 1))
    return Image.fromarray(np.clip(pixels + rng.normal(0, 3, pixels.shape), 0, 255).astype(np.uint8))


def _mark(rng: np.random.Generator, draw: ImageDraw.ImageDraw, tag: str, color: tuple[int, int, int], size: int) -> None:
    """Each land tag's own shape, big enough to survive a 64 px smoke resize."""
    x, y = (int(v) for v in rng.integers(size // 8, size * 7 // 8, 2))
    if tag in ("road", "selective_logging", "blow_down"):  # lines: a road across, logging tracks, a fallen strip
        width = {"road": 8, "selective_logging": 4, "blow_down": 18}[tag]
        for _ in range(3 if tag == "selective_logging" else 1):
            angle = rng.uniform(0, np.pi)
            dx, dy = size * np.cos(angle), size * np.sin(angle)
            draw.line([(x - dx, y - dy), (x + dx, y + dy)], fill=color, width=width)
            x, y = (int(v) for v in rng.integers(size // 8, size * 7 // 8, 2))
    elif tag == "water":  # a winding river
        points = [(0, y)] + [(k * size / 6, y + rng.normal(0, 25)) for k in range(1, 7)]
        draw.line(points, fill=color, width=14, joint="curve")
    elif tag in ("agriculture", "conventional_mine"):  # large rectangles: fields, an open pit
        w, h = (int(v) for v in rng.integers(50, 100, 2))
        draw.rectangle([x - w // 2, y - h // 2, x + w // 2, y + h // 2], fill=color)
        if tag == "conventional_mine":
            draw.rectangle([x - w // 4, y - h // 4, x + w // 4, y + h // 4], fill=(110, 100, 95))
    elif tag in ("habitation", "blooming"):  # many small squares or dots: houses, flowering crowns
        for _ in range(14):
            cx, cy = x + rng.normal(0, 20), y + rng.normal(0, 20)
            r = 4 if tag == "habitation" else 5
            (draw.rectangle if tag == "habitation" else draw.ellipse)([cx - r, cy - r, cx + r, cy + r], fill=color)
    else:  # cultivation, bare_ground, artisinal_mine, slash_burn: irregular patches
        for _ in range(3):
            cx, cy, r = x + rng.normal(0, 15), y + rng.normal(0, 15), rng.uniform(10, 22)
            draw.ellipse([cx - r, cy - r * 0.7, cx + r, cy + r * 0.7], fill=color)


# plant-seedlings-classification's 12 species folders (spaces and all): leaves per plant, leaf length and
# width as shares of the image, and leaf colour; grasses are few long thin blades, broadleaves round. The
# colours are further apart than the real greens, so that 16 photos a species teach a tiny CNN something.
SEEDLINGS = {
    "Black-grass": (3, 0.45, 0.04, (70, 110, 50)), "Charlock": (4, 0.22, 0.16, (80, 170, 60)),
    "Cleavers": (6, 0.22, 0.07, (60, 140, 120)), "Common Chickweed": (8, 0.12, 0.07, (160, 215, 70)),
    "Common wheat": (2, 0.45, 0.06, (185, 190, 90)), "Fat Hen": (5, 0.2, 0.12, (140, 165, 155)),
    "Loose Silky-bent": (5, 0.4, 0.025, (120, 160, 40)), "Maize": (3, 0.42, 0.1, (35, 120, 30)),
    "Scentless Mayweed": (12, 0.25, 0.025, (90, 200, 130)), "Shepherds Purse": (7, 0.26, 0.06, (45, 85, 55)),
    "Small-flowered Cranesbill": (5, 0.2, 0.18, (125, 115, 40)), "Sugar beet": (2, 0.3, 0.15, (160, 90, 75)),
}  # fmt: skip


def make_class_folders(spec: Spec, folder: Path, seed: int = 0, per_class: int = 16, test: int = 24) -> None:
    """plant-seedlings-classification's layout: train/<Species>/<hash>.png, no label table; test/<hash>.png;
    sample_submission.csv file,species naming the test files with their ".png". Square PNGs of 100-400 px:
    a seedling on stony soil whose leaf count, shape and colour say its species. 16 per species: with 8, the
    smoke's tiny CNN guessed (0.08 accuracy in a plain 8-epoch loop); with 16 it reaches 0.31-0.48 over three
    seeds, against 0.05 for the most common species."""
    rng = np.random.default_rng(seed)
    names = _hashes(rng, len(SEEDLINGS) * per_class + test)
    for k, species in enumerate(SEEDLINGS):
        (folder / spec.train_images / species).mkdir(parents=True)
        for name in names[k * per_class:(k + 1) * per_class]:
            _seedling(rng, species).save(folder / spec.train_images / species / name)
    hidden = sorted(names[-test:])
    (folder / spec.test_images).mkdir(parents=True)
    for name in hidden:
        _seedling(rng, str(rng.choice(list(SEEDLINGS)))).save(folder / spec.test_images / name)
    pd.DataFrame({spec.id_column: hidden, spec.target_column: "Sugar beet"}).to_csv(folder / spec.sample_submission, index=False)


def _hashes(rng: np.random.Generator, n: int) -> list[str]:
    """n distinct file names as Kaggle's: 9 hex digits and ".png"."""
    names: dict[str, None] = {}
    while len(names) < n:
        names[f"{rng.bytes(5).hex()[:9]}.png"] = None
    return list(names)


def _seedling(rng: np.random.Generator, species: str) -> Image.Image:
    leaves, length, width, color = SEEDLINGS[species]
    size = int(rng.integers(100, 401))
    soil = np.array([110, 85, 60], np.float32) * rng.uniform(0.85, 1.15)
    grain = rng.normal(0, 14, (size // 3 + 1, size // 3 + 1, 1)).repeat(3, 0).repeat(3, 1)[:size, :size]
    pixels = soil + grain  # pebbles of 3 px, grey: noise that PNG still packs (per-pixel noise took 35 MB)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    cx, cy = size * rng.uniform(0.4, 0.6, 2)
    turn = rng.uniform(0, 2 * np.pi)
    shade = np.clip(np.asarray(color) * rng.uniform(0.85, 1.15), 0, 255).astype(int)
    t = np.linspace(0, 1, 12)
    for i in range(leaves):  # leaves spread evenly around the stem, each a pointed oval along its own angle
        angle = turn + 2 * np.pi * i / leaves + rng.normal(0, 0.2)
        reach, half = size * length * rng.uniform(0.8, 1.2), size * width / 2
        along = np.concatenate([t, t[::-1]]) * reach  # out along one edge, back along the other
        across = np.concatenate([np.sin(np.pi * t), -np.sin(np.pi * t[::-1])]) * half
        xs = cx + along * np.cos(angle) - across * np.sin(angle)
        ys = cy + along * np.sin(angle) + across * np.cos(angle)
        draw.polygon(list(zip(xs.tolist(), ys.tolist())), fill=tuple(int(c) for c in shade))
    return image
