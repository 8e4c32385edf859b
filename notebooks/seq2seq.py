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
# # Sequence to sequence with a Hugging Face encoder-decoder, by kit
#
# This notebook answers each row with a text: text normalization's spoken form of each token ("1995" -> "nineteen
# ninety five"). It copies the tokens the training pairs never change, answers those they have seen from a table of
# the pairs, and fine-tunes a pretrained encoder-decoder (T5, mT5, ByT5, BART) for the rest, then writes
# `submission.csv`. It was built by kit (a Kaggle notebook kit) from a short competition config, and it runs with
# the internet off: the training code is embedded below, and the model comes from a folder an attached dataset or
# model holds (`model_path`), read with `local_files_only=True`.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: find the model folder and its tokenizer; learn the table (each token's most frequent answer in the
#    training pairs), route each test token to copy, the table or the model (the log says how many each way), and
#    write each model token in its sentence (`context_words` neighbours each side).
# 4. **Training**: folds of whole sentences; teacher-forced token cross-entropy on the pairs that change their token
#    (and as many that do not); each validation pass generates, and its score is the exact-match accuracy.
# 5. **Submission**: every fold checkpoint generates the model tokens' texts (greedy, or a beam of `num_beams`, up to
#    `max_new_tokens`), the folds' most voted text is kept, and the copy's and table's answers fill the rest.
#
# **Predict mode** (`mode = "predict"`): nothing trains. The table comes from the training run's record, and each
# fold's model is rebuilt from the model folder's config and loaded with the weights the run left.

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 3  # at most this many epochs per fold
folds: int = 5  # cross-validation folds; 1 is a single holdout split
lr: float = 0.0003  # peak AdamW learning rate of the top blocks and the LM head (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch of the longest inputs that fits and runs fastest
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
max_length: int = 64  # input tokens at most: the token and its neighbours (longer are cut)
layer_decay: float = 1.0  # each block down learns at this times the rate of the one above; 1 is off
gradient_checkpointing: bool = False  # recompute activations in backward: a third slower, much less memory
accumulate: int = 1  # batches per optimizer step (an effective batch of accumulate x batch_size)
max_new_tokens: int = 48  # tokens a generated text holds at most
num_beams: int = 1  # beam search's width; 1 is greedy (the fastest)
context_words: int = 3  # neighbours each side of a token in the model's input
table: bool = True  # copy and a table of the training pairs answer the tokens seen; false: the model all
max_pairs: int = 200000  # training pairs the model learns from at most (changed ones distinct, as many rare unchanged)
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "text-normalization-challenge-english-language",
    "template": "seq2seq",
    "metric": "text_accuracy",
    "train": "en_train.csv",
    "test": "en_test_2.csv",
    "sample_submission": "en_sample_submission_2.csv",
    "id_column": "id",
    "target_column": "after",
    "text_columns": ["before"],
    "group_column": "sentence_id",
    "order_column": "token_id",
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

session = start("seq2seq", globals())

# %% [markdown]
# ## 2. Data
#
# Finds the model folder under `/kaggle/input` (`model_path`) and loads its tokenizer offline; reads the training and
# test tokens and the sample submission; learns the table and routes each test token (copy, table, model); tokenizes
# the model's inputs and answers. The plot shows their lengths in tokens.

# %%
from kit.run import create_pipeline, load_data

pipe = create_pipeline(session)
data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)

# %% [markdown]
# ## 3. Training
#
# The model: the pretrained encoder-decoder, teacher-forced on each pair's answer. AdamW, a linear warm-up and
# cosine decay. Each fold keeps the weights of its best validation epoch (the exact-match accuracy of the generated
# texts) and checkpoints every epoch: a run with the same settings into the same `output_dir` reuses its finished
# folds and resumes an interrupted one. The last lines compare the out-of-fold accuracy with copying each token.

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint generates the texts of the tokens the table has not seen; the folds' most voted text is
# kept; copy and the table answer the others; the whole is checked against the sample submission and only then
# written to `submission.csv`. With no fold checkpoint at all, a banner says so and each model token is copied.

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
