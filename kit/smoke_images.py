"""Tiny image datasets in each cnn competition's Kaggle layout, for `make smoke`: files, folders and names
as Kaggle mounts them, and labels that show in the pixels, so a tiny CNN on the CPU has something to learn."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from kit.spec import Spec

# A few of dog-breed-identification's 120 classes, spelled as its sample submission spells them.
DOG_BREEDS = (
    "affenpinscher", "black-and-tan_coonhound", "border_collie", "curly-coated_retriever",
    "german_short-haired_pointer", "scottish_deerhound", "soft-coated_wheaten_terrier", "wire-haired_fox_terrier",
)  # fmt: skip


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
    train_dir.mkdir(parents=True)
    test_dir.mkdir(parents=True)
    train_ids, train_k = [], []
    for k in range(len(names)):
        for _ in range(per_class):
            train_ids.append(rng.bytes(16).hex())
            train_k.append(k)
    order = rng.permutation(len(train_ids))
    train_ids, train_k = [train_ids[i] for i in order], [train_k[i] for i in order]
    for i, k in zip(train_ids, train_k):
        _image(rng, k, len(names)).save(train_dir / f"{i}{spec.image_ext}", quality=90)
    test_ids = [rng.bytes(16).hex() for _ in range(test)]
    for i in test_ids:
        _image(rng, int(rng.integers(len(names))), len(names)).save(test_dir / f"{i}{spec.image_ext}", quality=90)
    regression = spec.metric in ("mae", "rmse")
    labels = [float(k) * 1.5 + rng.normal(0, 0.1) for k in train_k] if regression else [names[k] for k in train_k]
    pd.DataFrame({spec.id_column: train_ids, spec.target_column: labels}).to_csv(folder / spec.train, index=False)
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
    [[200, 60, 50], [60, 170, 70], [50, 90, 200], [210, 180, 40], [160, 60, 180], [40, 170, 180], [230, 120, 30], [120, 120, 120]],
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
