"""Submit a kernel version to a code competition and list the competition's submissions, through the official
`kaggle` client (`kaggle competitions submit -k <user>/<slug> -v <N> -f submission.csv -m ...`).

The kernel submitted is the inference kernel where the config has an [inference] table, else the training
kernel. Errors are push's: one line each, retried first for 429 and 5xx.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass

from kit import config as kit_config
from kit.build import push
from kit.build.client import Client
from kit.errors import KitError

FILE_NAME = "submission.csv"  # what every kit notebook writes; Kaggle scores this output of the version
LIST_SIZE = 10  # the latest submissions shown by `make submissions`


@dataclass(frozen=True)
class Submitted:
    kernel: str
    version: int
    competition: str
    message: str  # Kaggle's answer, e.g. "Successfully submitted to ..."
    submission: object | None  # the client's ApiSubmission as ListSubmissions gives it; None if not found


def submit(comp: str, message: str = "", version: int | None = None) -> Submitted:
    """Submit `comp`'s kernel (`version`, default its latest, which must have completed) and look the
    submission up."""
    client = Client()
    cfg = kit_config.load(comp)
    inference = cfg.inference is not None
    kernel = push.kernel_id(cfg, inference)
    if version is None:
        version = latest_version(client, kernel, push.make_args(comp, inference))
    competition = cfg.spec.slug
    what = f"submit {kernel} v{version} to {competition}"
    hint_404 = (f"check that {kernel} version {version} exists (push it first: make push "
                f"{push.make_args(comp, inference)}) and that the competition '{competition}' ([competition] slug "
                f"in {cfg.path}) is a code competition still open")
    with contextlib.redirect_stdout(sys.stderr):  # the client prints its own notes
        answer = client.call(what, lambda: client.api.competition_submit_code(
            FILE_NAME, message or f"kit {kernel} v{version}", competition, kernel, version, quiet=True), hint_404)
    if not answer.ref and not (answer.message or "").lower().startswith("success"):
        # a 200 answer that created nothing: Kaggle's reason is in the message
        reason = " ".join((answer.message or "no reason given").split())
        raise KitError(client.redact(f"{what}: Kaggle refused it: {reason}"))
    return Submitted(kernel, version, competition, answer.message or "", _find(client, competition, answer.ref))


def latest_version(client: Client, kernel: str, make_args: str) -> int:
    """The kernel's current version number, from GetKernel (what `kaggle kernels pull` asks), once its run is
    COMPLETE: Kaggle scores a version's output, so a running or failed version cannot be submitted."""
    from kagglesdk.kernels.types.kernels_api_service import ApiGetKernelRequest

    owner, slug = kernel.split("/")
    request = ApiGetKernelRequest()
    request.user_name, request.kernel_slug = owner, slug

    def get():
        with client.api.build_kaggle_client() as kaggle:
            return kaggle.kernels.kernels_api_client.get_kernel(request)

    hint = f"push it first: make push {make_args}"
    answer = client.call(f"latest version of {kernel}", get, hint)
    number = answer.metadata.current_version_number if answer.metadata else 0
    if not number:
        raise KitError(f"Kaggle did not say which version of {kernel} is the latest; pass VERSION=N (-v N), the "
                       "number `make push` printed or the one on the kernel's Versions list")
    state = client.call(f"status {kernel}", lambda: client.api.kernels_status(kernel), hint).status
    state = getattr(state, "name", str(state))
    if state != "COMPLETE":
        raise KitError(f"{kernel} version {number} is {state} on Kaggle; submit it once it is COMPLETE (make status "
                       f"{make_args} WAIT=1), or an earlier version with VERSION=N")
    return number


def _find(client: Client, competition: str, ref: int):
    """The new submission in the competition's list (Kaggle has no status in the submit answer). The
    submission exists by now, so a failure here is a warning, not an error."""
    try:
        listed = submissions_of(client, competition, size=5)
    except KitError as e:
        print(f"warning: submitted, but its status could not be read ({e})", file=sys.stderr)
        return None
    if not ref:  # an answer without the new submission's ref: the newest one is it
        return listed[0] if listed else None
    return next((s for s in listed if s.ref == ref), None)


def submissions_of(client: Client, competition: str, size: int = LIST_SIZE, where: str = "") -> list:
    hint = f"no competition '{competition}' on Kaggle: check [competition] slug{' in ' + where if where else ''}"
    with contextlib.redirect_stdout(sys.stderr):
        listed = client.call(f"submissions to {competition}",
                             lambda: client.api.competition_submissions(competition, page_size=size), hint)
    return [s for s in listed or [] if s is not None][:size]


def submissions(comp: str) -> tuple[str, list]:
    """The competition's slug and its latest submissions, newest first."""
    client = Client()
    cfg = kit_config.load(comp)
    return cfg.spec.slug, submissions_of(client, cfg.spec.slug, where=str(cfg.path))


def describe(s) -> str:
    """One submission as a line: date, status, public score, description (and Kaggle's error, if any)."""
    date = f"{s.date:%Y-%m-%d %H:%M}" if s.date else "-"
    state = getattr(s.status, "name", str(s.status))
    error = f"  ({' '.join(s.error_description.split())})" if s.error_description else ""
    return f"{date}  {state:<8}  {s.public_score or '-':>10}  {s.description or ''}{error}"
