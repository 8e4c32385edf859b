"""Loss and metric curves per fold, saved to output_dir and shown inline in a notebook."""
from __future__ import annotations

from kit.runtime.session import Session


def plot_history(session: Session, cv) -> object:
    import matplotlib.pyplot as plt

    metric = cv.metric
    fig, (ax_loss, ax_metric) = plt.subplots(1, 2, figsize=(11, 3.6))
    for f in cv.folds:
        epochs = [r["epoch"] for r in f["history"]]
        line = ax_loss.plot(epochs, [r["train_loss"] for r in f["history"]], label=f"fold {f['fold'] + 1} train")[0]
        ax_loss.plot(epochs, [r["val_loss"] for r in f["history"]], "--", color=line.get_color(), label=f"fold {f['fold'] + 1} val")
        ax_metric.plot(epochs, [r[metric] for r in f["history"]], color=line.get_color(), label=f"fold {f['fold'] + 1}")
        ax_metric.plot([f["best_epoch"]], [f["best_score"]], "o", color=line.get_color())
    ax_loss.set(title="loss", xlabel="epoch")
    ax_metric.set(title=f"validation {metric} (dot: best epoch)", xlabel="epoch")
    for ax in (ax_loss, ax_metric):
        ax.grid(alpha=0.3)
        if cv.folds:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path = session.output_dir / "history.png"
    fig.savefig(path, dpi=90)
    session.log(f"saved {path}")
    return fig
