"""Offline means offline: with the internet off, the Hugging Face hub is never asked for weights.

Asked without a network, huggingface_hub retries for most of a minute before timm gives up; on Kaggle's GPU
clock that is time lost for nothing. A kernel built with the internet off sets HF_HUB_OFFLINE in its runtime
cell, before anything imports the hub; a local run whose machine cannot reach the hub (or its proxy) within
a few seconds goes offline too. Weights then come from a local file (`weights_path`) or the local caches.
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import urllib.parse
import urllib.request

HUB = ("huggingface.co", 443)
PROBE_S = 3.0  # a reachable hub answers a TCP connect in well under this


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def go_offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # imported already (an interactive kernel run before): it read the variable then
        constants.HF_HUB_OFFLINE = True


def reachable(timeout_s: float = PROBE_S) -> bool:
    """Whether a TCP connection to the hub, or to the HTTPS proxy that would carry it, opens in time (DNS
    included: a resolver without a network can take longer than the connect)."""
    proxy = urllib.request.getproxies().get("https") or urllib.request.getproxies().get("all")
    if proxy:
        url = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        address = (url.hostname or "", url.port or 80)
    else:
        address = HUB
    answer: list[bool] = []

    def probe():
        try:
            socket.create_connection(address, timeout=timeout_s).close()
            answer.append(True)
        except OSError:
            answer.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(answer and answer[0])


def settle(wants_hub: bool, weights_file: bool) -> str:
    """Go offline where the hub must not or cannot be asked; a line to log when that was decided here."""
    if weights_file:  # weights come from a local file: asking the hub would only cost time
        go_offline()
        return ""
    if offline():
        go_offline()  # the variable may have been set after the hub was imported
        return ""
    if wants_hub and not reachable():
        go_offline()
        return f"no network: {HUB[0]} cannot be reached, so nothing is downloaded (attach weights and set weights_path)"
    return ""


def fetchable(model_name: str) -> bool:
    """Whether timm could load `model_name`'s pretrained weights without a network request going out: always
    online; offline, from the hub's local cache (timm asks it, and it answers at once) or torch.hub's file."""
    if not offline():
        return True
    import timm
    import torch

    cfg = timm.models.get_pretrained_cfg(model_name)
    if cfg is None:
        return False
    if cfg.hf_hub_id:
        return True  # huggingface_hub offline: a local cache or an immediate error, never a request
    if cfg.url:  # torch.hub downloads whatever its cache lacks, offline or not
        return os.path.exists(os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(cfg.url)))
    return False
