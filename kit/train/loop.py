"""The one training loop every template uses.

It knows nothing of images, sequences, CUDA or dtypes: an objective turns a batch into {"loss", "output"} and
metric rows, the loaders hand it device batches, the precision policy owns autocast and the scaler. What it
does know is how to survive: it checkpoints every epoch and resumes from there, halves the micro-batch on an
out-of-memory error and accumulates gradients to keep the batch, skips non-finite steps and falls back to
fp32 when they persist, turns a failed torch.compile into eager mode, and stops in time for the budget.
A step never waits for the device: losses are summed there and read every CHECK_EVERY steps.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sized

import torch
from torch import nn

from kit.data.batch import Batch
from kit.errors import KitError
from kit.runtime import checkpoint, progress
from kit.runtime.collective import Collective, main_only
from kit.runtime.precision import Precision, fresh_scaler, in_force
from kit.runtime.recovery import describe_error, free_memory, halving, is_compile_error, is_oom
from kit.train import best, metrics, topk
from kit.train import ema as averaging
from kit.train.evaluate import evaluate, unwrap
from kit.train.results import FitResult, FoldFit
from kit.train.resume import ResumeState, host_state, on_host
from kit.train.step import batch_size_of, make_optimizer, train_step, warmup_cosine
from kit.train.tracking import Losses, StepClock, epoch_line

NONFINITE_PATIENCE = 5  # consecutive non-finite steps before mixed precision is given up for fp32
CHECK_EVERY = 8  # steps between looks at the device's loss figures (a host sync; under DDP, an all-reduce)
# early stopping waits for this share of the planned epochs: before the cosine schedule has come down, a
# small dataset's validation score jumps, and a few epochs without a new best say little (a Transformer on
# simulated breaths stopped at epoch 22 of 30 with MAE 0.68; run to the end, with the rest of the recipe, 0.62)
PATIENCE_AFTER = 0.5


class _Fallback(Exception):
    """Non-finite losses persisted under mixed precision."""


def fit(job: FoldFit) -> FitResult:
    """Train for `job.cfg.epochs` (or fewer: early stopping, the budget), keeping the best epoch at `job.files.best`
    and the latest at `job.files.last`; a `files.last` left by an interrupted run is resumed. `job.precision` is
    switched in place on a fall-back to fp32 or a resume (pass the `InForce` the data path reads). Under DDP
    every rank runs this; rank 0 alone logs, writes and plans, and every decision (stop, fall back, the plan)
    is taken together."""
    return _Loop(job).run()


class _Loop:
    def __init__(self, job: FoldFit):
        model, train, cfg, budget = job.model, job.train, job.cfg, job.budget
        self.model, self.objective, self.train, self.val, self.cfg = model, job.objective, train, job.val, cfg
        self.files, self.desc, self.budget, self.fold, self.monitor = job.files, job.desc, budget, job.fold, job.monitor
        self.dist, self.val_rows = job.collective or Collective(), job.val_rows
        self.log = main_only(job.log, self.dist)
        self.precision = precision = in_force(job.precision)
        self.optimizer = make_optimizer(unwrap(model), cfg.lr, cfg.weight_decay, cfg.layer_decay)  # the names timm's groups know
        self.stepped = False  # whether the optimizer has its state: Adam allocates it in its first step
        self.ema = averaging.create(unwrap(model)) if cfg.ema else None
        self.val_passes = 2 if self.ema else 1  # the average of the weights is validated too
        self.scaler = precision.grad_scaler()
        self.resume = ResumeState(job.files.last, self.dist, self.log)
        self.last_lr = math.inf  # the rate of the latest step after the warm-up: the schedule never rises above it
        self.last_save_s = 0.0  # how long the latest resume state took to write
        self.steps_per_epoch = len(train) if isinstance(train, Sized) else 0
        self.micro = cfg.micro
        self.step = 0
        self.warm = False  # whether this run has finished an epoch of the fold (its first step is not a usual one)
        self.explained = False  # whether this run's epoch lines have said what their * means
        planned = budget.current.epochs if budget is not None and budget.current else cfg.epochs
        self.result = FitResult(epochs_planned=planned, precision=precision.name)
        self.planned = budget is not None and budget.epoch_s > 0  # a first plan needs the first steps' times

    # -- checkpoints --------------------------------------------------------------------------------------
    def save_last(self) -> None:
        started = time.time()
        self.resume.save(lambda: {
            "model": host_state(self.model),
            "ema": host_state(self.ema.module) if self.ema else None,
            "optimizer": on_host(self.optimizer.state_dict()),
            "scaler": self.scaler.state_dict(),
            "step": self.step,
            "micro": self.micro,
            "precision": self.precision.name,
            "lr": self.last_lr,
            "result": dataclasses.asdict(self.result),
        })
        self.last_save_s = time.time() - started

    def load_last(self) -> bool:
        """Resume from the fold's latest epoch; False where its weights are another model's (a run of the same
        settings whose model was swapped): nothing is loaded, and the fold's epoch 0 replaces the state."""
        state = self.resume.load()
        model, theirs = unwrap(self.model), state["model"]
        own = model.state_dict()
        if own.keys() != theirs.keys() or any(own[k].shape != theirs[k].shape for k in own):  # every rank reads one file
            self.log(f"{self.desc}: the resume state at {self.files.last} holds another model's weights; training the "
                     "fold afresh")
            return False
        model.load_state_dict(theirs)
        if self.ema:
            self.ema.module.load_state_dict(state["ema"])
        self.precision.switch(Precision(state["precision"], self.precision.device_type))
        self.scaler = self.precision.grad_scaler()
        self.optimizer.load_state_dict(state["optimizer"])
        self.stepped = bool(self.optimizer.state)
        self.scaler.load_state_dict(state["scaler"])
        self.step, self.micro, self.result = state["step"], state["micro"], FitResult(**state["result"])
        self.last_lr = state.get("lr", math.inf)
        return True

    # -- the loop -----------------------------------------------------------------------------------------
    def run(self) -> FitResult:
        if self.resume.exists() and self.load_last():  # rank 0's view, so every rank resumes or none
            r = self.result
            self.log(f"{self.desc}: resuming after epoch {r.epochs_run} from {self.files.last.name} ({r.precision})")
            r.epochs_planned = self.cfg.epochs  # a new run has a new budget: plan again from the request
        else:
            self.save_last()  # epoch 0: what a fall-back to fp32 in the first epoch restarts from
            self.dist.barrier()
        while self.result.epochs_run < self.result.epochs_planned and self.result.stopped == "completed":
            try:
                self.epoch(self.result.epochs_run + 1)
            except _Fallback:
                if self.precision.name == "fp32":
                    self.result.stopped = "non-finite loss in fp32 (lower lr?)"
                    self.log(f"WARNING: {self.desc}: the loss stays non-finite in fp32; the fold stops at its best epoch")
                    break
                failed = self.precision.name
                self.load_last()
                self.precision.switch(self.precision.fallback())
                self.scaler = self.precision.grad_scaler()
                self.result.precision = self.precision.name
                self.log(
                    f"WARNING: {self.desc}: non-finite losses keep coming under {failed}; "
                    f"falling back to fp32 and redoing epoch {self.result.epochs_run + 1} from the last checkpoint"
                )
        return self.result

    def lr_at(self, step: int) -> float:
        """The schedule's rate at `step` for the epochs planned now. After the warm-up it never rises: a plan that
        gives back epochs (the first plan times a few steps; later ones measure whole epochs) stretches the
        decay ahead, holding the rate until the new curve comes down to it, rather than raising it."""
        total = self.result.epochs_planned * self.steps_per_epoch
        warmup = min(round(self.cfg.warmup_epochs * self.steps_per_epoch), max(total - 1, 0))
        lr = self.cfg.lr * warmup_cosine(step, total, warmup)
        if step >= warmup:
            lr = min(lr, self.last_lr)
            self.last_lr = lr
        return lr

    def epoch(self, epoch: int) -> None:
        started = time.time()
        if self.monitor:
            self.monitor.epoch_begin()
        losses, clock, deadline_hit = self.train_steps(epoch)
        skipped = int(losses.bad) if losses.bad is not None else 0
        steps = clock.steps
        if self.dist.any(steps > 0 and (skipped == steps or losses.worst_streak() >= NONFINITE_PATIENCE)):
            raise _Fallback()  # not one finite step this epoch, or a streak of them at its end
        if skipped:
            self.log(f"WARNING: {self.desc} epoch {epoch}: skipped {skipped} steps with a non-finite loss")
        one_off = clock.one_off_s()  # happens once per fold: the budget does not plan for it
        self.warm = True
        # DDP ranks keep their own BatchNorm statistics while they train (kit.runtime.collective): one mean for all
        for module in (unwrap(self.model), self.ema.module if self.ema else None):
            if module is not None:
                self.dist.average_norm_statistics(module)
        train_s = time.time() - started - one_off
        v0 = time.time()
        val_loss, rows, judged, kept, averaged = self.validate()
        val_s = time.time() - v0
        improved, save_s = self.keep_best(epoch, judged, kept, rows)
        record = {
            "epoch": epoch,
            "train_loss": float(losses.sum) / max(steps - skipped, 1) if steps > skipped else float("nan"),
            "val_loss": val_loss,
            self.cfg.metric: judged.score,  # the better of the weights and their average, when both were validated
            **averaged,
            "lr": max(g["lr"] for g in self.optimizer.param_groups),  # the top layer's, under layer-wise decay
            "samples_per_s": clock.seen / max(clock.step_s - one_off, 1e-9),
            "seconds": time.time() - started,
            "steps": steps,
        }
        self.end_epoch(epoch, record, clock, improved, deadline_hit)
        if self.budget and self.result.stopped == "completed":
            # rows val_s covers, gathered from every rank; one process predicts the test set on one GPU
            validated = len(rows.get("target", [])) * self.val_passes / self.dist.world
            self.budget.measure_epoch(train_s, val_s, validated, save_s)
            self.replan(epoch)
        self.save_last()
        self.dist.barrier()  # rank 0's checkpoints are on disk before any rank might read them

    def train_steps(self, epoch: int) -> tuple[Losses, StepClock, bool]:
        """The epoch's training steps, until the batches run out or the deadline comes (True): their losses and
        clock. Its first steps are timed for the budget's first plan."""
        clock, losses, deadline_hit = StepClock(), Losses(), False
        deadline = self.deadline()
        bar = progress.bar(total=self.steps_per_epoch, desc=f"{self.desc} epoch {epoch}/{self.result.epochs_planned}",
                           unit="steps", leave=False)
        batches = iter(self.train)
        while True:
            t0 = time.time()
            batch = next(batches, None)
            t1 = time.time()
            if batch is None:
                break
            clock.waited(t1 - t0)
            # one process reads its clock every step; DDP ranks agree every few steps (an all-reduce)
            if (self.dist.world == 1 or clock.steps % CHECK_EVERY == 0) and self.dist.any(t1 > deadline):
                deadline_hit = True
                break
            lr = self.lr_at(self.step)
            for group in self.optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)  # layer-wise decay's share
            losses.add(self.step_with_recovery(batch))
            self.step += 1
            if self.ema:
                self.ema.update(unwrap(self.model), step=self.step)
            clock.stepped(batch_size_of(batch))
            first = not self.warm and clock.steps == 1  # this run's first step of the fold: compiling, cuDNN's search
            planning = self.budget is not None and not self.planned and clock.steps == self.first_plan_at()
            if first or planning:
                float(losses.sum)  # wait for the device: these steps are timed
            clock.timed(time.time() - t1, first)
            bar.update(1)
            if planning and not first:
                usual = clock.usual_step_s()
                self.first_plan(usual, clock.rows_per_s(usual))
                deadline = self.deadline()
            if clock.steps % CHECK_EVERY == 0 and self.dist.any(losses.worst_streak() >= NONFINITE_PATIENCE):
                bar.close()
                raise _Fallback()
        bar.close()
        return losses, clock, deadline_hit

    def validate(self) -> tuple[float, dict, best.Judged, nn.Module, dict]:
        """The validation loss, rows and judgement of the weights kept this epoch (the weights, or their average
        where it judges better), those weights, and both scores where the average was validated too."""
        val_loss, rows = evaluate(self.model, self.objective, self.val, self.precision, self.dist, self.log)
        judged = best.Judged(self.score(rows), val_loss)
        kept, averaged = self.model, {}
        if self.ema:
            ema_loss, ema_rows = evaluate(self.ema.module, self.objective, self.val, self.precision, self.dist, self.log)
            ema = best.Judged(self.score(ema_rows), ema_loss)
            averaged = {"weights": judged.score, "ema": ema.score, "ema_loss": ema_loss}
            if best.verdict(self.cfg.metric, ema, judged):  # the same rule as between epochs: ties go to the lower loss
                kept, rows, judged = self.ema.module, ema_rows, ema
        return val_loss, rows, judged, kept, averaged

    def keep_best(self, epoch: int, judged: best.Judged, kept: nn.Module, rows: dict) -> tuple[str, float]:
        """Save `kept` as the fold's best where `judged` beats the best so far: the verdict, and the seconds the
        epoch's writes took (its best and the previous epoch's resume state)."""
        r = self.result
        improved = best.verdict(self.cfg.metric, judged, best.Judged(r.best_score, r.best_loss) if r.best_epoch else None)
        saving = time.time()
        if improved:
            r.best_score, r.best_loss, r.best_epoch = judged.score, judged.loss, epoch
            if self.dist.main:  # the weights, then what is read without them
                checkpoint.save({"model": host_state(kept)}, self.files.best)
                checkpoint.save({"epoch": epoch, "score": judged.score, "rows": topk.stored(rows),
                                 "ema": kept is not self.model, "precision": self.precision.name, "kit": self.files.stamp},
                                self.files.meta)
        return improved, time.time() - saving + self.last_save_s

    def end_epoch(self, epoch: int, record: dict, clock: StepClock, improved: str, deadline_hit: bool) -> None:
        """The epoch's record in the history and its line in the log (with the monitor's figures), and whether the
        fold stops: the deadline, or early stopping."""
        r, cfg = self.result, self.cfg
        stats = self.monitor.epoch_end(clock.wait_s, clock.step_s, self._batch_size()) if self.monitor else None
        if stats:
            record.update(gpu_util=stats.util, gpu_mem_gb=stats.mem_gb, data_wait=stats.data_wait)
        r.history.append(record)
        r.epochs_run = epoch
        self.log(epoch_line(self.desc, record, r.epochs_planned, cfg.metric, improved, stats,
                             loss_is_metric=self.objective.loss_metric == cfg.metric, explain=not self.explained))
        self.explained = True
        if stats and stats.diagnosis:
            self.log(f"  {stats.diagnosis}")
        if deadline_hit:
            r.stopped = "time budget"
        elif cfg.patience and r.best_epoch and epoch - r.best_epoch >= cfg.patience and epoch >= self.patient_until():
            r.stopped = f"early stop: no better {cfg.metric} (nor a tie at a lower val loss) for {cfg.patience} epochs"

    def score(self, rows: dict) -> float:
        if not len(rows.get("target", [])):
            return float("nan")
        own = getattr(self.objective, "score_rows", None)  # detection's points: the score at their best cut
        if own is not None:
            return own(rows, self.cfg.metric)
        return metrics.score(self.cfg.metric, rows["pred"], rows["target"], rows.get("weight"))

    def patient_until(self) -> int:
        """The first epoch at which early stopping may stop the fold."""
        return math.ceil(PATIENCE_AFTER * self.result.epochs_planned)

    def step_with_recovery(self, batch: Batch) -> torch.Tensor:
        """`train_step`, retried with half the micro-batch for as long as it runs out of memory (the shared
        policy, kit.runtime.recovery.halving), and in eager mode if torch.compile fails."""
        n = batch_size_of(batch)

        def halved(old: int, new: int) -> None:
            self.micro = new  # kept at once: a retry after a compile error keeps the smaller micro-batch
            self.log(f"WARNING: {self.desc}: out of memory at {n} samples per step; now micro-batches of {new}, "
                     "accumulating gradients to keep the batch")

        while True:
            failure = ""
            try:
                return halving(lambda micro: self._step(batch, micro), self.micro or n, halved, self._undo_step)[0]
            except Exception as e:  # noqa: BLE001 - out-of-memory at 1 and compile errors are handled, the rest re-raised
                if is_oom(e):
                    failure = "oom"
                elif isinstance(e, KitError) or not (is_compile_error(e) and _compiled(self.model)):
                    raise  # a KitError from _step: under DDP, stop
                else:
                    failure = describe_error(e)
            # outside the except block, so the failed step's frames and tensors are gone
            self._undo_step()
            free_memory()
            if failure == "oom":  # even a micro-batch of 1
                raise KitError(f"{self.desc}: out of memory even with micro-batches of 1; lower image_size or use a smaller "
                               "model")
            self.model = self.model._orig_mod
            self.log(f"WARNING: {self.desc}: torch.compile failed ({failure}); training in eager mode")

    def _step(self, batch: Batch, micro: int) -> torch.Tensor:
        try:
            loss = train_step(self.model, self.objective, batch, self.optimizer, self.scaler, self.precision,
                              self.cfg.grad_clip, micro)
        except Exception as e:  # noqa: BLE001 - under DDP, out-of-memory and compile errors stop every rank
            # the peers already wait in a collective, and the reducer is mid-step: stop them all, clearly
            if self.dist.world > 1 and is_oom(e):
                raise KitError(f"{self.desc}: out of memory at {batch_size_of(batch)} samples per GPU under DDP; "
                               "set a smaller batch_size") from None
            if self.dist.world > 1 and is_compile_error(e):
                raise KitError(f"{self.desc}: torch.compile failed under DDP ({describe_error(e)}); set compile=False") from None
            raise
        self.stepped = True
        return loss

    def _undo_step(self) -> None:
        """What a failed step leaves: gradients, Adam's half-allocated state, a scaler mid-unscale."""
        self.optimizer.zero_grad(set_to_none=True)
        if not self.stepped:  # the first step may have stopped halfway through allocating Adam's state
            self.optimizer.state.clear()
        self.scaler = fresh_scaler(self.scaler, self.precision.current)  # forget a half-done unscale_

    def deadline(self) -> float:
        """When training steps must stop: in time to validate, then predict with the planned fold models."""
        if self.budget is None:
            return math.inf
        return self.budget.train_deadline(self.budget.current.folds if self.budget.current else self.fold[1])

    def first_plan_at(self) -> int:
        """The step after which the first plan is made: steps 2 to 4 are timed (the first is not usual)."""
        return min(4, max(self.steps_per_epoch - 1, 2))

    def first_plan(self, step_s: float, rows_per_s: float) -> None:
        val_rows = len(self.val) * getattr(self.val, "batch_size", 1) if isinstance(self.val, Sized) else 0
        val_rows *= self.val_passes
        self.budget.estimate_epoch(step_s, self.steps_per_epoch, rows_per_s, val_rows)
        self.planned = True
        self.replan(0, announce=self.budget.current is None)

    def replan(self, epochs_done: int, announce: bool = False) -> None:
        """Rank 0 plans on its clock and every rank follows that plan: ranks that planned on their own could
        differ by an epoch and wait for each other in a collective until it times out."""
        r, b = self.result, self.budget
        p = self.dist.broadcast(b.replan(self.fold[0], self.fold[1], epochs_done, self.cfg.epochs) if self.dist.main else None)
        b.current = p
        r.epochs_planned = max(p.epochs, epochs_done)
        told = b.announced
        # re-announce only real changes: a dropped fold, or epochs moving by more than a fifth
        if announce or told is None or told.folds != p.folds or abs(p.epochs - told.epochs) > 0.2 * told.epochs:
            self.log(f"{b.describe(p, self.fold[1], self.cfg.epochs)}; {best.rule(self.cfg.metric, self.val_rows)}")
            b.announced = p

    def _batch_size(self) -> int:
        return getattr(self.train, "batch_size", 0) or 0


def _compiled(model: nn.Module) -> bool:
    return isinstance(getattr(model, "_orig_mod", None), nn.Module)
