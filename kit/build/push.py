"""Push a bundle, watch its run, fetch its outputs and read the GPU quota through the official `kaggle` client.

Every failure is one line that says what to do: missing credentials, 401, 403 (competition rules not
accepted), 404, 429 and 5xx (retried with backoff first), an `error` or `invalid*Sources` in a 200 answer,
time-outs. The API key never appears in anything kit prints.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from kit import config as kit_config
from kit import files
from kit.build import bundle, metadata
from kit.errors import KitError
from kit.runtime import budget

T = TypeVar("T")
RETRIES = 4  # after the first try, for 429, 5xx, time-outs and dropped connections
FINAL = ("COMPLETE", "ERROR", "CANCEL_REQUESTED", "CANCEL_ACKNOWLEDGED")


def _seconds(name: str, default: float) -> float:
    # Tests shrink the waits; users have no reason to set these.
    return float(os.environ.get(name, default))


@dataclass(frozen=True)
class Credentials:
    username: str
    secret: str  # the API key or access token: only ever used for redaction here
    source: str


def credentials() -> Credentials:
    """Where the kaggle client will find credentials, checked before it is imported (it exits otherwise)."""
    user, key = os.environ.get("KAGGLE_USERNAME", ""), os.environ.get("KAGGLE_KEY", "")
    if user and key:
        return Credentials(user, key, "KAGGLE_USERNAME/KAGGLE_KEY")
    for path, data in metadata.kaggle_json_files():
        if data.get("username") and data.get("key"):
            return Credentials(str(data["username"]), str(data["key"]), str(path))
    token = os.environ.get("KAGGLE_API_TOKEN", "")
    if token and user:
        return Credentials(user, token, "KAGGLE_API_TOKEN")
    raise KitError(
        "no Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY, or save kaggle.json (kaggle.com > Settings > "
        "API > Create New Token) to ~/.kaggle/ with chmod 600"
    )


class Client:
    """The official client, with retries, time-outs and one-line errors."""

    def __init__(self):
        self.creds = credentials()
        with contextlib.redirect_stdout(sys.stderr):
            from kaggle.api.kaggle_api_extended import KaggleApi

            self.api = KaggleApi()
            try:
                self.api.authenticate()
            except SystemExit:
                raise KitError(f"the kaggle client rejected the credentials from {self.creds.source}") from None

    def redact(self, text: str) -> str:
        return text.replace(self.creds.secret, "***") if self.creds.secret else text

    def call(self, what: str, fn: Callable[[], T], hint_404: str = "", hint_403: str = "") -> T:
        """`fn()` with up to RETRIES retries on 429, 5xx, time-outs and connection failures. The hints replace
        the advice for a 404 (none by default) and a 403 (accept the rules, own the kernel)."""
        import requests

        delay = _seconds("KIT_RETRY_BASE_S", 2.0)
        for attempt in range(RETRIES + 1):
            retry, wait = "", delay
            try:
                with _request_timeout(_seconds("KIT_HTTP_TIMEOUT_S", 60.0)):
                    return fn()
            except requests.HTTPError as e:
                status = e.response.status_code if e.response is not None else 0
                if status == 429 or status >= 500:
                    retry = f"HTTP {status}"
                    wait = max(delay, _retry_after(e.response))
                else:
                    raise KitError(self.redact(_http_error(status, what, e, hint_404, hint_403))) from None
            except (TimeoutError, requests.ConnectionError, requests.Timeout) as e:
                timed_out = isinstance(e, (TimeoutError, requests.Timeout)) or "timed out" in str(e).lower()
                retry = "timed out" if timed_out else "no connection"
            except ValueError as e:  # the client's own checks, and its 401/403 wording for status and output
                if "was denied" in str(e):
                    raise KitError(f"{what}: Kaggle denied access (HTTP 401/403); check the kernel's owner in "
                                   "kernel-metadata.json and your credentials") from None
                raise KitError(self.redact(f"{what}: {' '.join(str(e).split())}")) from None
            if attempt == RETRIES:
                if retry.startswith("HTTP 429"):
                    raise KitError(f"{what}: Kaggle is rate-limiting (HTTP 429) after {RETRIES + 1} tries; wait a few "
                                   "minutes and retry")
                if retry.startswith("HTTP"):
                    raise KitError(f"{what}: Kaggle's server failed ({retry}) {RETRIES + 1} times; retry later")
                raise KitError(f"{what}: could not reach Kaggle ({retry}) after {RETRIES + 1} tries; check the connection "
                               "and retry")
            print(f"{what}: {retry}, retrying in {wait:.0f} s", file=sys.stderr)
            time.sleep(wait)
            delay *= 2
        raise AssertionError("unreachable")


def _http_error(status: int, what: str, error: Exception, hint_404: str = "", hint_403: str = "") -> str:
    detail = ""
    if error.args:
        detail = " ".join(str(error.args[0]).split())[:200]
    if status == 401:
        return f"{what}: Kaggle rejected the credentials (HTTP 401); create a new API token at kaggle.com > Settings > API"
    if status == 403:
        return f"{what}: Kaggle refused (HTTP 403: {detail}); " + (hint_403 or (
            "accept the competition's rules on its Kaggle page (Join Competition), and check you own the kernel"))
    if status == 404:
        return f"{what}: not found on Kaggle (HTTP 404){'; ' + hint_404 if hint_404 else ''}"
    return f"{what}: Kaggle answered HTTP {status} ({detail})"


def _retry_after(response) -> float:
    try:
        return float(response.headers.get("Retry-After", 0))
    except (TypeError, ValueError, AttributeError):
        return 0.0


@contextlib.contextmanager
def _request_timeout(seconds: float) -> Iterator[None]:
    """A default time-out for every request sent meanwhile. The kaggle client sends without one (a dead
    connection would hang forever) and offers no setting, so requests' adapter gets the default here."""
    from requests.adapters import HTTPAdapter

    send = HTTPAdapter.send

    def send_with_timeout(self, request, stream=False, timeout=None, **kwargs):
        return send(self, request, stream=stream, timeout=seconds if timeout is None else timeout, **kwargs)

    HTTPAdapter.send = send_with_timeout
    try:
        yield
    finally:
        HTTPAdapter.send = send


