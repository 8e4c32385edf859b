"""Preflight: before training, each optional accelerant is tried once on the GPU the run landed on. What
fails is turned off with one line naming it and the simple path that replaces it, and the run goes on.

In order, on a fresh model and one small batch of the real data: the precision policy's training step with
its scaler (else fp32), channels_last (else the default layout), the side-stream prefetch (else copies on
the default stream), torch.compile when asked (else eager), the GPU monitor's NVML (else torch's memory
counters, else no GPU figures). A few seconds in all; on a CPU only the precision step has anything to try.
The batch-size trials come after (kit.run.batch): there a failure other than memory leaves a fixed batch.
(channels_last is tried in fp32 first, so that its failure is not taken for the precision's.)
Under DDP an accelerant stays on only where it works on every rank, so the ranks run the same way.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from kit.pipelines.base import Pipeline
from kit.runtime import faults
from kit.runtime.collective import Collective
from kit.runtime.monitor import Source
from kit.runtime.precision import Precision
from kit.runtime.recovery import describe_error, free_memory, halving, is_oom
from kit.runtime.session import Session, maybe_compile
from kit.train.step import make_optimizer, train_step

PROBE_BATCH = 8  # rows of the batch each accelerant is tried on


def run(session: Session, pipe: Pipeline, data: Any, probe: Probe, peers: Collective | None = None) -> list[str]:
    """Try each accelerant the session plans to use on the `probe` model; returns the lines of what was turned
    off. An out-of-memory error says nothing about an accelerant: the probe is retried on fewer rows, and at two
    rows the accelerant stays on (the batch-size trials that follow size the batch)."""
    peers = peers or Collective()
    p, plan = session.params, session.setup

    def batches(precision=None, size=PROBE_BATCH):
        # inputs come in the dtype of the precision tried: an fp32 probe fed the session's fp16 images fails
        pool = pipe.trial_rows(data)
        size = max(2, min(size, len(pool)))  # BatchNorm trains on two rows at least
        return pipe.batches(data, np.resize(pool, size * 2), train=True, batch_size=size, seed=p.seed, workers=0,
                            precision=precision)

    checks: list[tuple[str, bool, Callable[[], None], Callable[[], None], str]] = [
        ("channels_last", plan.channels_last,
         lambda: probe.step(batches, Precision("fp32", session.device.type), site="fail.channels_last"),
         lambda: _set(session, channels_last=False), "the default memory layout"),
        (f"{session.precision.name} training step", session.precision.name != "fp32",
         lambda: probe.step(batches, session.precision),
         lambda: _set(session, precision="fp32"), "fp32"),
        ("side-stream prefetch", plan.prefetch, lambda: _prefetch(batches),
         lambda: _set(session, prefetch=False), "copies on the default stream"),
        ("torch.compile", p.compile and plan.compile_ok,
         lambda: probe.step(batches, session.precision, compiled=True),
         lambda: _set(session, compile_ok=False), "eager mode"),
        ("GPU monitor (NVML)", plan.monitor, lambda: _monitor(session),
         lambda: _set(session, monitor=False), "no GPU utilisation figures"),
    ]
    off = []
    for name, wanted, attempt, turn_off, instead in checks:
        if not wanted:
            continue
        failure = ""
        try:
            attempt()
        except Exception as e:  # noqa: BLE001 - whatever breaks an optional accelerant turns it off
            failure = "" if is_oom(e) else describe_error(e)  # out of memory even on one row: inconclusive
        free_memory()
        if peers.any(bool(failure)):
            turn_off()
            probe.discard()  # built with what was just turned off
            line = f"preflight: {name} failed ({failure or 'on another worker'}); off, {instead} instead"
            session.warn(line)
            off.append(line)
    return off


class Probe:
    """The model the preflight and the batch-size trials run on: built once (from its config, not its
    pretrained weights) and shared, built again after a check turns something off that it was built with."""

    def __init__(self, session: Session, pipe: Pipeline, data: Any):
        self.session, self.pipe, self.data, self._model = session, pipe, data, None

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            self._model = self.pipe.model(self.data, pretrained=False, fit_rows=self.pipe.trial_rows(self.data))
        return self._model

    def step(self, batches, precision: Precision, site: str = "", compiled: bool = False) -> None:
        """Training steps on a real batch as training takes them, on fewer rows while they run out of memory."""
        faults.fail(site or ("fail.compile" if compiled else "fail.precision"))
        model = maybe_compile(self.session, self.model) if compiled else self.model
        objective = self.pipe.objective(self.data)

        def attempt(size: int) -> None:
            batch = next(iter(batches(precision, size)))
            optimizer = make_optimizer(model, 1e-6, 0.0)
            float(train_step(model, objective, batch, optimizer, precision.grad_scaler(), precision, 1.0))

        try:
            halving(attempt, PROBE_BATCH, before_retry=lambda: model.zero_grad(set_to_none=True))
        finally:
            if compiled:  # Dynamo would remember this batch's shape and compile the training model for any batch size
                import torch._dynamo

                torch._dynamo.reset()

    def discard(self) -> None:
        self._model = None
        free_memory()


def _prefetch(batches) -> None:
    faults.fail("fail.prefetch")
    for _ in batches():  # two batches: one copied on the side stream while the other is used
        pass


def _monitor(session: Session) -> None:
    source = Source(torch.cuda.current_device() if session.hardware.device == "cuda" else 0)
    if source.nvml is None:
        raise RuntimeError(source.error or "NVML unavailable")
    source.read()


def _set(session: Session, **off) -> None:
    session.setup = dataclasses.replace(session.setup, **off)
