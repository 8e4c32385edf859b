"""A folder of files as a new version of a Kaggle Model, through the official client: the model is created
when it does not exist, the variation ("instance") when it does not (its version 1), else a version is
added. Kaggle's answers carry no version number, so the new one is the current one plus one, and is waited
for: a kernel that attaches a version Kaggle has not processed yet fails to start.

A version is mounted in a kernel at /kaggle/input/models/<owner>/<model>/<framework>/<variation>/<version>/
(or without models/<owner>/ in the older layout); kit finds weights, model folders and trained runs in both."""
from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kit.build.client import Client, seconds
from kit.errors import KitError

OWN = "check that you own the model (its handle starts with your Kaggle username) and your credentials"
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")  # the client's rule for model slugs
INSTANCE_METADATA = "model-instance-metadata.json"


@dataclass(frozen=True)
class Handle:
    owner: str
    model: str
    framework: str  # as a kernel mounts it: pytorch, transformers, other, ...
    variation: str = "default"

    @property
    def instance(self) -> str:
        return f"{self.owner}/{self.model}/{self.framework}/{self.variation}"

    def version(self, number: int) -> str:
        """The model_sources entry of a version."""
        return f"{self.instance}/{number}"

    def mount(self, number: int) -> str:
        """Where a kernel finds the version under /kaggle/input."""
        return f"models/{self.version(number)}"


def model_slug(text: str) -> str:
    """A valid model slug from a name (a timm model, a folder, a kernel's slug): lowercase, single hyphens."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:50].strip("-")
    if not SLUG.match(slug):
        raise KitError(f"'{text}' gives no model slug; pass one with --slug (lowercase letters, digits, hyphens)")
    return slug


def publish(client: Client, folder: Path, handle: Handle, title: str, description: str, license_name: str,
            notes: str, private: bool = True) -> int:
    """Upload the files at the top of `folder` as a new version of `handle`; its number."""
    what = f"model {handle.owner}/{handle.model}"
    subfolders = [p.name for p in folder.iterdir() if p.is_dir()]
    if subfolders:
        raise KitError(f"{folder}: a model version is its top-level files, and it holds folders ({', '.join(subfolders)})")
    with contextlib.redirect_stdout(sys.stderr):  # the client prints its progress
        if client.call(what, lambda: client.api.model_get(f"{handle.owner}/{handle.model}"), missing=None, hint_403=OWN) is None:
            _create_model(client, handle, title, description, private)
        current = client.call(f"{what} variation {handle.variation}",
                              lambda: client.api.model_instance_get(handle.instance), missing=None, hint_403=OWN)
        if current is None:
            meta = {"ownerSlug": handle.owner, "modelSlug": handle.model, "instanceSlug": handle.variation,
                    "framework": handle.framework, "licenseName": license_name, "overview": description}
            (folder / INSTANCE_METADATA).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            answer = client.call(f"create {handle.instance}", lambda: client.api.model_instance_create(
                str(folder), quiet=True, dir_mode="skip"))
            number = 1
        else:
            answer = client.call(f"new version of {handle.instance}", lambda: client.api.model_instance_version_create(
                handle.instance, str(folder), notes, quiet=True, dir_mode="skip"))
            number = int(current.version_number or 0) + 1
    _check(client, answer, f"publish {handle.instance}")
    wait_ready(client, handle, number)
    return number


def _create_model(client: Client, handle: Handle, title: str, description: str, private: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="kit-model-") as tmp:
        meta = {"ownerSlug": handle.owner, "slug": handle.model, "title": title[:50], "subtitle": "",
                "isPrivate": private, "description": description}
        (Path(tmp) / "model-metadata.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        answer = client.call(f"create model {handle.owner}/{handle.model}", lambda: client.api.model_create_new(tmp))
    _check(client, answer, f"create model {handle.owner}/{handle.model}")


def _check(client: Client, answer, what: str) -> None:
    error = " ".join(str(getattr(answer, "error", "") or "").split())
    if error or not getattr(answer, "id", 0):
        raise KitError(client.redact(f"{what}: Kaggle refused it: {error or 'no id in its answer'}"))


def wait_ready(client: Client, handle: Handle, number: int) -> None:
    """Poll the variation until version `number` is its current one (Kaggle has processed its files)."""
    deadline = time.monotonic() + seconds("KIT_MODEL_WAIT_S", 900.0)
    delay = seconds("KIT_POLL_S", 10.0)
    while True:
        current = client.call(f"status of {handle.instance}", lambda: client.api.model_instance_get(handle.instance))
        if int(current.version_number or 0) >= number:
            return
        if time.monotonic() > deadline:
            raise KitError(f"{handle.version(number)}: Kaggle is still processing it; attach it once its page shows it")
        time.sleep(delay)
        delay = min(delay * 1.5, seconds("KIT_POLL_MAX_S", 60.0))
