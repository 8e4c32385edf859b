"""Push a bundle (and first its packages dataset), watch its run, read its log, fetch its outputs and read the GPU
quota through the official `kaggle` client (kit.build.client: retries and one-line errors).

Beyond the client's: an `error` or `invalid*Sources` in a 200 answer is one line too, and a push passes a
session time-out (the API cannot stop a running kernel, so a hung run must not burn the session's 12 hours).
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kit import config as kit_config
from kit import files
from kit.build import bundle, datasets, metadata
from kit.build.client import Client, seconds
from kit.errors import KitError
from kit.runtime import budget

FINAL = ("COMPLETE", "ERROR", "CANCEL_REQUESTED", "CANCEL_ACKNOWLEDGED")


# -- the verbs ------------------------------------------------------------------------------------------------

MARGIN_S = 30 * 60  # past the time budget: start-up, the packages' install, a slow save of the outputs


def push(comp: str, inference: bool = False, force: bool = False) -> dict[str, Any]:
    """Build `comp`'s bundles if stale, upload its packages dataset if it changed, push the training kernel (or
    with `inference` the inference kernel) with a session time-out of its planned run plus a margin, and
    return what Kaggle answered. A GPU kernel is refused unless `force` when the week's GPU hours left are
    fewer than its planned run."""
    cfg = kit_config.load(comp)
    _check_inference(cfg, inference)
    client = Client()  # missing credentials are one line at once, not after the plan's ~10 s
    if cfg.sizes is not None and not inference:  # what the run will hold and write, before the GPU hours are spent
        from kit.build import plan  # here for start-up time: the plan reads kit.run (torch, scikit-learn, ~5 s), which
        # status, output, logs and submit, importing this module for its kernel ids, do not need
        made = plan.plan(comp, log=lambda line: print(line, file=sys.stderr))
        over = made.over(plan.KAGGLE_T4X2)
        if over and not force:
            raise KitError(f"push {comp}: its resource plan passes a limit ({over[0]}); lower folds, image_size or "
                           "train_rows, or push anyway with FORCE=1 (--force)")
    built = bundle.build(comp)
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if inference:
        built = built.inference
    kernel = built.metadata["id"]
    hours, why = planned_hours(cfg, inference)
    if built.metadata.get("enable_gpu") and not force:
        _check_quota(client, kernel, hours, why)
    packages = None
    if built.packages is not None:  # first: the kernel's run would not find a dataset Kaggle has not processed
        packages = datasets.publish(client, built.packages.folder, f"kit: {', '.join(built.packages.requirements)}")
        print(f"packages dataset {packages.dataset}: {packages.action} ({packages.files} files)", file=sys.stderr)
    timeout = session_timeout(cfg, inference)
    with contextlib.redirect_stdout(sys.stderr):  # the client prints its own notes
        answer = client.call(f"push {kernel}", lambda: client.api.kernels_push(str(built.folder), timeout=str(timeout)))
    if answer.error:
        raise KitError(client.redact(f"push {kernel}: Kaggle refused it: {answer.error}"))
    invalid = {
        "dataset_sources": answer.invalid_dataset_sources,
        "competition_sources": answer.invalid_competition_sources,
        "kernel_sources": answer.invalid_kernel_sources,
        "model_sources": answer.invalid_model_sources,
    }
    bad = "; ".join(f"{k}: {', '.join(v)}" for k, v in invalid.items() if v)
    if bad:
        table = "[inference]" if inference else "[kernel]"
        raise KitError(
            f"push {kernel}: Kaggle did not accept these sources ({bad}); check the names in {table} of "
            f"{built.config_path} (and that you joined the competition)"
        )
    return {"id": kernel, "url": answer.url, "version": answer.version_number, "rebuilt": built.changed,
            "timeout_s": timeout, "packages": packages}


def session_timeout(cfg, inference: bool = False) -> int:
    """Seconds Kaggle lets the session run: the planned run (the time budget, or Kaggle's limit less kit's
    margin) plus MARGIN_S, never above Kaggle's own limit."""
    limit = budget.KAGGLE_RERUN_S if inference else budget.KAGGLE_SESSION_S
    environ = {"KAGGLE_IS_COMPETITION_RERUN": "1"} if inference else {}
    return int(min(budget.total_budget(cfg.checked.time_budget_s, environ) + MARGIN_S, limit))


