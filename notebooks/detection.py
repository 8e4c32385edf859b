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
# # Object detection with kit
#
# This notebook trains torchvision's Faster R-CNN on a timm backbone with a feature pyramid on a Kaggle detection
# competition (boxes and their classes on images, DICOM x-rays among them) and writes `submission.csv`. It was
# built by kit (a Kaggle notebook kit) from a short competition config, and it runs with the internet off: the
# training code is embedded below, and pydicom, which Kaggle's image lacks, is installed from an attached dataset of
# its wheel before anything else.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: read the training boxes (images without a box kept as negatives; several readers' boxes on one
#    image fused into one by weighted box fusion), decode every image once (DICOM windowed to 8 bits, MONOCHROME1
#    inverted) into a uint8 cache at `image_size`, its boxes scaled with it.
# 4. **Training**: cross-validated folds, mixed precision, a random scale, crop and flip on the GPU that move the
#    boxes with the pixels (a box cut mostly out of the crop is dropped), a batch size tuned to the GPU, folds and
#    epochs planned to fit the time budget, a checkpoint every epoch. Each epoch validates as the test set is
#    predicted and scores the competition's metric on the original pixels.
# 5. **Submission**: every fold checkpoint predicts the test images (and their mirror images); the views' boxes,
#    then the folds', are fused, written in the sample submission's string format and checked, whatever happened
#    in training.
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
lr: float = 0.0002  # peak AdamW learning rate (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch that fits and runs fastest
precision: str = "auto"  # auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.0001  # AdamW weight decay (not on biases and norms)
warmup_epochs: float = 1.0  # linear warm-up, then cosine decay
patience: int = 5  # epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = False  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
num_workers: int = -1  # loader processes; -1 picks from the CPU count
compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer): minutes of compiling for 10-30%
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
model_name: str = "resnet34"  # the backbone: any timm model with features_only (under an FPN and Faster R-CNN)
pretrained: bool = True  # start the backbone from ImageNet weights
weights_path: str = ""  # local backbone weights file (an attached dataset or model) for internet-off runs
image_size: int = 512  # side in pixels, a multiple of 32: every image is cached at it, boxes scaled
crop_scale: float = 0.6  # smallest share of the side a training crop keeps (zoomed back; boxes cut to it)
hflip: float = 0.5  # mirrored training images' share
tta: bool = True  # predict each image mirrored too, the two views' boxes fused
score_threshold: float = 0.0  # boxes below this confidence are left out of the submission (mAP: keep 0)
fusion_iou: float = 0.55  # IoU above which boxes of views, folds or readers fuse into one (weighted box fusion)
max_detections: int = 100  # boxes an image keeps at most, by confidence
sync_bn = "auto"  # ddp: BatchNorm statistics over every GPU's rows (SyncBatchNorm); auto: only below 16 rows per GPU
competition: dict = {  # the config's [competition] and [data]
    "template": "detection",
}

# %% [markdown]
# ## The kit runtime

# %% tags=["kit-runtime"]
import kit  # a built kernel replaces this cell with the embedded kit runtime

print(f"kit {kit.__version__} from {kit.__file__}")

# %% [markdown]
# ## 1. Set-up

# %%
from kit.run import start

session = start("detection", globals())

# %% [markdown]
# ## 2. Data

# %%
from kit.run import create_pipeline, load_data

pipe = create_pipeline(session)
data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)

# %% [markdown]
# ## 3. Training

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission

# %%
from kit.run import write_submission

submission = write_submission(session, pipe, data)
submission.head()

# %% [markdown]
# ## 5. Curves

# %%
from kit.run import plot_history

_ = plot_history(session, cv)

