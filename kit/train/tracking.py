"""What an epoch keeps track of and reports: its training losses, on the device, its steps' clock, and its one line
of log."""
from __future__ import annotations

from dataclasses import dataclass

import torch


class Losses:
    """One epoch's training losses, kept on the device so that no step waits for the host: the sum of the
    finite ones, how many were not finite, and the longest run of non-finite steps since the last look."""

    def __init__(self):
        self.sum = self.bad = self.streak = self.worst = None

    def add(self, loss: torch.Tensor) -> None:
        if self.sum is None:
            zero = torch.zeros((), device=loss.device)
            self.sum, self.bad, self.streak, self.worst = zero, zero.clone(), zero.clone(), zero.clone()
        finite = torch.isfinite(loss)
        self.sum = self.sum + torch.where(finite, loss.float(), 0.0)
        self.bad = self.bad + (~finite).float()
        self.streak = torch.where(finite, 0.0, self.streak + 1)
        self.worst = torch.maximum(self.worst, self.streak)

    def worst_streak(self) -> int:
        """The longest run of non-finite steps since the last call (waits for the device)."""
        if self.worst is None:
            return 0
        worst = int(self.worst)
        self.worst = self.streak.clone()
        return worst


@dataclass
class StepClock:
    """One epoch's clock of its training steps: the rows they saw, the time spent waiting for batches and stepping,
    and the first step's time where it is this run's first of the fold (compiling, cuDNN's search: a one-off the
    budget does not plan for)."""

    steps: int = 0
    seen: int = 0  # rows
    wait_s: float = 0.0  # waiting for the loader's next batch
    step_s: float = 0.0  # stepping, up to the last look at the device (steps do not wait for it)
    first_s: float = 0.0  # step_s after a fold's first step, timed; 0: not this epoch

    def waited(self, seconds: float) -> None:
        self.wait_s += seconds

    def stepped(self, rows: int) -> None:
        self.steps += 1
        self.seen += rows

    def timed(self, seconds: float, first: bool) -> None:
        """`seconds` more of stepping; `first`: they end the fold's first step."""
        self.step_s += seconds
        if first:
            self.first_s = self.step_s

    def usual_step_s(self) -> float:
        """A usual step's time: the steps after the first, when it was timed."""
        return (self.step_s - self.first_s) / (self.steps - (1 if self.first_s else 0))

    def rows_per_s(self, usual_s: float) -> float:
        return self.seen / max(usual_s * self.steps, 1e-9)

    def one_off_s(self) -> float:
        """The first step's time beyond a usual step's."""
        if not self.first_s or self.steps < 2:
            return 0.0
        return max(self.first_s - (self.step_s - self.first_s) / (self.steps - 1), 0.0)


def epoch_line(desc: str, r: dict, epochs: int, metric: str, improved: str, stats, loss_is_metric: bool,
               explain: bool) -> str:
    """`improved`: "metric" (a better score), "loss" (a tie at a lower validation loss, kit.train.best) or "";
    `loss_is_metric`: the validation loss is the metric, printed once; `explain`: say what * means. With an
    average of the weights validated too, `r` holds both scores ("weights", "ema"), and `r[metric]` the better."""
    weights = r.get("weights", r[metric])
    val = f"val {metric} {weights:.4f}" if loss_is_metric else f"val loss {r['val_loss']:.4f} | {metric} {weights:.4f}"
    if "ema" in r:
        val += f" | ema {r['ema']:.4f}" + ("" if loss_is_metric else f" (loss {r['ema_loss']:.4f})")
    mark = {"metric": " *", "loss": f" * (a tie on {metric}, broken by the lower val loss)"}.get(improved, "  ")
    gpu = f" | {stats.line()}" if stats else ""
    of = ", of the weights or of their moving average (ema)" if "ema" in r else ""
    ties = "" if loss_is_metric else f", or the same {metric} at a lower validation loss"
    note = f"  (*: a new best {metric}{of}{ties}; those weights are kept for prediction)" if explain else ""
    return (
        f"{desc} epoch {r['epoch']:>2}/{epochs} | train loss {r['train_loss']:.4f} | {val}{mark}"
        f" | {r['samples_per_s']:.0f} samples/s{gpu} | {r['seconds']:.1f} s{note}"
    )