# -- the verbs ------------------------------------------------------------------------------------------------

def push(comp: str, inference: bool = False, force: bool = False) -> dict[str, Any]:
    """Build `comp`'s bundles if stale, push the training kernel (or with `inference` the inference kernel),
    and return what Kaggle answered. A GPU kernel is refused unless `force` when the week's GPU hours left
    are fewer than its planned run."""
    cfg = kit_config.load(comp)
    _check_inference(cfg, inference)
    client = Client()
    built = bundle.build(comp)
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if inference:
        built = built.inference
    kernel = built.metadata["id"]
    if built.metadata.get("enable_gpu") and not force:
        _check_quota(client, kernel, *planned_hours(cfg, inference))
    with contextlib.redirect_stdout(sys.stderr):  # the client prints its own notes
        answer = client.call(f"push {kernel}", lambda: client.api.kernels_push(str(built.folder)))
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
    return {"id": kernel, "url": answer.url, "version": answer.version_number, "rebuilt": built.changed}


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
    delay, last = _seconds("KIT_POLL_S", 10.0), None
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
        delay = min(delay * 1.5, _seconds("KIT_POLL_MAX_S", 60.0))


def output(comp: str, inference: bool = False) -> tuple[Path, list[str]]:
    """Download the latest session's outputs (submission, log, plots) into kernels/<name>/output/ (or the
    inference kernel's folder)."""
    client = Client()
    cfg = kit_config.load(comp)
    kernel = kernel_id(cfg, inference)
    target = bundle_folder(cfg, inference) / "output"
    with files.atomic_dir(target) as tmp:
        with contextlib.redirect_stdout(sys.stderr):
            names, _ = client.call(
                f"output {kernel}",
                lambda: client.api.kernels_output(kernel, str(tmp), force=True, quiet=True),
                f"push it first: make push {make_args(comp, inference)}",
            )
    return target, sorted(Path(n).name for n in names)


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
