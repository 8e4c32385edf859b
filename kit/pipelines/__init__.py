"""One pipeline per template: how its data is read, split, batched, modelled and turned into a submission
(the contract: kit.pipelines.base.Pipeline; which class serves which template: kit.templates)."""
from __future__ import annotations

from kit import templates
from kit.pipelines.base import Pipeline
from kit.runtime.recovery import settle_imports
from kit.runtime.session import Session


def create_pipeline(session: Session) -> Pipeline:
    """The pipeline of the session's template. Its libraries are imported by now (torch, timm, transformers), and
    their objects, which live as long as the process, leave the collector's reach (recovery.settle_imports)."""
    pipeline = templates.load(templates.get(session.template).pipeline)
    settle_imports()
    return pipeline(session)
