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
# # Tables with gradient-boosted trees or a tabular network, by kit
#
# This notebook trains XGBoost, LightGBM, CatBoost or a tabular network on a Kaggle competition whose data is a
# table of features (a row per id, a target column or several) and writes `submission.csv`. It was built by kit
# (a Kaggle notebook kit) from a short competition config, and it runs with the internet off: the training
# code is embedded below.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (the network's), find the data.
# 3. **Data**: read the tables with their numbers downcast (a sample of `train_rows` rows where a table is too
#    big for the memory), decide each column's kind once: numbers, categories (booleans, strings whose values
#    repeat, integer codes of few values), datetimes' parts, codes' characters; missing values stay missing.
#    Categories are coded by the training table's levels; a level only the test table has is missing there, with a
#    warning.
# 4. **Training**: cross-validated folds. A booster stops a fold when the validation loss has not improved
#    for `early_stopping_rounds` rounds, or when the fold's share of the time budget runs out: its rounds are
#    planned from the rounds per second it measures. XGBoost and CatBoost train on the GPU. The network trains in
#    kit's training loop: embeddings for categories, standardised numbers, mixed precision, an automatic batch
#    size, a moving average of its weights.
# 5. **Submission**: every fold's model predicts the test table; the average is checked against the sample
#    submission and written.
#
# **Predict mode** (`mode = "predict"`, what a code competition's inference kernel runs): nothing trains.
# The folds a training run left (its output attached as an input, or `model_dir`) predict, reading only the
# test table and the sample submission; the features are read as the training run read them.

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 40  # mlp: at most this many epochs per fold (the boosters count rounds)
folds: int = 5  # cross-validation folds; 1 is a single holdout split
lr: float = 0.002  # mlp: peak AdamW learning rate (for a batch of 64 or fewer); boosters: learning_rate
seed: int = 42
batch_size = "auto"  # mlp: an int, or auto: the largest batch that fits and runs fastest
precision: str = "auto"  # mlp: auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16, bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.01  # mlp: AdamW weight decay (not on biases and norms)
warmup_epochs: float = 1.0  # mlp: linear warm-up, then cosine decay
patience: int = 8  # mlp: epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = True  # mlp: validate a moving average of the weights too (timm's ModelEmaV3), keep the better
num_workers: int = -1  # unused by tables (batches are gathered in place); kept for the contract
compile: bool = False  # mlp: torch.compile the model (CUDA, sm_70 and newer)
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp (the mlp only)
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
model_name: str = "xgboost"  # xgboost, lightgbm, catboost (trees; xgboost, catboost on the GPU) or mlp (a network)
rounds: int = 10000  # boosters: at most this many rounds per fold (early stopping, the budget: fewer)
learning_rate: float = 0.05  # boosters: each round's shrinkage
early_stopping_rounds: int = 200  # boosters: rounds without a better validation score before a fold stops
max_depth: int = 6  # xgboost, catboost: tree depth (lightgbm grows num_leaves leaves)
num_leaves: int = 31  # lightgbm: leaves per tree
subsample: float = 0.8  # boosters: the share of rows each tree sees
colsample: float = 0.8  # xgboost, lightgbm: the share of columns each tree sees
train_rows: int = 0  # training rows read, drawn at random; 0: all (a table too big for the memory stops)
models_by: str = ""  # boosters: one per value of this feature (champs' types); "" one for all
hidden_size: int = 256  # mlp: units per hidden layer
num_layers: int = 3  # mlp: hidden layers
dropout: float = 0.1  # mlp: dropout after each hidden layer
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "tabular-playground-series-dec-2021",
    "template": "tabular",
    "metric": "accuracy",
    "train": "train.csv",
    "test": "test.csv",
    "sample_submission": "sample_submission.csv",
    "id_column": "Id",
    "target_column": "Cover_Type",
    "features": [],
    "drop_columns": [],
    "categorical": [],
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

session = start("tabular", globals())

# %% [markdown]
# ## 2. Data
#
# Reads the training and test tables and the sample submission; checks the target and the feature columns
# (each must be in both tables and hold a value somewhere), that the test ids and the sample submission's ids
# are the same, and says which columns are read as what. The figure shows the target and each feature's share
# of missing values.
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
# Each fold trains on the other folds' rows and stops early on its own. A booster's fold checkpoint holds the
# library's own model (with kit's stamp: what the data looked like, so the inference kernel rebuilds it from
# the test table alone); the network's holds its best epoch's weights and its feature statistics. A run with
# the same settings into the same `output_dir` reuses its finished folds (changed settings train afresh in a
# folder of their own, `checkpoints/<run>/`). With two GPUs (Kaggle's T4 x2), `parallel` trains folds side by
# side, one GPU each; the workers' lines appear here prefixed `[worker N]`. The last lines compare the
# out-of-fold score with predicting the training mean (or the class prior).

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint that exists predicts the test table; the predictions are averaged, put in the sample
# submission's row order, checked, and only then written to `submission.csv`.
# With no fold checkpoint at all (nothing trained, or every fold failed before its first), a banner says so and
# each row is the training labels' own answer: the class prior (its likeliest class for a label), the mean or
# the median, as the metric scores best (`fallback = "none"`: no submission).

# %%
from kit.run import write_submission

submission = write_submission(session, pipe, data)
submission.head()

# %% [markdown]
# ## 5. Curves and feature importance
#
# Per fold: the training and validation loss (a booster's stop metric per round, the network's loss per
# epoch) and the validation metric, each fold's best marked, saved as `history.png`; on a GPU also its
# utilisation over the run. Then the boosters' feature importance (each feature's share of the gain, the mean
# over the folds), saved as `importance.png`.

# %%
from kit.run import plot_history, plot_importance

_ = plot_history(session, cv)
_ = plot_importance(session, cv)
