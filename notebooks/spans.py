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
# # Span extraction with a Hugging Face encoder, by kit
#
# This notebook fine-tunes a pretrained Transformer encoder (RoBERTa, DeBERTa-v3, ...) to find each row's answer as a
# span of its context (tweet-sentiment-extraction: the words of a tweet that carry its sentiment; question answering:
# the answer in an article), and writes `submission.csv`. It was built by kit (a Kaggle notebook kit) from a short
# competition config, and it runs with the internet off: the training code is embedded below, and the model comes
# from a folder an attached dataset or model holds (`model_path`), read with `local_files_only=True`.
#
# The steps:
#
# 1. **Parameters**: the one cell to edit: the config's values where it sets them, the template's defaults
#    otherwise. Change a value in place and run the cells again; a run with other settings trains afresh.
# 2. **Set-up**: look at the GPU, pick the precision (fp16 on a T4, bf16 on Ampere and newer), find the data.
# 3. **Data**: find the model folder, load its fast tokenizer, cut each (question, context) pair into windows of
#    `max_length` tokens overlapping by `doc_stride`, each token with its characters in the context; find each
#    answer in its context and mark its first and last token in every window that holds it whole.
# 4. **Training**: cross-validated folds of whole contexts. Start and end logits over each window's tokens,
#    cross-entropy on both; batches of windows of about one length; layer-wise learning-rate decay, fp16 with
#    loss scaling on a T4. The validation score is the word Jaccard of each context's best span.
# 5. **Submission**: every fold checkpoint predicts the test windows; their logits are averaged window by window,
#    and each context's best valid span over its windows (start before end, at most `max_answer_length` tokens) is
#    mapped back to its characters, checked against the sample submission and written.
#
# **Predict mode** (`mode = "predict"`, what a code competition's inference kernel runs): nothing trains.
# Each fold's model is rebuilt from the model folder's config and loaded with the weights a training run left
# (its output attached as an input, or `model_dir`).

# %% tags=["parameters"]
data_dir: str = ""  # competition input folder; empty finds it under /kaggle/input
output_dir: str = ""  # checkpoints, logs, plots, submission.csv; empty: /kaggle/working on Kaggle
mode: str = "train"  # train, then predict; predict: only predict with the folds a training run left (model_dir)
model_dir: str = ""  # predict mode: the training kernel's output; empty searches /kaggle/input
blend = []  # predict mode: the runs to blend (Kaggle sources or folders); empty predicts with the one run found
device: str = "auto"  # auto, cuda or cpu
epochs: int = 4  # at most this many epochs per fold
folds: int = 5  # cross-validation folds; 1 is a single holdout split
lr: float = 2e-05  # peak AdamW learning rate of the top layer and the head (for a batch of 64 or fewer)
seed: int = 42
batch_size = "auto"  # an int, or auto: the largest batch of the longest windows that fits and runs fastest
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
max_length: int = 384  # tokens per window (question, context, special tokens); longer contexts: more windows
layer_decay: float = 0.9  # each layer down learns at this times the rate of the one above; 1 is off
gradient_checkpointing: bool = False  # recompute activations in backward: a third slower, much less memory
accumulate: int = 1  # batches per optimizer step (an effective batch of accumulate x batch_size)
doc_stride: int = 128  # tokens a context's windows overlap by: an answer one window cuts is whole in the next
max_answer_length: int = 64  # tokens a predicted span holds at most
max_examples: int = 0  # tf2-qa: training pages kept from the JSONL, streamed (0: all)
negatives: float = 1.0  # tf2-qa: unanswered training pages kept, per answered one
competition: dict = {  # the config's [competition] and [data]: which files and columns hold what
    "slug": "tweet-sentiment-extraction",
    "template": "spans",
    "metric": "jaccard",
    "train": "train.csv",
    "test": "test.csv",
    "sample_submission": "sample_submission.csv",
    "id_column": "textID",
    "target_column": "selected_text",
    "text_columns": ["sentiment", "text"],
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

session = start("spans", globals())

# %% [markdown]
# ## 2. Data
#
# Finds the model folder under `/kaggle/input` (`model_path`) and loads its fast tokenizer offline; reads the
# training and test tables and the sample submission; checks the question, context and answer columns, finds each
# answer in its context (rows whose answer is not there are left out with a warning), and cuts the pairs into
# windows. The plot shows the windows' and the answers' lengths in tokens.

# %%
from kit.run import create_pipeline, load_data

pipe = create_pipeline(session)
data = load_data(session, pipe)  # read and checked, a few rows shown (samples.png)

# %% [markdown]
# ## 3. Training
#
# The model: the pretrained encoder and a linear head giving each token a start and an end logit. AdamW with
# layer-wise learning-rate decay (`layer_decay`: the embeddings learn slowest), a linear warm-up and cosine decay.
# Each fold keeps the weights of its best validation epoch (the Jaccard of each context's best span) and
# checkpoints every epoch: a run with the same settings into the same `output_dir` reuses its finished folds and
# resumes an interrupted one. With two GPUs (Kaggle's T4 x2), `parallel` trains folds side by side, or one model
# with DDP. The last lines compare the out-of-fold Jaccard with submitting the whole text.

# %%
from kit.run import train_folds

cv = train_folds(session, pipe, data)

# %% [markdown]
# ## 4. Submission
#
# Every fold checkpoint that exists predicts the test windows; the logits are averaged window by window, each
# context's best valid span is taken over its windows and cut out of its text, checked, and only then written to
# `submission.csv`. With no fold checkpoint at all, a banner says so and each row is its whole text
# (`fallback = "none"`: no submission).

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
