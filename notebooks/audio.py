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
# # Sound classification with kit
#
# This notebook trains a [timm](https://github.com/huggingface/pytorch-image-models) CNN on log-mel spectrograms
# of a Kaggle sound competition's clips and writes `submission.csv`. It was built by kit (a Kaggle notebook kit) from a short
# competition config, and it runs with the internet off: the training code is embedded below.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: read the labels and the sample submission, check they agree, decode every clip once (mono,
#    resampled to one rate) into an int16 cache, so no epoch decodes a sound file again.
# 4. **Training**: cross-validated folds, mixed precision, augmentation on the GPU, a batch size tuned to the
#    GPU, folds and epochs planned to fit the time budget, a checkpoint every epoch. One line per epoch:
#    losses, the metric, samples/s, GPU utilisation and memory, and what to change when the GPU idles.
# 5. **Submission**: every fold checkpoint predicts each test clip window by window (`tta_hop` apart), the
#    windows' and the folds' predictions are averaged, checked against the sample submission and written, whatever
#    happened in training.
#
# **Predict mode** (`mode = "predict"`, what a code competition's inference kernel runs): nothing trains.
# The folds a training run left (its output attached as an input, or `model_dir`) predict, reading only the
# test clips and the sample submission; the model's settings come from its checkpoints.
# With `blend` (a config's `[blend]` runs), every run named predicts with its own folds and the submission is
# their blend, weighted on the out-of-fold predictions each training run keeps (`oof.csv`).

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 10  # at most this many epochs per fold
folds: int = 5  # cross-validation folds of whole clips; 1 is a single holdout split
lr: float = 0.001  # peak AdamW learning rate (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch that fits and runs fastest
precision: str = "auto"  # auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.05  # AdamW weight decay (not on biases and norms)
warmup_epochs: float = 1.0  # linear warm-up, then cosine decay
patience: int = 3  # epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = True  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
num_workers: int = -1  # loader processes; -1 picks from the CPU count
compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer): minutes of compiling for 10-30%
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
model_name: str = "efficientnet_b0"  # any timm model name: a 2-D CNN reading one log-mel channel
pretrained: bool = True  # start from ImageNet weights (timm adapts the first layer to one channel)
weights_path: str = ""  # local weights file (an attached dataset or model) for internet-off runs
sample_rate = "auto"  # Hz each clip is resampled to at decode; auto: the first training clip's (.csv: set it)
window_s = "auto"  # seconds of a training crop and a prediction window; auto: the median clip, at most 10 s
n_fft = "auto"  # STFT size in samples; auto: the power of two nearest 32 ms
hop = "auto"  # STFT hop in samples; auto: n_fft / 4
n_mels: int = 64  # mel bands: the spectrogram image's height
fmin: float = 0.0  # lowest frequency the mel bands cover, Hz
fmax = "auto"  # highest frequency the mel bands cover, Hz; auto: half the sample rate
top_db: float = 80.0  # decibels below each clip's peak its spectrogram is clipped at
level: bool = False  # keep each spectrogram's loudness (fixed-scale decibels), not normalise it away
gain_db: float = 6.0  # training clips' random gain, within this many decibels either way
shift: float = 0.0  # training clips rolled in time by up to this share of a window
freq_masks: int = 2  # SpecAugment: masked bands of mel bins per training clip
freq_width: float = 0.1  # SpecAugment: a frequency mask's widest share of the bins
time_masks: int = 2  # SpecAugment: masked spans of frames per training clip
time_width: float = 0.05  # SpecAugment: a time mask's widest share of the frames
mixup: float = 0.0  # mixup alpha of the spectrograms, 0 is off (one class a clip only)
max_seconds: float = 0.0  # seconds of each clip's start the cache keeps (0: whole clips): a large set's fit
noisy_weight: float = 0.0  # loss weight of [data] extra_train's rows (a noisy set); 0 leaves them out
tta_hop: float = 0.5  # prediction windows start this share of a window apart; their predictions are averaged
sync_bn = "auto"  # ddp: BatchNorm statistics over every GPU's rows (SyncBatchNorm); auto: only below 16 rows per GPU
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "the-icml-2013-whale-challenge-right-whale-redux",
    "template": "audio",
    "metric": "auc",
    "layout": "names",
    "train": "train.csv",
    "sample_submission": "sampleSubmission.csv",
    "id_column": "clip",
    "target_column": "probability",
    "train_images": "train2",
    "test_images": "test2",
    "image_ext": "",
    "label_pattern": "_([01])\\.aif$",
}

