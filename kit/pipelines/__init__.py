"""One pipeline per template: how its data is read, split, batched, modelled and turned into a submission
(the contract: kit.pipelines.base.Pipeline; which class serves which template: kit.templates)."""
from __future__ import annotations

from kit import templates
from kit.pipelines.base import Pipeline
from kit.runtime.session import Session


def create_pipeline(session: Session) -> Pipeline:
    """The pipeline of the session's template."""
    return templates.load(templates.get(session.template).pipeline)(session)
