"""The segmentation pipeline's data steps (kit.pipelines.segmentation): what the masks are, how the sample is
filled, what the out-of-fold rows say, and the figures of images with their masks."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from PIL import Image

from kit import files
from kit.data import bands, images, rle, scans, stitch, tiles
from kit.data import canvas as canvases
from kit.data import masks as layouts
from kit.data.canvas import Canvas
from kit.data.layers import Layers
from kit.data.tiffs import Slides
from kit.errors import KitError
from kit.pipelines import base
from kit.runtime import paths
from kit.runtime.session import Session
from kit.train import mask_kinds, mask_metrics, metrics
from kit.train.targets import Target

MAX_BAD_SHARE = 0.01  # stop when more than this share of a split's images cannot be decoded
MAX_CLASSES = 64  # more mask values than this, read from the data, are grey levels rather than class indices
COLOURS = np.array([[1.0, 0.2, 0.2], [0.2, 0.9, 0.2], [0.2, 0.4, 1.0], [1.0, 0.9, 0.1], [0.9, 0.2, 0.9], [0.1, 0.9, 0.9]])


def read_output(s: Session):
    """The sample submission, the one column the model fills, and what its rows name (kit.data.masks.output)."""
    sample, path = base.read_sample(s)
    columns = base.sample_targets(sample, s.spec, path)
    if len(columns) != 1:
        raise KitError(f"{path.name}: the segmentation template fills one column (run-length codes, or a pixel's value), "
                       f"and it has {len(columns)} ({', '.join(columns[:4])}); name it in [data] submission_columns")
    return sample, path, layouts.output(s.spec, s.data_dir, sample, path, columns[0], s.log)


def sizes_of(heads: list) -> np.ndarray:
    return np.array([h[:2] if isinstance(h, tuple) else (0, 0) for h in heads], np.int64).reshape(-1, 2)


def canvas_of(sizes: np.ndarray, tile: int) -> tuple[int, int]:
    return max(int(sizes[:, 0].max(initial=0)), tile), max(int(sizes[:, 1].max(initial=0)), tile)


def reader_of(s: Session) -> canvases.Reader | None:
    """What reads an image that is not an image file: a record's bands, a scan's slices (2.5-D), a fragment's
    layers, or a gigapixel TIFF read a region at a time (both at 1/reduce)."""
    spec = s.spec
    if spec.layers:
        return Layers(spec.layers, max(spec.reduce, 1))
    if spec.reduce:
        return Slides(spec.reduce)
    return bands.reader(spec.bands, spec.band_frame) or scans.reader(spec.slices)


def decode(s: Session, found: layouts.Training, output: layouts.Output, tile: int, pages: bool) -> tuple[Canvas, Canvas]:
    """The training images and masks, and the test images, each split decoded once onto its canvas."""
    workers, scratch = s.hardware.cpu_count, paths.scratch_dir() / "canvas"
    reader = reader_of(s)
    sizes = sizes_of(canvases.headers(found.paths, workers, reader))
    masks = found.masks
    if masks.paths:  # mask (or page) files: as many channels as the widest holds
        depths = [h[2] for h in canvases.headers(list(masks.paths), workers) if isinstance(h, tuple)]
        masks = replace(masks, channels=3 if depths and max(depths) >= 3 else 1)
    elif pages:
        raise KitError("metric rmse scores pages (image to image): name the folder of target images in [data] "
                       "train_masks rather than run-length codes")
    train = canvases.build(found.paths, masks, sizes, canvas_of(sizes, tile), scratch, workers, "decode train", s.log,
                           reader)
    images.check_bad(train, found.paths, "train", "are left out of training", MAX_BAD_SHARE, s.log)
    return train, decode_test(s, output, tile)


def decode_test(s: Session, output: layouts.Output, tile: int) -> Canvas:
    workers, reader = s.hardware.cpu_count, reader_of(s)
    sizes = sizes_of(canvases.headers(output.paths, workers, reader))
    test = canvases.build(output.paths, None, sizes, canvas_of(sizes, tile), paths.scratch_dir() / "canvas", workers,
                          "decode test", s.log, reader)
    images.check_bad(test, output.paths, "test", "are predicted empty (or the mean page)", MAX_BAD_SHARE, s.log)
    if output.layout == "pixels":
        h, w = test.sizes[output.image].T
        outside = (output.pixel[:, 0] >= h) | (output.pixel[:, 1] >= w)
        outside &= (h > 0)  # an image that did not decode is filled with the prior
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise KitError(f"the sample submission's row {i + 2} names pixel {output.pixel[i] + 1} of "
                           f"{output.ids[output.image[i]]}, which is {h[i]} x {w[i]} px")
    return test


def kind_of(metric: str, found: layouts.Training, train: Canvas, classes: int) -> tuple[str, int]:
    """(kind, model outputs): image (pages, metric rmse), binary, labels (0/1 channels) or classes (indices)."""
    m = found.masks
    if metric == "rmse":
        return "image", 1 if train.equal_channels else train.mask_channels
    # any other metric is refused with the spec (kit.metric_records.metric_misfit), for the config and the parameters cell alike
    if m.codes:
        kind, outputs = ("labels" if found.classes else "binary"), m.channels
    elif train.mask_channels == 3 and not train.equal_channels:
        kind, outputs = "labels", 3
    elif classes == 1 or (classes == 0 and len(train.values) <= 2):
        return "binary", 1
    else:
        kind, outputs = "classes", classes or max(train.values) + 1
        beyond = [v for v in train.values if v >= outputs]
        if beyond:
            raise KitError(f"{mask_holding(train, found, beyond[0])}: the mask holds class index {beyond[0]}, beyond "
                           f"classes = {outputs} (0 to {outputs - 1}, 0 the background); set classes, or fix the mask")
        if classes == 0 and outputs > MAX_CLASSES:
            raise KitError(f"the masks hold {len(train.values)} values from {min(train.values)} to {max(train.values)}: "
                           "grey levels, not class indices; set classes = 1 to read every nonzero pixel as the mask, or "
                           "classes to the number of classes")
    if classes and classes != outputs:
        raise KitError(f"classes = {classes}, and the masks hold {outputs} (one per channel); set classes = 0 or {outputs}")
    return kind, outputs


def mask_holding(train: Canvas, found: layouts.Training, value: int) -> str:
    """The first training mask that holds `value` (for a message)."""
    for start in range(0, train.count, 64):
        rows = np.arange(start, min(start + 64, train.count))
        hits = (train.read(rows)[1] == value).reshape(len(rows), -1).any(1)
        if hits.any():
            return found.masks.paths[rows[np.argmax(hits)]] if found.masks.paths else found.paths[rows[np.argmax(hits)]]
    return "a training mask"


def target_of(kind: str, outputs: int, found: layouts.Training, output: layouts.Output, sample_path: Path) -> Target:
    """What the sample's column holds: run-length codes (of which class, per row) or pixel values."""
    names = found.classes or (tuple(str(k) for k in range(1, outputs)) if kind == "classes" else
                              tuple(str(k) for k in range(1, outputs + 1)) if kind == "labels" else ())
    if output.layout == "pixels":
        if kind not in ("image", "binary"):
            raise KitError(f"{sample_path.name} has a row per pixel, which holds one value; the masks hold {outputs} classes")
        return Target(mask_kinds.PIXELS.name, (output.column,), names)
    if output.layout == "files":
        if kind == "labels":
            raise KitError(f"{sample_path.name} names a mask file per image, which holds one class a pixel, and the training "
                           f"masks' {outputs} classes overlap (a 0/1 mask each)")
        return Target(mask_kinds.FILES.name, (output.column,), names)
    if kind == "image":
        raise KitError(f"metric rmse writes pages, and {sample_path.name} has no row per pixel (<image>_<row>_<col>) "
                       "nor a file name per image")
    if output.layout == "image" and kind != "binary":
        raise KitError(f"{sample_path.name} has one row per image, so one mask per image, and the training masks hold "
                       f"{len(names)} classes; a row per image and class is <image>_<class>")
    if output.layout == "class":
        if kind == "binary":
            raise KitError(f"{sample_path.name} has a row per image and class (<image>_<class>), and the training masks "
                           "one class")
        unknown = [c for c in output.classes if c not in names]
        if unknown:
            raise KitError(f"{sample_path.name}: class '{unknown[0]}' of its ids is not one of the training masks' "
                           f"classes ({', '.join(names[:8])})")
    return Target(mask_kinds.RLE.name, (output.column,), names)


