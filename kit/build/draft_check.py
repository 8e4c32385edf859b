"""kit init's last look at a draft before it is shown: the kernel's own data step, run on the draft, so that a
draft which would stop at the kernel's data step is never offered as if it would train; one line says what
the kernel would say instead.

The tabular template's checks run on the first rows of the tables (a tabular competition's tables may be
gigabytes): a test table, the target, features both tables hold. Every other template's pipeline runs its own
`check_data` (kit.pipelines.base), the reading and checking its `load` does in the notebook's data step: the
sample submission, the training labels and the target, the fold keys, each image file found (pixel columns
that make a square), the texts' columns in both tables, the sequences built, the masks matched to their
images; nothing is decoded or tokenized, and no model is read. Archived folders unpack where a run of the
draft would unpack them (kit's cache folder, KIT_CACHE_DIR)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from kit import templates
from kit.build.survey import HEAD, Survey
from kit.errors import KitError
from kit.pipelines import tabular_checks
from kit.runtime.hardware import Hardware, setup
from kit.runtime.session import Session
from kit.spec import Spec


@dataclass
class _Quiet(Session):
    """A session that keeps the data step's log to itself: kit init prints the draft alone."""

    def log(self, message: str) -> None:
        pass


def check(spec: Spec, survey: Survey) -> None:
    """A KitError, one line, where the kernel's data step would refuse the draft."""
    head = ""
    try:
        if spec.template == "tabular":
            head = f" (run on the tables' first {HEAD:,} rows)"
            tabular_checks.require_test(spec)
            names = (spec.train, spec.test, spec.sample_submission)
            train, test, sample = (survey.typed(n) for n in names)
            tabular_checks.checked(spec, train, test, sample, tuple(Path(n) for n in names), lambda line: None)
        else:
            _pipeline_check(spec, survey.data_dir)
    except Exception as e:  # noqa: BLE001  any refusal, foreseen (KitError) or not, is the line to show
        why = str(e) if isinstance(e, KitError) else f"{type(e).__name__}: {e}"
        why = " ".join(why.split())  # one line
        raise KitError(f"{survey.data_dir}: kit init's draft (template {spec.template}) would stop at the kernel's data "
                       f"checks{head}: {why}") from None


def _pipeline_check(spec: Spec, data_dir: Path) -> None:
    """The template's pipeline reads and checks the files as the notebook's data step does (check_data)."""
    record = templates.get(spec.template)
    hw = Hardware("cpu", cpu_count=1, ram_gb=8)
    with tempfile.TemporaryDirectory(prefix="kit-init-check-") as out:
        session = _Quiet(record.name, record.params(), spec, hw, setup(hw), Path(data_dir), Path(out))
        templates.load(record.pipeline)(session).check_data()
