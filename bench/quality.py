"""`make quality`: kit's built notebook with its default recipe against the plain loop a competitor writes.

Each row trains the same model, of the same sizes, for the same epochs on the same data, twice: once through
kit (`python -m kit run`, the real notebook, only the data-size settings given) and once through the plain
loop written below (Adam/AdamW, a cosine schedule, all training rows, no tricks). Both then predict the same
held-out rows, whose answers only this file knows, and are scored there.

  digits       scikit-learn's 1,797 handwritten digits as 64 px images in dog-breed's layout; cnn,
               timm's test_efficientnet from random init; accuracy on 397 held-out images
  ventilator   breaths simulated on a single-compartment lung (kit.smoke.sequences.breath), in the competition's
               layout; lstm (BiLSTM 2 x 96) and transformer (3 x 96); MAE on the held-out breaths' u_out == 0 steps

  gunpoint     50 sequences shaped as UCR's GunPoint, two classes apart by design; lstm per sequence, folds = 1 (10
               sequences choose the best epoch); accuracy on 150 held-out ones (bench/gunpoint_quality.py)
  tabular      breast cancer, wine and diabetes from scikit-learn; xgboost, lightgbm, catboost and mlp, each against
               the plain call a competitor writes; and two small mixed tables, Titanic and Palmer's penguins (OpenML's,
               as scikit-learn's tests ship them), kit's xgboost against the plain XGBClassifier on pandas categories
               (bench/tabular_quality.py)
  salt         TGS's layout, 28 px seismic-like images; segmentation, smp's Unet on tu-test_efficientnet against a
               plain smp loop; map_iou on 160 held-out images (bench/segmentation_quality.py)
  articles     chaii's layout, Hindi and Tamil articles in strided windows; spans, a tiny BERT against a plain Hugging
               Face question-answering loop; word Jaccard on 60 held-out articles (bench/spans_quality.py)
  calls        2 s synthetic calls and tones at 8 kHz in class folders; audio, timm's test_resnet on log-mels against a
               plain loop (the same log-mel on the CPU, Adam, no augmentation); accuracy on 200 held-out clips
               (bench/audio_quality.py)
  tokens       text normalization's layout, English tokens (numbers, years, abbreviations, measures, plain words); seq2seq,
               copy + table + a tiny T5 against copy + table alone and against the T5 alone; exact-match accuracy on 100
               held-out sentences (bench/normalize_quality.py)
  shapes       64 px images with 1 to 3 squares, discs and rings in vinbigdata's layout; detection, Faster R-CNN on timm's
               test_resnet against a plain torchvision loop; mAP@0.5 on 64 held-out images (bench/detect_quality.py)

A row passes when kit scores at least as well as the plain loop: accuracy within 0.01, MAE within 10%; the
tabular rows, AUC within 0.005, log loss and RMSE within 5%. Prints one table, writes JSON to --out; exit 1
if a row fails. About 8 minutes on 2 cores one group after another; make quality runs the groups two at a time
(--jobs 2), each on one thread, and CI runs it whole: shorter runs (15 epochs on half the breaths) left kit's
Transformer, which validates on a fifth of the breaths it never trains on, 32% behind the plain loop, a gap the
full-length row does not have.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import audio_quality  # noqa: E402
import detect_quality  # noqa: E402
import gunpoint_quality  # noqa: E402
import normalize_quality  # noqa: E402
import segmentation_quality  # noqa: E402
import spans_quality  # noqa: E402
import tabular_quality  # noqa: E402

from kit.metric_records import greater_is_better  # noqa: E402
from kit.smoke import sequences as smoke_sequences  # noqa: E402
from kit.spec import Spec  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# the rows' groups in the table's order, and the order --jobs starts them in (the longest first)
GROUPS = ("cnn", "lstm", "transformer", "gunpoint", "tabular", "segmentation", "spans", "audio", "seq2seq", "detection")
LONGEST_FIRST = ("tabular", "segmentation", "transformer", "lstm", "cnn", "audio", "detection", "seq2seq", "spans", "gunpoint")
FEATURES = ["R", "C", "time_step", "u_in", "u_out"]


@dataclass
class Row:
    data: str
    template: str
    metric: str
    kit: float
    plain: float
    kit_s: float
    plain_s: float
    slack: float = 0.0  # how far kit may fall behind: a score's points, or an error's share (0: the usual)

    @property
    def passed(self) -> bool:
        if greater_is_better(self.metric):
            return self.kit >= self.plain - (self.slack or 0.01)
        return self.kit <= self.plain * (1 + (self.slack or 0.10))


# -- data ------------------------------------------------------------------------------------------------
def make_digits(folder: Path, size: int = 64, test: int = 397) -> pd.DataFrame:
    """dog-breed's layout (labels.csv id,breed; train/ and test/ <id>.jpg; sample_submission.csv id + one
    column per class) from scikit-learn's digits, scaled up from 8 x 8. Returns the held-out answers."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    classes = [f"digit{k}" for k in range(10)]
    rows = {"train": order[test:], "test": order[:test]}
    for split, idx in rows.items():
        (folder / split).mkdir(parents=True)
        for i in idx:
            pixels = (digits.images[i] * (255 / 16)).astype(np.uint8)
            picture = Image.fromarray(pixels).convert("RGB").resize((size, size), Image.BICUBIC)
            picture.save(folder / split / f"d{i}.jpg", quality=95)
    pd.DataFrame({"id": [f"d{i}" for i in rows["train"]], "breed": [classes[k] for k in digits.target[rows["train"]]]}).to_csv(
        folder / "labels.csv", index=False)
    sample = pd.DataFrame({"id": [f"d{i}" for i in rows["test"]]})
    for c in classes:
        sample[c] = 0.1
    sample.to_csv(folder / "sample_submission.csv", index=False)
    return pd.DataFrame({"id": sample["id"], "answer": [classes[k] for k in digits.target[rows["test"]]]})