def _check_inference(cfg, inference: bool) -> None:
    if inference and cfg.inference is None:
        raise KitError(f"{cfg.path} has no [inference] table, so there is no inference kernel: drop INFER=1 "
                       "(--inference), or add an [inference] table to the config")


def bundle_folder(cfg, inference: bool = False) -> Path:
    """kernels/<name>/, or the inference kernel's kernels/<name>-infer/."""
    return bundle.inference_folder(cfg) if inference else bundle.kernels_dir() / cfg.name


def kernel_id(cfg, inference: bool = False) -> str:
    """The kernel's id from the built bundle (or from the config and username when not built yet)."""
    _check_inference(cfg, inference)
    meta_path = bundle_folder(cfg, inference) / "kernel-metadata.json"
    if meta_path.is_file():
        return json.loads(meta_path.read_text())["id"]
    build = metadata.build_inference if inference else metadata.build
    return build(cfg, metadata.username())["id"]


def make_args(comp: str, inference: bool) -> str:
    """The make arguments that name this kernel again, for the hints in messages."""
    return f"COMP={comp}{' INFER=1' if inference else ''}"


def status(comp: str, wait: bool = False, log: Callable[[str], None] = print, inference: bool = False) -> str:
    """The latest session's status; with `wait`, poll with backoff until it is final. ERROR raises."""
    client = Client()
    cfg = kit_config.load(comp)
    kernel = kernel_id(cfg, inference)
    hint = f"push it first: make push {make_args(comp, inference)}"
    delay, last = seconds("KIT_POLL_S", 10.0), None
    while True:
        answer = client.call(f"status {kernel}", lambda: client.api.kernels_status(kernel), hint)
        state = getattr(answer.status, "name", str(answer.status))
        if state != last:
            log(f"{kernel}: {state}")
            last = state
        if state == "ERROR":
            message = client.redact(" ".join((answer.failure_message or "no message").split()))
            raise KitError(f"{kernel} failed on Kaggle: {message}; fetch its log with: make output {make_args(comp, inference)}")
        if not wait or state in FINAL:
            return state
        time.sleep(delay)
        delay = min(delay * 1.5, seconds("KIT_POLL_MAX_S", 60.0))


LEAVE_CHECKPOINTS = r"^(?!.*\.pt$)"  # the client's file pattern is a regular expression searched in each name


def output(comp: str, inference: bool = False, everything: bool = False) -> tuple[Path, list[str]]:
    """Download the latest session's outputs into kernels/<name>/output/ (or the inference kernel's folder):
    what a laptop needs (submission, log, plots, cv.json, the runs' records), and with `everything` the fold
    checkpoints too (what make publish publishes)."""
    client = Client()
    cfg = kit_config.load(comp)
    kernel = kernel_id(cfg, inference)
    target = bundle_folder(cfg, inference) / "output"
    with files.atomic_dir(target) as tmp:
        with contextlib.redirect_stdout(sys.stderr):
            names, _ = client.call(
                f"output {kernel}",
                lambda: client.api.kernels_output(kernel, str(tmp), file_pattern=None if everything else LEAVE_CHECKPOINTS,
                                                  force=True, quiet=True),
                f"push it first: make push {make_args(comp, inference)}",
            )
        got = sorted(Path(n).relative_to(tmp).as_posix() for n in names)
    return target, got


def log_entries(text: str) -> list[str]:
    """The lines of a kernel's log: Kaggle keeps it as a JSON array of {"stream_name", "time", "data"}; a log in
    another shape is its own lines."""
    try:
        entries = json.loads(text) if text.strip() else []
    except ValueError:
        return text.splitlines()
    if not isinstance(entries, list):
        return text.splitlines()
    joined = "".join(str(e.get("data", "")) if isinstance(e, dict) else str(e) for e in entries)
    return joined.splitlines()