def chunks(canvas: Canvas, rows: np.ndarray, size: int = 64):
    for start in range(0, len(rows), size):
        part = rows[start : start + size]
        yield part, canvas.read(part)[1]


def survey(kind: str, train: Canvas, table: np.ndarray, usable: np.ndarray, outputs: int) -> tuple[np.ndarray, np.ndarray]:
    """(each training row's stratum for the folds, each output's share of the pixels). Strata: binary, 0 for an
    empty mask and 1 to 5 for fifths of cover; classes and labels, 1 + the class covering most of it (0: none);
    pages, 0. Shares: each class's (classes: the background's first), or a page's mean value."""
    out, area, pixels = np.zeros(train.count, np.int64), np.zeros(outputs), 0.0
    for part, raw in chunks(train, usable):
        mapped = raw.astype(np.float64) / 255.0 if kind == "image" else table[raw]  # (n, H, W, M)
        for i, row in enumerate(part):
            h, w = train.sizes[row]
            m = mapped[i, :h, :w]
            pixels += h * w
            if kind == "image":
                area += m[..., :outputs].sum((0, 1))
                continue
            areas = np.bincount(m[..., 0].ravel(), minlength=outputs)[:outputs] if kind == "classes" else m.sum((0, 1))[:outputs]
            area += areas
            if kind == "binary":
                cover = areas[0] / (h * w)
                out[row] = 0 if cover == 0 else 1 + min(int(cover * 5), 4)
            else:
                fg = areas[1:] if kind == "classes" else areas
                out[row] = 0 if fg.max(initial=0) == 0 else 1 + int(np.argmax(fg))
    return out, area / max(pixels, 1.0)


