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
# # Sequences with a bidirectional LSTM, by kit
#
# This notebook trains a bidirectional LSTM on a Kaggle competition whose data is a long table (one row per
# time step, a sequence id, an order column, features) and writes `submission.csv`. It was built by kit (a
# Kaggle notebook kit) from a short competition config, and it runs with the internet off: the training
# code is embedded below.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: group the rows into sequences, order them, pad them to one length with a mask, check the
#    test table against the sample submission. When the tensors fit, they stay on the GPU and every batch
#    is gathered there: no data loader, no copies.
# 4. **Training**: cross-validated folds of whole sequences. Features are standardised with statistics of
#    the training folds only. Loss and metric count the rows the score mask keeps (e.g. `u_out == 0`).
#    A batch size tuned to the GPU, a time budget, a checkpoint every epoch.
# 5. **Submission**: every fold checkpoint predicts the test sequences; the average is checked against the
#    sample submission and written.
#
# **Predict mode** (`mode = "predict"`, what a code competition's inference kernel runs): nothing trains.
# The folds a training run left (its output attached as an input, or `model_dir`) predict, reading only the
# test table and the sample submission; the model's settings come from its checkpoints.
# With `blend` (a config's `[blend]` runs), every run named predicts with its own folds and the submission is
# their blend, weighted on the out-of-fold predictions each training run keeps (`oof.csv`).

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 40  # at most this many epochs per fold
folds: int = 5  # cross-validation folds of whole sequences; 1 is a single holdout split
lr: float = 0.001  # peak AdamW learning rate (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch that fits and runs fastest
precision: str = "auto"  # auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.01  # AdamW weight decay (not on biases and norms)
warmup_epochs: float = 1.0  # linear warm-up, then cosine decay
patience: int = 6  # epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = True  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
num_workers: int = -1  # unused by sequences (batches are gathered in place); kept for the contract
compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer)
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
d_model: int = 128  # width of the input projection (features and embeddings)
hidden_size: int = 256  # LSTM units per direction
num_layers: int = 3  # stacked bidirectional LSTM layers
dropout: float = 0.1
nhead: int = 8  # attention heads: the Transformer template's; the LSTM has none
conv_kernel: int = 3  # a 1-D convolution over time before the LSTM; 0 is off
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "ventilator-pressure-prediction",
    "template": "lstm",
    "metric": "mae",
    "train": "train.csv",
    "test": "test.csv",
    "sample_submission": "sample_submission.csv",
    "id_column": "id",
    "target_column": "pressure",
    "sequence_column": "breath_id",
    "order_column": "time_step",
    "features": ["R", "C", "time_step", "u_in", "u_out"],
    "categorical": ["R", "C"],
    "task": "per_step",
    "score_mask": "u_out == 0",
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

session = start("lstm", globals())

# %% [markdown]
# ## 2. Data
#
# Reads the training and test tables and the sample submission; checks columns, numeric features without
# gaps, and that the test ids and the sample submission's ids are the same. Rows become padded sequences
# with a mask; categorical features become codes for an embedding.
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
# The model: features and embeddings projected to `d_model`, a 1-D convolution over time, a stack of
# bidirectional LSTM layers, and a residual head (one output per step, or pooled per sequence). Each fold
# keeps the weights of its best validation epoch (with its feature statistics) and checkpoints every epoch:
# a run with the same settings into the same `output_dir` reuses its finished folds and resumes an
# interrupted one (changed settings train afresh in a folder of their own, `checkpoints/<run>/`). With two GPUs
# (Kaggle's T4 x2), `parallel` trains folds side by side, or one model with DDP; the workers run in fresh
# processes and their lines appear here prefixed `[worker N]`; interrupting this cell stops them all.
# Before the first fold each optional accelerant is tried once, and what fails is turned off with one line.
# The last lines compare the out-of-fold score with predicting the training mean (or the class prior).

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint that exists predicts the test sequences; the predictions are averaged, put in the
# sample submission's row order, checked, and only then written to `submission.csv`.
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
