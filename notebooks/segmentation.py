# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Segmentation with kit
#
# This notebook trains a [segmentation_models_pytorch](https://github.com/qubvel-org/segmentation_models.pytorch)
# model (an architecture such as Unet on a timm encoder) on a Kaggle segmentation or image-to-image competition
# and writes `submission.csv`. It was built by kit (a Kaggle notebook kit) from a short competition config, and
# it runs with the internet off: the training code is embedded below, and segmentation_models_pytorch, which
# Kaggle's image lacks, is installed from an attached dataset of its wheel before anything else.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: read the masks (mask images, or run-length codes in a table) and the sample submission, check
#    they agree, decode every image and mask once into a uint8 cache, each at its own size on one canvas.
# 4. **Training**: cross-validated folds on random tiles, mixed precision, the image and its mask cropped,
#    flipped and turned alike on the GPU, a batch size tuned to the GPU, folds and epochs planned to fit the
#    time budget, a checkpoint every epoch. Each epoch validates whole images as the test set is predicted.
# 5. **Submission**: every fold checkpoint predicts the test images in overlapping tiles (and their flipped and
#    turned views, those training made, each undone on the mask); the predictions are averaged, cut where the
#    out-of-fold score is best (each class's threshold and smallest kept component), written as the sample
#    submission asks (run-length codes, or one row per pixel) and checked, whatever happened in training.
#
# **Predict mode** (`mode = "predict"`, what a code competition's inference kernel runs): nothing trains.
# The folds a training run left (its output attached as an input, or `model_dir`) predict, reading only the
# test images and the sample submission; the model's settings come from its checkpoints.

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 20  # at most this many epochs per fold
folds: int = 5  # cross-validation folds of whole images; 1 is a single holdout split
lr: float = 0.0005  # peak AdamW learning rate (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch of tiles that fits and runs fastest
precision: str = "auto"  # auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.01  # AdamW weight decay (not on biases and norms)
warmup_epochs: float = 1.0  # linear warm-up, then cosine decay
patience: int = 5  # epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = True  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
num_workers: int = -1  # loader processes; -1 picks from the CPU count
compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer): minutes of compiling for 10-30%
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
model_name: str = "Unet"  # smp architecture: Unet, UnetPlusPlus, FPN, DeepLabV3Plus, Segformer, ...
encoder: str = "tu-resnet34"  # encoder: tu-<any timm model>, or one of smp's own (resnet34, ...)
pretrained: bool = True  # start the encoder from ImageNet weights
weights_path: str = ""  # local encoder weights file (an attached dataset or model) for internet-off runs
image_size: int = 256  # tile side in pixels, a multiple of 32: smaller images mirrored out to it, larger tiled
tile_overlap: float = 0.25  # share of a prediction tile its neighbours overlap
tissue_min: float = 0.0  # tiles under this share of tissue (coloured pixels): not trained on, predicted empty
classes: int = 0  # mask classes; 0 reads them from the data (two mask values: binary; more: class indices)
crop_scale: float = 0.5  # smallest share of a training tile a crop keeps (zoomed back to the tile)
hflip: float = 0.5  # mirrored training tiles' share
vflip: float = 0.0  # upside-down training tiles' share
rotate90: bool = False  # turn training tiles 0, 90, 180 or 270 degrees at random (satellite, microscopy)
tta: bool = True  # average predictions over the flips and turns training made, each undone on the mask
dice_weight: float = 1.0  # the loss is cross-entropy + dice_weight x Dice (masks)
postprocess: bool = True  # each class's threshold and smallest kept component chosen out of fold (else 0.5)
sync_bn = "auto"  # ddp: BatchNorm statistics over every GPU's rows (SyncBatchNorm); auto: only below 16 rows per GPU
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "tgs-salt-identification-challenge",
    "template": "segmentation",
    "metric": "map_iou",
    "train": "train.csv",
    "sample_submission": "sample_submission.csv",
    "id_column": "id",
    "target_column": "rle_mask",
    "train_images": "train/images",
    "train_masks": "train/masks",
    "test_images": "test/images",
    "image_ext": ".png",
}

