"""One pipeline per template: how its data is read, split, batched, modelled and turned into a submission
(the contract: kit.pipelines.base.Pipeline; which class serves which template: kit.templates)."""
from __future__ import annotations

import functools
import gc

from kit import templates
from kit.pipelines.base import Pipeline
from kit.runtime.session import Session


def create_pipeline(session: Session) -> Pipeline:
    """The pipeline of the session's template. Its libraries are imported by now (torch, timm, transformers), and
    their objects, which live as long as the process, leave the collector's reach (settle_imports)."""
    pipeline = templates.load(templates.get(session.template).pipeline)
    settle_imports()
    return pipeline(session)


@functools.cache
def settle_imports() -> None:
    """Once a process, after the garbage so far is collected: what is alive (the libraries' ~500,000 objects, the
    session) is frozen out of the collector's reach (gc.freeze), so that no full collection in training walks it
    again, forked loader workers do not write to its pages, and the kernel's exit does not sweep it (a kernel that
    had imported torch took 2.9 to 4.3 s to stop, 1.6 s so). Only once: a second pipeline in an interactive session
    must not freeze the first one's data, which a cycle would then keep after it is dropped."""
    gc.collect()
    gc.freeze()
