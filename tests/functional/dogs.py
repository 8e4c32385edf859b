"""A dog-breed-layout dataset unlike the smoke one: other ids, other breeds, a 120-column sample submission,
and the awkward files real photo folders hold (grayscale, CMYK, palette, PNG bytes behind .jpg, EXIF
rotation, tiny and huge images)."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

BREEDS = [
    "german_short-haired_pointer", "walker_hound", "black-and-tan_coonhound", "wire-haired_fox_terrier",
    "soft-coated_wheaten_terrier", "flat-coated_retriever", "chesapeake_bay_retriever", "saint_bernard",
]  # fmt: skip
UNSEEN = [f"breed_{i:03d}" for i in range(120 - len(BREEDS))]  # sample columns with no training image


def photo(rng: np.random.Generator, k: int, w: int, h: int) -> Image.Image:
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.array([(37 * k) % 255, (91 * k + 40) % 255, (53 * k + 90) % 255], np.float32)
    blob = np.exp(-(((xx - w / 2) / (w / 3)) ** 2 + ((yy - h / 2) / (h / 3)) ** 2))
    pixels = base * (0.4 + 0.6 * blob[..., None]) + rng.normal(0, 20, (h, w, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def save_awkward(image: Image.Image, path: Path, kind: int) -> None:
    if kind == 0:
        image.convert("L").save(path, "JPEG")
    elif kind == 1:
        image.convert("CMYK").save(path, "JPEG")
    elif kind == 2:
        image.save(path, "PNG")  # PNG bytes behind a .jpg name
    elif kind == 3:
        exif = Image.Exif()
        exif[0x0112] = 6  # rotated 90 degrees
        image.save(path, "JPEG", exif=exif.tobytes())
    elif kind == 4:
        image.convert("P").save(path, "PNG")
    else:
        image.save(path, "JPEG", quality=85)


def make(folder: Path, seed: int = 1, per_breed: int = 9, test: int = 20) -> Path:
    rng = np.random.default_rng(seed)
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()
    ids, breeds = [], []
    for breed in BREEDS:
        for _ in range(per_breed):
            ids.append(rng.bytes(16).hex())
            breeds.append(breed)
    sizes = [(500, 375), (40, 30), (1200, 900), (333, 500), (256, 256)]
    for n, (i, breed) in enumerate(zip(ids, breeds)):
        w, h = sizes[n % len(sizes)]
        save_awkward(photo(rng, BREEDS.index(breed), w, h), folder / "train" / f"{i}.jpg", n % 7)
    test_ids = [rng.bytes(16).hex() for _ in range(test)]
    for n, i in enumerate(test_ids):
        save_awkward(photo(rng, n % len(BREEDS), 420, 310), folder / "test" / f"{i}.jpg", n % 7)
    order = rng.permutation(len(ids))
    pd.DataFrame({"id": np.array(ids)[order], "breed": np.array(breeds)[order]}).to_csv(folder / "labels.csv", index=False)
    columns = sorted(BREEDS + UNSEEN)
    sample = pd.DataFrame({"id": test_ids, **{c: 1 / len(columns) for c in columns}})
    sample.to_csv(folder / "sample_submission.csv", index=False)
    return folder


def corrupt(path: Path, how: str = "truncate") -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3] if how == "truncate" else b"this is not an image")


def to_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "JPEG")
    return buf.getvalue()