def head_bias(kind: str, shares: np.ndarray) -> list[float]:
    """The output layer's starting bias: the logits of what the training pixels hold (each class's share, a page's
    mean value), so that the first steps learn the images rather than the classes' frequencies (the prior
    initialisation of RetinaNet's focal-loss paper)."""
    p = np.clip(shares, 1e-3, 1 - 1e-3)
    return (np.log(p) if kind == "classes" else np.log(p / (1 - p))).tolist()


def prior(kind: str, shares: np.ndarray, outputs: int) -> list[float]:
    """What no model predicts: empty masks (0 for each class), or the training pages' mean value."""
    if kind == "image":
        return [float(shares[0])]
    return [0.0] * (outputs - 1 if kind == "classes" else outputs)


def epoch_repeats(canvas: Canvas, tile: int) -> int:
    """How many random tiles of each training image an epoch takes: as many as cover its canvas (one for images no
    larger than a tile), so that an epoch sees about every pixel once."""
    return max(1, round(canvas.height * canvas.width / (tile * tile)))


def tiles_per_canvas(canvas: Canvas, tile: int, overlap: float) -> int:
    return len(tiles.grid(canvas.height, canvas.width, tile, overlap))


def describe(data) -> str:
    test, o, r = data.test, data.output, data.recipe
    lines = []
    if data.train is None:
        lines.append("train          none here (predict mode)")
    else:
        t = data.train
        own = t.sizes[data.usable]
        kind = {"binary": "binary masks", "labels": f"{r['outputs']} classes, a 0/1 mask each",
                "classes": f"{r['outputs'] - 1} classes and the background", "image": "target pages"}[r["kind"]]
        empty = f", {(data.strata[data.usable] == 0).mean():.0%} empty" if r["kind"] != "image" else ""
        lines.append(f"train          {len(data.usable)} images of {own[:, 0].min()} x {own[:, 1].min()} to "
                     f"{own[:, 0].max()} x {own[:, 1].max()} px, {kind}{empty}")
    lines.append(f"test           {test.count} images on {test.height} x {test.width} canvases")
    how = {"image": "a run-length code per image", "class": f"a run-length code per image and class ({len(o.classes)})",
           "pixels": "a value per pixel", "files": "a mask file per image, named"}[o.layout]
    lines.append(f"submission     {how} in '{o.column}', {len(data.sample)} rows")
    return "\n".join(lines)


