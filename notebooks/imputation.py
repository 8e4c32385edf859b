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
# # Restoring a missing word with a Hugging Face masked language model, by kit
#
# This notebook restores the one word missing from each test sentence (billion-word-imputation). It fine-tunes a
# pretrained masked language model (BERT, RoBERTa, DeBERTa) with a gap head beside its own: the gap head says where
# the word is missing, the masked-LM head what it was, and the word goes in only where that saves Levenshtein
# distance in expectation; then it writes `submission.csv`. It was built by kit (a Kaggle notebook kit) from a short
# competition config, and it runs with the internet off: the training code is embedded below, and the model comes from
# a folder an attached dataset or model holds (`model_path`), read with `local_files_only=True`.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: find the model folder and its tokenizer (and the whole words it may insert); draw `train_rows` training
#    sentences at random as the training file streams by; read the test sentences.
# 4. **Training**: each batch removes an inner word from each sentence afresh; the loss is the gap head's
#    cross-entropy over the sentence's gaps plus the masked-LM head's of the removed word at a mask in its gap. Each
#    validation pass restores its sentences as the test is restored, and its score is the mean Levenshtein distance.
# 5. **Submission**: every fold checkpoint guesses each test sentence's gap and word; the word goes in where the
#    folds' expected saving is positive, and the sentence stays as it is otherwise.
#
# **Predict mode** (`mode = "predict"`): nothing trains. Each fold's model is rebuilt from the model folder's config and
# loaded with the weights the run left.

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 2  # at most this many epochs per fold
folds: int = 1  # cross-validation folds; 1 is a single holdout split
lr: float = 5e-05  # peak AdamW learning rate of the top layer and the heads (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch of the longest sentences that fits and runs fastest
precision: str = "auto"  # auto (fp16 on a T4, bf16 on Ampere and newer, fp32 on the CPU), fp32, fp16 or bf16
time_budget_s: float = 0.0  # wall-clock budget for the whole notebook; 0 is Kaggle's session limit
fallback: str = "prior"  # no fold to predict with: prior submits the labels' prior (or mode, mean, median); none stops
weight_decay: float = 0.01  # AdamW weight decay (not on biases and norms)
warmup_epochs: float = 0.5  # linear warm-up, then cosine decay
patience: int = 0  # epochs without a better score before a fold stops (from half the planned); 0 never
ema: bool = False  # validate a moving average of the weights too (timm's ModelEmaV3) and keep the better
num_workers: int = -1  # unused by text (token ids are batched in this process); kept for the contract
compile: bool = False  # torch.compile the model (CUDA, sm_70 and newer)
parallel: str = "auto"  # several GPUs: auto, none, folds (each GPU trains whole folds) or ddp
world_size: int = 0  # worker processes; 0 is every visible GPU (on the CPU, 2 runs two gloo workers)
model_path: str = ""  # Hugging Face model folder (config, weights, tokenizer); a path or a name
max_length: int = 96  # tokens per sentence at most (a gap past it is not read)
layer_decay: float = 0.9  # each layer down learns at this times the rate of the one above; 1 is off
gradient_checkpointing: bool = False  # recompute activations in backward: a third slower, much less memory
accumulate: int = 1  # batches per optimizer step (an effective batch of accumulate x batch_size)
train_rows: int = 1000000  # training sentences drawn at random from the file as it streams; 0: all
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "billion-word-imputation",
    "template": "imputation",
    "metric": "levenshtein",
    "train": "train_v2.txt",
    "test": "test_v2.txt",
    "sample_submission": "test_v2.txt",
    "id_column": "id",
    "target_column": "sentence",
    "text_columns": ["sentence"],
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

session = start("imputation", globals())

# %% [markdown]
# ## 2. Data
#
# Finds the model folder under `/kaggle/input` (`model_path`) and loads its tokenizer offline; draws the training
# sentences from the training file (read as it streams, from its zip); reads the test sentences and the sample
# submission. The plot shows the sentences' lengths in words.

# %%
from kit.run import create_pipeline, load_data

pipe = create_pipeline(session)
data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)

# %% [markdown]
# ## 3. Training
#
# The model: the pretrained masked language model and a gap head, learning where a removed word was and what it was.
# AdamW, a linear warm-up and cosine decay. Each fold keeps the weights of its best validation epoch (the mean
# Levenshtein distance of its restored sentences) and checkpoints every epoch: a run with the same settings into the
# same `output_dir` reuses its finished folds and resumes an interrupted one. The last lines compare the out-of-fold
# distance with leaving each sentence as it is.

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint guesses each test sentence's gap and word; a guess goes in where the folds' mean expected
# saving is positive; the whole is checked against the sample submission and only then written to `submission.csv`.
# With no fold checkpoint at all, a banner says so and each sentence is submitted as it is.

# %%
from kit.run import write_submission

submission = write_submission(session, pipe, data)
submission.head()

# %% [markdown]
# ## 5. Curves
#
# Training and validation loss per fold and the validation metric with each fold's best epoch marked, saved as
# `history.png`.

# %%
from kit.run import plot_history

_ = plot_history(session, cv)