def make_ventilator(folder: Path) -> pd.DataFrame:
    """600 training and 150 held-out breaths in ventilator-pressure-prediction's layout (kit.smoke's lung).
    Returns the held-out answers."""
    spec = Spec(slug="ventilator-pressure-prediction", train="train.csv", test="test.csv", target_column="pressure")
    test = smoke_sequences.make_ventilator(spec, folder, seed=0, train=600, test=150)
    return test[["id", "u_out", "pressure"]].rename(columns={"pressure": "answer"})


# -- kit ---------------------------------------------------------------------------------------------------
def run_kit(comp: str, data: Path, out: Path, params: dict) -> tuple[pd.DataFrame, float]:
    """The built notebook through `kit run`, as a user runs it locally: its submission and wall seconds."""
    command = [sys.executable, "-m", "kit", "run", comp, "--data", str(data), "--output", str(out)]
    command += [a for k, v in params.items() for a in ("-p", f"{k}={json.dumps(v) if isinstance(v, bool) else v}")]
    started = time.time()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.time() - started
    (out / "quality.log").parent.mkdir(parents=True, exist_ok=True)
    (out / "quality.log").write_text(done.stdout + done.stderr)
    if done.returncode:
        raise SystemExit(f"quality: kit run {comp} failed (exit {done.returncode}); see {out / 'quality.log'}")
    return pd.read_csv(out / "submission.csv"), seconds


# -- the plain loops ---------------------------------------------------------------------------------------
def plain_loop(model: nn.Module, optimizer, rows: int, loss_of, epochs: int, batch: int) -> None:
    """The loop as a competitor writes it: shuffled batches of `rows`, a cosine schedule over every step,
    nothing else. `loss_of(indices)` is a batch's loss. Leaves the model in eval mode."""
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs * math.ceil(rows / batch))
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(rows).split(batch):
            loss = loss_of(idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    model.eval()


def plain_cnn(data: Path, model_name: str, epochs: int, lr: float = 1e-3, batch: int = 32) -> pd.DataFrame:
    """timm model, AdamW, cosine over all steps, no augmentation, every training image, batch 32."""
    import timm

    labels, sample = pd.read_csv(data / "labels.csv"), pd.read_csv(data / "sample_submission.csv")
    classes = [c for c in sample.columns if c != "id"]

    def load(split, ids):
        x = np.stack([np.asarray(Image.open(data / split / f"{i}.jpg").convert("RGB")) for i in ids])
        x = torch.tensor(x).permute(0, 3, 1, 2).float() / 255
        return (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)

    x, y = load("train", labels["id"]), torch.tensor(labels["breed"].map(classes.index).to_numpy())
    torch.manual_seed(0)
    model = timm.create_model(model_name, pretrained=False, num_classes=len(classes))
    plain_loop(model, torch.optim.AdamW(model.parameters(), lr=lr), len(x), lambda idx: F.cross_entropy(model(x[idx]), y[idx]),
               epochs, batch)
    with torch.no_grad():
        prob = torch.cat([model(b).softmax(-1) for b in load("test", sample["id"]).split(128)]).numpy()
    return pd.DataFrame(prob, columns=classes).assign(id=sample["id"])


class PlainLSTM(nn.Module):
    def __init__(self, features: int, hidden: int, layers: int):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 1)

    def forward(self, x):
        return self.head(self.lstm(x)[0])[..., 0]