# %% [markdown]
# ## The kit runtime
#
# The code behind each step lives in the `kit` package. A kernel built with `make kernel` carries it in the
# next cell as an embedded zip that is put on `sys.path`, so nothing is installed and no internet is needed
# (the packages the config lists in `[kernel] packages` are installed there first, from their dataset).

# %% tags=["kit-runtime"]
import kit  # a built kernel replaces this cell with the embedded kit runtime

print(f"kit {kit.__version__} from {kit.__file__}")

# %% [markdown]
# ## 1. Set-up
#
# Checks every parameter above (a typo is an error that names it; so is an architecture or encoder that
# segmentation_models_pytorch and timm do not know) and prints those that differ from the template's
# defaults, looks at the GPU and CPU, settles the precision policy and finds the competition data under
# `/kaggle/input` (or `data_dir`).

# %%
from kit.run import start

session = start("segmentation", globals())

# %% [markdown]
# ## 2. Data
#
# Reads where the training masks are (a mask image per training image in `train_masks`, or run-length codes in
# the training table, one row per image or per image and class) and what the sample submission asks for (a
# run-length code per image, or per image and class, or a value per pixel), and checks that they agree. Then
# every image and mask is decoded once into a uint8 cache on local disk, nothing resized: each at the top left of
# a canvas as large as the largest image (and one tile at least), mirrored beyond its edges. What the masks hold
# decides the model's outputs: two values, one binary mask; more, class indices; one channel per class, or one
# run-length code per class, a mask per class; with metric rmse, a target page. A mask whose size differs from its
# image's, a run-length code past its image's end, a class index beyond `classes`: one line each. The grid shows
# training images with their masks.
#
# If the files cannot be read for training at all (an archive without its images, say), a loud banner says
# why, nothing trains, and the submission is the training labels' own answer (`fallback`).

# %%
from kit.run import create_pipeline, load_data

pipe = create_pipeline(session)
data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)

# %% [markdown]
# ## 3. Training
#
# First a preflight: each optional accelerant (channels_last, the precision's step with its scaler, the
# side-stream prefetch, torch.compile when asked, the GPU monitor) is tried once on a small batch, and what
# fails is turned off with one line. With `batch_size = "auto"` a few trial steps find the largest batch of
# tiles that fits and the fastest one. The loss is cross-entropy plus Dice (a page: the squared error); each
# training batch is random tiles of `image_size` pixels, cropped, flipped and turned on the GPU with the mask
# resampled alike (nearest, so a mask keeps its classes). Validation covers each image with overlapping tiles,
# averages each tile over its test-time views and blends them, as the test set is predicted, and scores it at
# every threshold and smallest component at once: the epoch's score is the best of them. A moving average of the
# weights is validated too and kept when better. Each fold keeps its best epoch and checkpoints every epoch: a
# run with the same settings into the same `output_dir` reuses its finished folds and resumes an interrupted one.
# Out-of-memory errors halve the micro-batch; non-finite losses fall back to fp32; the fold table ends with the
# out-of-fold score at the cut chosen on it, beside empty masks' (or the mean page's).

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint that exists predicts the test images; the predictions are averaged, each class's mask is
# cut at the threshold and smallest component that score best out of fold, and written as the sample submission
# asks: run-length codes (column-major, 1-indexed, empty for no mask), checked to decode, or one value per pixel.
# The grid `predictions.png` shows test images with their predicted masks.
# With no fold checkpoint at all (nothing trained, or every fold failed before its first), a banner says so and
# each row is what the training masks alone give: no mask, or the mean page (`fallback = "none"`: no submission).

# %%
from kit.run import write_submission

submission = write_submission(session, pipe, data)
submission.head()

# %% [markdown]
# ## 5. Curves
#
# Training and validation loss per fold and the validation metric with each fold's best epoch marked, saved as
# `history.png`; on a GPU also its utilisation over the run (the samples in `gpu_monitor.csv`).

# %%
from kit.run import plot_history

_ = plot_history(session, cv)
