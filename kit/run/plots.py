"""Loss and metric curves per fold, and GPU utilisation over time where the monitor sampled a GPU, saved to
output_dir and shown inline. On the CPU there is no GPU panel and no gpu_monitor.csv, and the log says so."""
from __future__ import annotations

import csv
import io

from kit import files
from kit.runtime.session import Session


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
    ax_loss.set(title="loss", xlabel="epoch")
    ax_metric.set(title=f"validation {cv.metric} (dot: best epoch)", xlabel="epoch")
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