class PlainTransformer(nn.Module):
    def __init__(self, features: int, d_model: int, layers: int, length: int = 80):
        super().__init__()
        self.proj = nn.Linear(features, d_model)
        self.position = nn.Parameter(torch.zeros(1, length, d_model))
        layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 1)

    def forward(self, x):
        return self.head(self.encoder(self.proj(x) + self.position[:, : x.shape[1]]))[..., 0]


def plain_sequence(data: Path, template: str, epochs: int, lr: float = 1e-3, batch: int = 32) -> pd.DataFrame:
    """Features and target standardised, L1 on the u_out == 0 steps, Adam, cosine, every training breath."""
    train, test = pd.read_csv(data / "train.csv"), pd.read_csv(data / "test.csv")

    def tensors(frame):
        frame = frame.sort_values(["breath_id", "time_step"])
        n = frame["breath_id"].nunique()
        return frame, torch.tensor(frame[FEATURES].to_numpy(np.float32)).view(n, 80, len(FEATURES))

    train, x = tensors(train)
    test, xt = tensors(test)
    mean, std = x.mean((0, 1)), x.std((0, 1))
    x, xt = (x - mean) / std, (xt - mean) / std
    y = torch.tensor(train["pressure"].to_numpy(np.float32)).view(len(x), 80)
    w = torch.tensor((train["u_out"] == 0).to_numpy(np.float32)).view(len(x), 80)
    y_mean, y_std = float(y[w > 0].mean()), float(y[w > 0].std())
    torch.manual_seed(0)
    model = PlainLSTM(len(FEATURES), 96, 2) if template == "lstm" else PlainTransformer(len(FEATURES), 96, 3)

    def loss_of(idx):
        return ((model(x[idx]) - (y[idx] - y_mean) / y_std).abs() * w[idx]).sum() / w[idx].sum()

    plain_loop(model, torch.optim.Adam(model.parameters(), lr=lr), len(x), loss_of, epochs, batch)
    with torch.no_grad():
        pred = model(xt) * y_std + y_mean
    return pd.DataFrame({"id": test["id"].to_numpy(), "pressure": pred.reshape(-1).numpy()})