def logs(comp: str, follow: bool = False, inference: bool = False, out: Callable[[str], None] = print) -> str:
    """The latest session's log so far; with `follow`, its new lines as they come until the session ends (the
    API has no push: the log is read again every few seconds). Returns the final status with `follow`."""
    client = Client()
    cfg = kit_config.load(comp)
    kernel = kernel_id(cfg, inference)
    hint = f"push it first: make push {make_args(comp, inference)}"
    shown, delay, state = 0, seconds("KIT_POLL_S", 10.0), ""
    while True:
        lines = log_entries(client.call(f"log of {kernel}", lambda: client.api.kernels_logs(kernel), hint))
        for line in lines[shown:]:
            out(line)
        shown = max(shown, len(lines))
        if not follow or state in FINAL:
            return state
        answer = client.call(f"status {kernel}", lambda: client.api.kernels_status(kernel), hint)
        state = getattr(answer.status, "name", str(answer.status))
        if state not in FINAL:  # once final, the log is read one last time at once
            time.sleep(delay)
            delay = min(delay * 1.5, seconds("KIT_POLL_MAX_S", 30.0))


# -- the weekly GPU quota -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Quota:
    used_h: float
    reserved_h: float  # held by sessions running now: not used yet, but not available either
    allowed_h: float
    refresh: datetime | None  # UTC

    @property
    def left_h(self) -> float:
        return max(0.0, self.allowed_h - self.used_h - self.reserved_h)

    def describe(self, name: str = "GPU") -> str:
        held = f" ({self.reserved_h:.1f} h held by running sessions)" if self.reserved_h > 0 else ""
        when = f"; refreshes {self.refresh:%Y-%m-%d %H:%M} UTC" if self.refresh else ""
        return f"{name}: {self.used_h:.1f} h used of {self.allowed_h:.1f} h{held}, {self.left_h:.1f} h left this week{when}"


def _hours(delta) -> float:
    return delta.total_seconds() / 3600 if delta is not None else 0.0


def quota(client: Client | None = None) -> dict[str, Quota]:
    """This week's accelerator quota ("GPU", and "TPU" where Kaggle gives one) from GetAcceleratorQuotaStatistics."""
    client = client or Client()
    answer = client.call("quota", client.api.quota_view, "this Kaggle server does not report the quota",
                         "check the API token (kaggle.com > Settings > API)")
    out = {}
    for name, q in (("GPU", answer.gpu_quota), ("TPU", answer.tpu_quota)):
        if q is not None:
            out[name] = Quota(_hours(q.time_used), _hours(q.time_reserved), _hours(q.total_time_allowed),
                              answer.quota_refresh_time)
    if "GPU" not in out:
        raise KitError("quota: Kaggle's answer has no GPU quota")
    return out


def planned_hours(cfg, inference: bool = False) -> tuple[float, str]:
    """GPU hours one run may take, and why: [params] time_budget_s, else what the notebook plans without it
    (budget.total_budget: Kaggle's 12 h session, or the 9 h of a code competition's rerun for the inference
    kernel, less kit's margin)."""
    p = cfg.checked
    environ = {"KAGGLE_IS_COMPETITION_RERUN": "1"} if inference else {}
    hours = budget.total_budget(p.time_budget_s, environ) / 3600
    if p.time_budget_s > 0:
        return hours, "[params] time_budget_s"
    return hours, "a code competition's 9 h limit" if inference else "Kaggle's 12 h session limit"


def _check_quota(client: Client, kernel: str, planned_h: float, why: str) -> None:
    """Refuse a push that could run out of GPU hours mid-run; a quota that cannot be read does not block it."""
    try:
        gpu = quota(client)["GPU"]
    except KitError as e:
        print(f"warning: GPU quota unknown ({e}); pushing anyway", file=sys.stderr)
        return
    if gpu.left_h < planned_h:
        when = f" (it refreshes {gpu.refresh:%Y-%m-%d %H:%M} UTC)" if gpu.refresh else ""
        raise KitError(
            f"push {kernel}: {gpu.left_h:.1f} GPU hours left this week{when}, fewer than the {planned_h:.1f} h "
            f"its run may take ({why}); set a smaller [params] time_budget_s, or push anyway with FORCE=1 (--force)"
        )
