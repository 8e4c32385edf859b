"""A folder with its dataset-metadata.json as a Kaggle dataset, through the official client: created when it
does not exist, versioned when its files changed, left alone when Kaggle already holds the same files (the
same names and sizes: a wheel's name carries its version, and the same version is the same bytes); then
waited for until Kaggle has processed it, since a kernel pushed before that would not find it mounted."""
from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kit.build.client import Client, seconds
from kit.errors import KitError

SKIPPED = ("dataset-metadata.json", "datapackage.json")  # the client never uploads these


@dataclass(frozen=True)
class Published:
    dataset: str  # owner/slug
    action: str  # "created", "versioned" or "unchanged"
    files: int


def local_files(folder: Path) -> dict[str, int]:
    """What the client uploads from `folder` (its top level, less the metadata): {name: bytes}."""
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file() and p.name not in SKIPPED}


def remote_files(client: Client, dataset: str) -> dict[str, int]:
    """The files of the dataset's current version on Kaggle, every page: {name: bytes}."""
    out: dict[str, int] = {}
    token = None
    while True:
        page = client.call(f"files of {dataset}",
                           lambda token=token: client.api.dataset_list_files(dataset, page_token=token, page_size=200))
        for f in page.dataset_files or []:
            out[f.name] = int(f.total_bytes or 0)
        token = page.next_page_token
        if not token:
            return out


def publish(client: Client, folder: Path, notes: str) -> Published:
    """Create or version the dataset that `folder`'s dataset-metadata.json names, unless it holds these files."""
    dataset = json.loads((folder / "dataset-metadata.json").read_text(encoding="utf-8"))["id"]
    mine = local_files(folder)
    status = client.call(f"dataset {dataset}", lambda: client.api.dataset_status(dataset), missing=None,
                         hint_403="check that you own the dataset (its id starts with your Kaggle username)")
    with contextlib.redirect_stdout(sys.stderr):  # the client prints its progress
        if status is None:
            answer = client.call(f"create dataset {dataset}", lambda: client.api.dataset_create_new(
                str(folder), public=False, quiet=True, dir_mode="skip"))
            action = "created"
        elif remote_files(client, dataset) == mine:
            return Published(dataset, "unchanged", len(mine))
        else:
            answer = client.call(f"new version of dataset {dataset}", lambda: client.api.dataset_create_version(
                str(folder), notes, quiet=True, dir_mode="skip"))
            action = "versioned"
    if str(getattr(answer, "status", "") or "").lower() != "ok":
        error = " ".join(str(getattr(answer, "error", "") or "no reason given").split())
        raise KitError(client.redact(f"{action.removesuffix('d')} dataset {dataset}: Kaggle refused it: {error}"))
    wait_ready(client, dataset)
    return Published(dataset, action, len(mine))


def wait_ready(client: Client, dataset: str) -> None:
    """Poll the dataset's status until Kaggle has processed it; FAILED or too long is one line."""
    deadline = time.monotonic() + seconds("KIT_DATASET_WAIT_S", 900.0)
    delay = seconds("KIT_POLL_S", 10.0)
    while True:
        state = client.call(f"status of dataset {dataset}", lambda: client.api.dataset_status(dataset))
        if state == "ready":
            return
        if state in ("failed", "deleted"):
            raise KitError(f"dataset {dataset}: Kaggle could not process it ({state}); look at it on kaggle.com and push again")
        if time.monotonic() > deadline:
            raise KitError(f"dataset {dataset}: Kaggle is still processing it ({state}); push again in a few minutes")
        time.sleep(delay)
        delay = min(delay * 1.5, seconds("KIT_POLL_MAX_S", 60.0))