def judge(metric: str, data, rows: dict) -> base.Judged:
    """The out-of-fold score at the cut chosen on these rows; predicting empty masks' or the mean page's."""
    r = data.recipe
    if r["kind"] == "image":
        score = metrics.score("rmse", rows["pred"], rows["target"], rows["weight"])
        m, n = r["prior"][0], rows["weight"].astype(np.float64)
        squares = rows["truth_sq"].astype(np.float64) - 2 * m * rows["truth_sum"] + n * m * m
        return base.Judged(score, float(np.sqrt(max(squares.sum(), 0.0) / n.sum())), "the training pages' mean value")
    cuts, score = mask_metrics.decide(metric, rows["pred"], rows["target"], r["kind"] == "classes")
    target = rows["target"]
    empty = float(mask_metrics.pooled(metric, 0, 0, target[..., 0], target[..., 1]).mean())
    return base.Judged(score, empty, "empty masks", describe_cuts(cuts, data, target))


def describe_cuts(cuts: list[mask_metrics.Cut], data, target: np.ndarray) -> str:
    pixels = int(np.median(target[:, 0, 1])) if len(target) else 0
    names = data.target.classes or ("mask",)
    said = [c.describe(pixels) for c in cuts]
    if len(set(said)) == 1:
        return said[0]
    return "; ".join(f"class {name} {text}" for name, text in zip(names, said))


def choose_cuts(s: Session, data, oof: list[dict]) -> list[mask_metrics.Cut]:
    """Each class's cut: where the out-of-fold rows of the folds that predicted score best (0.5 without them)."""
    argmax = data.recipe["kind"] == "classes"
    classes = data.recipe["outputs"] - (1 if argmax else 0)
    if not oof:
        s.warn("no out-of-fold rows to choose the cut on: above 0.5, every component")
        return [mask_metrics.Cut(argmax=argmax)] * classes
    joined = metrics.join_rows(oof)
    cuts, value = mask_metrics.decide(s.spec.metric, joined["pred"], joined["target"], argmax)
    s.log(f"cut            {describe_cuts(cuts, data, joined['target'])}: the best out-of-fold {s.spec.metric}, {value:.4f}")
    return cuts


def fill(data, pred: np.ndarray, folder: Path, reader: canvases.Reader | None = None):
    """The sample column's values from the cut masks (test images, classes, H, W) or a page's values; from the
    prior's rows (2-D: no fold predicted), empty masks or the mean page. Where the sample names files, each image's
    mask is written under `folder` as it names it, and the names stay."""
    o, test = data.output, data.test
    if o.layout == "files":
        for name, i in zip(data.sample[o.column].astype(str), o.image.tolist()):
            picture = Image.fromarray(mask_picture(data.recipe, pred, i, *test.sizes[i]))
            written = layouts.file_name(name)
            with files.atomic_path(folder / written) as tmp:
                picture.save(tmp, format=layouts.FILE_FORMATS[Path(written).suffix.lower()])
        return data.sample[o.column].tolist()
    if o.layout == "pixels":
        if pred.ndim == 2:
            return np.full(len(o.image), data.recipe["prior"][0])
        r, c = o.pixel.T
        good = test.sizes[o.image, 0] > 0
        values = np.full(len(o.image), data.recipe["prior"][0], np.float64)
        values[good] = pred[o.image[good], 0, r[good], c[good]].astype(np.float64)
        return values
    if pred.ndim == 2:
        return [o.empty] * len(o.image)
    channel = (np.array([data.target.classes.index(name) for name in o.classes])[o.klass] if o.layout == "class"
               else np.zeros(len(o.image), np.int64))
    codes, reduce = [], getattr(reader, "reduce", 1)
    for i, k in zip(o.image.tolist(), channel.tolist()):
        h, w = test.sizes[i]
        area = reader.area(o.paths[i]) if h > 0 and hasattr(reader, "area") else None  # a fragment's, vesuvius'
        if area is not None:
            pred[i, k, :h, :w] &= area
        if reduce > 1 and h > 0:  # a gigapixel image's mask at 1/reduce: coded at its full size, a band at a time
            code = stitch.encode_reduced(pred[i, k, :h, :w], reduce, *reader.full_size(o.paths[i]), o.order)
        else:
            code = rle.encode(pred[i, k, :h, :w], o.order)
        codes.append(code or o.empty)
    return codes