# -- scores --------------------------------------------------------------------------------------------------
def accuracy(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    merged = answers.merge(submission, on="id")
    classes = [c for c in submission.columns if c != "id"]
    return float((merged[classes].to_numpy().argmax(1) == merged["answer"].map(classes.index).to_numpy()).mean())


def inspiratory_mae(submission: pd.DataFrame, answers: pd.DataFrame) -> float:
    merged = answers.merge(submission, on="id")
    scored = merged["u_out"] == 0
    return float((merged.loc[scored, "pressure"] - merged.loc[scored, "answer"]).abs().mean())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="output/quality.json")
    ap.add_argument("--work", default=".quality", help="data, kit's outputs and logs (replaced on each run)")
    ap.add_argument("--only", default="", help="comma-separated rows to run: cnn, lstm, transformer, gunpoint, tabular "
                                               "(or mixed: only its small mixed tables), segmentation, spans, audio, "
                                               "detection")
    ap.add_argument("--jobs", type=int, default=1, help="run the rows' groups in this many processes at once, each "
                                                        "on one thread (make quality: 2)")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    if args.jobs > 1:
        return in_lanes(args, [g for g in LONGEST_FIRST if not only or g in only or (g == "tabular" and "mixed" in only)])
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1)
    cnn_epochs, seq_epochs = 8, 30
    rows: list[Row] = []
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    if not only or "cnn" in only:
        answers = make_digits(work / "digits")
        params = dict(model_name="test_efficientnet", pretrained=False, image_size=64, epochs=cnn_epochs, folds=2, device="cpu")
        kit_sub, kit_s = run_kit("dog-breed", work / "digits", work / "kit-cnn", params)
        t0 = time.time()
        plain_sub = plain_cnn(work / "digits", "test_efficientnet", cnn_epochs)
        rows.append(Row("digits 64 px", "cnn", "accuracy", accuracy(kit_sub, answers), accuracy(plain_sub, answers),
                        kit_s, time.time() - t0))
    answers = None
    for template in ("lstm", "transformer"):
        if only and template not in only:
            continue
        if answers is None:
            answers = make_ventilator(work / "ventilator")
        sizes = dict(hidden_size=96, num_layers=2, d_model=96) if template == "lstm" else \
            dict(d_model=96, num_layers=3, nhead=4, hidden_size=192)
        params = dict(epochs=seq_epochs, folds=1, device="cpu", **sizes)
        kit_sub, kit_s = run_kit(f"ventilator-{template}", work / "ventilator", work / f"kit-{template}", params)
        t0 = time.time()
        plain_sub = plain_sequence(work / "ventilator", template, seq_epochs)
        rows.append(Row("ventilator (simulated)", template, "mae", inspiratory_mae(kit_sub, answers),
                        inspiratory_mae(plain_sub, answers), kit_s, time.time() - t0))
    if not only or "gunpoint" in only:
        rows += gunpoint_quality.rows(work, run_kit, Row, plain_loop)
    if not only or {"tabular", "mixed"} & only:
        def tabular_row(*values) -> Row:  # accuracy within 0.01, AUC within 0.005, log loss and RMSE within 5%
            metric = values[2]
            return Row(*values, slack=0.005 if metric == "auc" else 0.01 if greater_is_better(metric) else 0.05)

        sources = ("sklearn", "openml") if not only or "tabular" in only else ("openml",)
        rows += tabular_quality.rows(work, run_kit, tabular_row, sources=sources)
    if not only or "segmentation" in only:
        rows += segmentation_quality.rows(work, run_kit, Row, plain_loop)
    if not only or "spans" in only:
        rows += spans_quality.rows(work, run_kit, Row, plain_loop)
    if not only or "audio" in only:
        rows += audio_quality.rows(work, run_kit, Row, plain_loop)
    if not only or "seq2seq" in only:
        rows += normalize_quality.rows(work, run_kit, Row)
    if not only or "detection" in only:
        rows += detect_quality.rows(work, run_kit, Row, plain_loop)
    return report(rows, Path(args.out))


def report(rows: list[Row], out: Path) -> int:
    """The table printed and written as JSON to `out`; 1 if kit loses a row."""
    print(f"{'data':<24}{'template':<18}{'metric':<10}{'kit':>8}{'plain':>8}{'kit s':>8}{'plain s':>9}  verdict")
    for r in rows:
        print(f"{r.data:<24}{r.template:<18}{r.metric:<10}{r.kit:>8.4f}{r.plain:>8.4f}{r.kit_s:>8.0f}{r.plain_s:>9.0f}  "
              f"{'ok' if r.passed else 'LOSES'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([asdict(r) | {"passed": r.passed} for r in rows], indent=2))
    return 0 if all(r.passed for r in rows) else 1


def in_lanes(args, groups: list[str]) -> int:
    """Each group of rows in a process of its own (this file with --only), `args.jobs` at a time, each on one thread,
    kit's kernels too: one process on two threads left the second core idle between its steps, and an OpenMP thread
    spun for a core the other process held. Kit and the plain loop of a row still run one after the other, in one
    process, on the same thread count. Each group's log is printed whole as it ends, then the one table."""
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    only = set(filter(None, args.only.split(",")))

    def lane(group: str) -> tuple[str, int, str]:
        which = "mixed" if group == "tabular" and only and "tabular" not in only else group  # --only mixed: its tables alone
        command = [sys.executable, __file__, "--only", which, "--work", str(work / group), "--out", str(work / f"{group}.json")]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        return group, done.returncode, done.stdout + done.stderr

    rows: list[Row] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        ended = {}
        for future in as_completed([pool.submit(lane, g) for g in groups]):
            group, code, log = future.result()
            print(f"-- quality: {group} (exit {code})\n{log}", end="", flush=True)
            ended[group] = code
    failed = [g for g in groups if not (work / f"{g}.json").is_file()]
    if failed:
        raise SystemExit(f"quality: {', '.join(failed)} ended without a table (exit {[ended[g] for g in failed]}); "
                         f"see the logs above")
    for group in sorted(groups, key=GROUPS.index):
        rows += [Row(**{k: v for k, v in r.items() if k != "passed"})
                 for r in json.loads((work / f"{group}.json").read_text())]
    return report(rows, Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
