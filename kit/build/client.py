"""The official `kaggle` client with retries, time-outs and one-line errors, for every verb that talks to Kaggle.

Every failure is one line that says what to do: missing credentials, 401, 403, 404, 429 and 5xx (retried with
backoff first), time-outs and dropped connections, the client's own checks, an upload its storage refused (the
client drops such a file silently and creates the dataset or model without it; here nothing is created). The
API key never appears in anything kit prints.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from kit.build import metadata
from kit.errors import KitError

T = TypeVar("T")
RETRIES = 4  # after the first try, for 429, 5xx, time-outs and dropped connections
MISSING = object()  # call(..., missing=...): what a 404 answers instead of an error


def seconds(name: str, default: float) -> float:
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

    def call(self, what: str, fn: Callable[[], T], hint_404: str = "", hint_403: str = "", missing: object = MISSING) -> T:
        """`fn()` with up to RETRIES retries on 429, 5xx, time-outs and connection failures. The hints replace
        the advice for a 404 (none by default) and a 403 (accept the rules, own the kernel); with `missing`,
        a 404 returns it (a dataset or model that does not exist yet)."""
        import requests

        delay = seconds("KIT_RETRY_BASE_S", 2.0)
        for attempt in range(RETRIES + 1):
            retry, wait = "", delay
            try:
                with _request_timeout(seconds("KIT_HTTP_TIMEOUT_S", 60.0)), self._uploads_checked():
                    return fn()
            except UploadFailed as e:
                raise KitError(f"{what}: Kaggle's storage did not take {e} (the upload failed), so nothing was created; "
                               "retry") from None
            except requests.HTTPError as e:
                status = e.response.status_code if e.response is not None else 0
                if status == 404 and missing is not MISSING:
                    return missing  # type: ignore[return-value]
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
                    raise KitError(f"{what}: Kaggle is rate-limiting (HTTP 429) after {RETRIES + 1} tries; "
                                   "wait a few minutes and retry")
                if retry.startswith("HTTP"):
                    raise KitError(f"{what}: Kaggle's server failed ({retry}) {RETRIES + 1} times; retry later")
                raise KitError(f"{what}: could not reach Kaggle ({retry}) after {RETRIES + 1} tries; "
                               "check the connection and retry")
            print(f"{what}: {retry}, retrying in {wait:.0f} s", file=sys.stderr)
            time.sleep(wait)
            delay *= 2
        raise AssertionError("unreachable")


    @contextlib.contextmanager
    def _uploads_checked(self) -> Iterator[None]:
        """The client answers a file its storage refused with None and goes on to create the dataset or model
        without it; here that file stops the call before anything is created."""
        upload = self.api._upload_file

        def checked(file_name, *args, **kwargs):
            done = upload(file_name, *args, **kwargs)
            if done is None:
                raise UploadFailed(file_name)
            return done

        self.api._upload_file = checked
        try:
            yield
        finally:
            self.api._upload_file = upload


class UploadFailed(Exception):
    """A file the kaggle client could not upload (its name)."""


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
