"""Loss and metric curves per fold, and GPU utilisation over time where the monitor sampled a GPU, saved to
output_dir and shown inline. On the CPU there is no GPU panel and no gpu_monitor.csv, and the log says so.
The boosters' feature importance, the mean over the folds, beside them."""
from __future__ import annotations

import csv
import io

import numpy as np

from kit import files
from kit.runtime import checkpoint
from kit.runtime.run_folder import RunFolder
from kit.runtime.session import Session

TOP_FEATURES = 20  # the importance plot's


def plot_history(session: Session, cv):
    import matplotlib.pyplot as plt

    samples = cv.monitor.samples if cv.monitor else []
    times, utils = cv.monitor.timeline() if cv.monitor else ([], [])
    panels = 3 if utils else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 3.6))
    ax_loss, ax_metric = axes[0], axes[1]
    for f in cv.folds:
        epochs = [r["epoch"] for r in f["history"]]
        line = ax_loss.plot(epochs, [r["train_loss"] for r in f["history"]], label=f"fold {f['fold'] + 1} train")[0]
        ax_loss.plot(epochs, [r["val_loss"] for r in f["history"]], "--", color=line.get_color(),
                     label=f"fold {f['fold'] + 1} val")
        ax_metric.plot(epochs, [r[cv.metric] for r in f["history"]], color=line.get_color(), label=f"fold {f['fold'] + 1}")
        ax_metric.plot([f["best_epoch"]], [f["best_score"]], "o", color=line.get_color())
    unit = cv.folds[0].get("unit", "epoch") if cv.folds else "epoch"  # a booster's curve is per round
    ax_loss.set(title="loss" if unit == "epoch" else "stop metric", xlabel=unit)
    ax_metric.set(title=f"validation {cv.metric} (dot: best {unit})", xlabel=unit)
    if utils:
        axes[2].plot(times, utils, lw=0.8)
        axes[2].set(title="GPU utilisation", xlabel="seconds", ylabel="%", ylim=(0, 105))
    for ax in axes:
        ax.grid(alpha=0.3)
    if cv.folds:
        ax_loss.legend(fontsize=7)
        ax_metric.legend(fontsize=7)
    fig.tight_layout()
    path = session.output_dir / "history.png"
    with files.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90, format="png")
    if samples:
        session.log(f"saved {path} and {write_samples(session, samples)}")
    else:
        why = "training ran on the CPU" if session.device.type == "cpu" else "the GPU monitor was off"
        session.log(f"saved {path} (no GPU utilisation panel and no gpu_monitor.csv: {why})")
    return fig


def write_samples(session: Session, samples) -> str:
    """The monitor's samples as gpu_monitor.csv in output_dir; its path."""
    text = io.StringIO()
    out = csv.writer(text, lineterminator="\n")
    out.writerow(["time", "util_percent", "memory_used_bytes", "power_w"])
    out.writerows(samples)
    path = session.output_dir / "gpu_monitor.csv"
    files.write_text(path, text.getvalue())
    return str(path)


def plot_importance(session: Session, cv):
    """The boosters' feature importance (each feature's share of the gain), the mean over the folds that have it,
    TOP_FEATURES at most, saved as importance.png; None (and a line) where no fold has it (the network)."""
    import matplotlib.pyplot as plt

    shares = [checkpoint.load(RunFolder(cv.folder).fold(f["fold"]).meta).get("importance") for f in cv.folds]
    shares = [s for s in shares if s]
    if not shares:
        session.log("no feature importance: the folds' models do not report it")
        return None
    names = list(shares[0])
    mean = np.mean([[s.get(n, 0.0) for n in names] for s in shares], axis=0)
    order = np.argsort(-mean)[:TOP_FEATURES][::-1]
    fig, ax = plt.subplots(figsize=(7, 0.25 * len(order) + 1.2))
    ax.barh([names[i] for i in order], mean[order])
    ax.set(title=f"feature importance, share of the gain (mean of {len(shares)} folds)")
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    path = session.output_dir / "importance.png"
    with files.atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90, format="png")
    top = ", ".join(f"{names[i]} {mean[i]:.0%}" for i in order[::-1][:5])
    session.log(f"saved {path}: {top}")
    return fig
