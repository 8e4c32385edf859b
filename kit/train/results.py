"""What a fold's training is asked (FitConfig), what the one loop is handed (FoldFit), and what it returns
(FitResult): shared by the one loop (kit.train.loop) and the boosters' fold (kit.train.boosting), and read by
kit.run. The files it writes are the run folder's (kit.runtime.run_folder.FoldFiles)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from torch import nn

from kit.data.batch import Batch
from kit.runtime.budget import Budget
from kit.runtime.collective import Collective
from kit.runtime.monitor import Monitor
from kit.runtime.precision import InForce, Precision
from kit.runtime.run_folder import FoldFiles
from kit.train.objectives import Objective


@dataclass(frozen=True)
class FitConfig:
    epochs: int
    lr: float
    weight_decay: float
    warmup_epochs: float  # linear warm-up, then cosine decay to zero over the remaining steps
    patience: int  # stop after this many epochs without a better validation score (from PATIENCE_AFTER of them on); 0 never
    metric: str
    grad_clip: float = 1.0  # clip the gradient norm at this value, or disable if == 0.0
    ema: bool = False  # validate a moving average of the weights too, and keep the better (kit.train.ema)
    layer_decay: float = 1.0  # each layer group down learns at this times the rate of the one above (timm's groups)
    micro: int = 0  # micro-batches of this many rows from the start: gradient accumulation (0: whole batches)


@dataclass
class FitResult:
    best_score: float = float("nan")
    best_epoch: int = 0  # 1-based; 0 if no epoch produced a finite score
    best_loss: float = float("nan")  # the best epoch's validation loss: what breaks a tie on the score (kit.train.best)
    epochs_run: int = 0
    epochs_planned: int = 0
    history: list[dict] = field(default_factory=list)
    stopped: str = "completed"  # or "early stop: ...", "time budget", ...
    precision: str = ""
    unit: str = "epoch"  # what best_epoch and epochs_run count: epochs, or a booster's rounds (kit.train.boosting)



@dataclass(frozen=True)
class FoldFit:
    """One fold's training, as kit.train.loop.fit is handed it: the model and how a batch becomes its loss, the
    batches, the settings, and the fold's surroundings (its files, its budget and place in the plan, the monitor,
    the data-parallel peers)."""

    model: nn.Module
    objective: Objective
    train: Iterable[Batch]
    val: Iterable[Batch]
    cfg: FitConfig
    precision: Precision | InForce  # switched in place on a fall-back to fp32 or a resume: the InForce the data path reads
    files: FoldFiles
    log: Callable[[str], None] = print
    desc: str = ""
    budget: Budget | None = None  # None: no deadline
    fold: tuple[int, int] = (0, 1)  # (this fold, folds in all), for the budget's plan
    monitor: Monitor | None = None
    collective: Collective | None = None  # the data-parallel peers, if any
    val_rows: int = 0  # the fold's validation rows, for the plan's line (0: not said)