def mask_picture(recipe: dict, pred: np.ndarray, i: int, h: int, w: int) -> np.ndarray:
    """Test image `i`'s mask as a file holds it: a binary mask 0 or 255, classes their index (0 the background), a
    page its grey levels 0 to 255; from the prior's rows (2-D), an empty mask or the mean page. An image that did
    not decode (0 x 0) is one pixel."""
    h, w = max(int(h), 1), max(int(w), 1)
    if pred.ndim == 2:
        value = round(float(recipe["prior"][0]) * 255) if recipe["kind"] == "image" else 0
        return np.full((h, w), value, np.uint8)
    if recipe["kind"] == "image":
        return np.rint(np.clip(pred[i, 0, :h, :w].astype(np.float32), 0, 1) * 255).astype(np.uint8)
    masks = pred[i, :, :h, :w].astype(bool)
    if recipe["kind"] == "binary":
        return masks[0].astype(np.uint8) * 255
    index = np.arange(1, len(masks) + 1, dtype=np.uint8)[:, None, None]
    return (masks * index).max(0).astype(np.uint8)


def shown_test(data, masks: np.ndarray, n: int = 6):
    """The first test images that could be read, as thumbnails (kit.data.canvas.thumbnail_cut), with their predicted
    masks at the same pixels."""
    rows = shown(data.test, np.arange(data.test.count), n)
    pictures, _ = data.test.thumbnails(rows)
    cuts = [canvases.thumbnail_cut(h, w) for h, w in data.test.sizes[rows].tolist()]
    return pictures, [masks[(r, slice(None), *cut)].astype(np.float32) for r, cut in zip(rows.tolist(), cuts)], "labels", \
        [data.output.ids[i] for i in rows]


def shown(canvas: Canvas, rows: np.ndarray, n: int) -> np.ndarray:
    """At most n of `rows`, spread over them, each an image that could be read (a bad one's size is 0 x 0)."""
    rows = rows[canvas.sizes[rows, 0] > 0]
    return rows[np.linspace(0, len(rows) - 1, min(n, len(rows))).astype(int)] if len(rows) else rows


def grid(path: Path, pictures: list[np.ndarray], shown: list[np.ndarray] | None, kind: str, titles: list[str]):
    """Images (h, w, channels), each at its own size (thumbnails), with their masks (outputs, h, w) drawn over them
    (class colours), or beside their target page; saved at `path` and returned. Images of other than three channels
    (a slab of layers) show their middle one, grey."""
    import matplotlib.pyplot as plt

    pictures = [np.repeat(p[..., p.shape[-1] // 2:p.shape[-1] // 2 + 1], 3, -1) if p.shape[-1] != 3 else p
                for p in pictures]
    pages = kind == "image" and shown is not None
    per = 2 if pages else 1
    cols = min(6, max(1, len(pictures))) * per
    lines = max(1, (len(pictures) * per + cols - 1) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(2.2 * cols, 2.3 * lines), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for i, picture in enumerate(pictures):
        ax = axes.flat[i * per]
        ax.imshow(picture)
        ax.set_title(titles[i][:24] if i < len(titles) else "", fontsize=7)
        if shown is None:
            continue
        if pages:
            axes.flat[i * per + 1].imshow(shown[i][0], cmap="gray", vmin=0, vmax=1)
            continue
        planes = shown[i]
        if kind == "classes":  # a class index per pixel: a plane per class present
            planes = np.stack([planes[0] == k for k in range(1, int(planes.max(initial=0)) + 1)] or [planes[0] * 0])
        overlay = np.zeros((*picture.shape[:2], 4), np.float32)
        for k, plane in enumerate(planes):
            overlay[plane > 0.5] = [*COLOURS[k % len(COLOURS)], 0.45]
        ax.imshow(overlay)
    fig.tight_layout()
    with files.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=80, format="png")
    return fig