# %% [markdown]
# ## The kit runtime
#
# The code behind each step lives in the `kit` package. A kernel built with `make kernel` carries it in the
# next cell as an embedded zip that is put on `sys.path`, so nothing is installed and no internet is needed.

# %% tags=["kit-runtime"]
import kit  # a built kernel replaces this cell with the embedded kit runtime

print(f"kit {kit.__version__} from {kit.__file__}")

# %% [markdown]
# ## 1. Set-up
#
# Checks every parameter above (a typo is an error that names it) and prints those that differ from the
# template's defaults, looks at the GPU and CPU, settles the precision policy and finds the competition data
# under `/kaggle/input` (or `data_dir`).

# %%
from kit.run import start

session = start("audio", globals())

# %% [markdown]
# ## 2. Data
#
# Reads the training labels (a table of ids, class folders, or labels in the file names: `layout` in the
# `competition` parameter) and the sample submission, and checks that they agree. The clips' headers settle the
# spectrogram (`sample_rate`, `window_s`, `n_fft`, `hop`: "auto" lets the data decide). Then every clip is
# decoded once (.wav by scipy, .aif by kit's own reader; channels averaged, resampled once) into one int16 file
# on local disk. Clips that cannot be decoded are named; a few are left out, many stop training. A few log-mel
# spectrograms of each class are shown (samples.png).
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
# Batches are windows cut from the cache on the host (a random crop of each clip in training); on the GPU
# they become log-mel spectrograms (torch.stft in float32, a mel filterbank) augmented there (gain, time shift,
# SpecAugment masks, mixup). First a preflight: each optional accelerant (channels_last, the precision's step with its scaler, the
# side-stream prefetch, torch.compile when asked, the GPU monitor) is tried once on a small batch, and what
# fails is turned off with one line. With `batch_size = "auto"` a few trial steps find the largest batch
# that fits and the fastest one (the
# learning rate follows it by the square-root rule). After the first steps the time budget is planned: if
# folds x epochs do not fit before the deadline, less the time measured for prediction, epochs and then folds
# are cut, and the plan says so. Each fold keeps the weights of its best validation epoch and checkpoints
# every epoch: a run with the same settings into the same `output_dir` reuses its finished folds and resumes an
# interrupted one (changed settings train afresh in a folder of their own, `checkpoints/<run>/`).
# With two GPUs (Kaggle's T4 x2), `parallel` trains folds side by side, or one model with DDP; the workers
# run in fresh processes and their lines appear here prefixed `[worker N]`.
# Out-of-memory errors halve the micro-batch (gradients accumulate to keep the batch); non-finite losses
# are skipped, and if they persist the fold falls back to fp32 from its last checkpoint; a failed
# torch.compile falls back to eager mode. Interrupting this cell stops every worker.

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint that exists predicts the test clips, window by window (a clip longer than `window_s`
# is read every `tta_hop` of a window, the last window flush with its end); the predictions are averaged, checked against
# `sample_submission.csv` (ids, order, columns, values) and only then written to `submission.csv`. Under
# an F-score metric of label sets, the labels above the threshold that scores best out of fold are written.
# With no fold checkpoint at all (nothing trained, or every fold failed before its first), a banner says so and
# each row is the training labels' own answer: the class prior (its likeliest class for a label), the mean or
# the median, as the metric scores best (`fallback = "none"`: no submission).

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
