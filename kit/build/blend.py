"""`make blend`: the blend of runs this machine holds (local run outputs, or kernels' outputs downloaded with
make output), as the inference kernel blends them: weights fitted on the out-of-fold rows every run predicted
(kit.run.blend), applied to the mean of each run's folds' test predictions. Writes the blended
submission.csv, the blend's oof.csv and blend.json into the output folder, and prints the table."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit import config as kit_config
from kit.build import bundle
from kit.data import tables
from kit.errors import KitError
from kit.pipelines.base import submission_frame, validate
from kit.run import blend, blending, kept
from kit.spec import Spec

SUBMISSION = blending.SUBMISSION


@dataclass(frozen=True)
class Done:
    folder: Path  # where submission.csv, oof.csv and blend.json went
    blended: blend.Blended
    rows: int  # the submission's


def blend_outputs(comp: str, runs: list[str], out: str = "", log: Callable[[str], None] = print) -> Done:
    """Blend the runs in the output folders `runs` (each holding one run's checkpoints/<run>/ with its kept
    predictions, or that folder itself) for the config `comp`; write into `out` (default kernels/<name>/blend/)."""
    cfg = kit_config.load(comp)
    if len(runs) < 2:
        raise KitError(f"a blend needs two runs or more, got {len(runs)}: make blend COMP={comp} RUNS=\"out1 out2\" "
                       "(each a run's output folder)")
    loaded = [kept.read(kept.find(Path(r)), r, with_test=True) for r in runs]
    tests = [kept.test_mean(r) for r in loaded]
    for run, (ids, _) in zip(loaded[1:], tests[1:]):
        if not np.array_equal(ids, tests[0][0]):
            raise KitError(f"{run.name} predicts other test rows than {loaded[0].name} ({len(ids)} and {len(tests[0][0])}, "
                           "or in another order); blend runs of one competition's test set")
    done = blend.blend_runs(cfg.spec.metric, loaded, [pred for _, pred in tests], log)
    sample = sample_frame(loaded, cfg.spec)
    ids = tests[0][0]
    if (cfg.spec.id_column in sample.columns and sample[cfg.spec.id_column].astype(str).tolist() != ids.tolist()) \
            or len(sample) != len(ids):
        raise KitError(f"the runs' test predictions are not of the rows of {loaded[0].name}'s {SUBMISSION}; pass the "
                       "output folders those runs wrote")
    target = loaded[0].target
    sub = submission_frame(sample, target, done.test)
    validate(sub, sample, target, cfg.spec.id_column)
    folder = Path(out) if out else bundle.kernels_dir() / cfg.name / "blend"
    blending.save(folder, sub, done, target)
    return Done(folder, done, len(sub))


def sample_frame(loaded: list[kept.RunPredictions], spec: Spec):
    """The rows and columns a submission has (the sample's ids in its order, columns copied through): a run's own
    submission.csv, beside its checkpoints/ folder."""
    for run in loaded:
        for path in (Path(run.name) / SUBMISSION, run.folder.parent.parent / SUBMISSION):
            if path.is_file():
                return tables.read_table(path, spec.id_column or None)
    raise KitError(f"no {SUBMISSION} beside the runs' checkpoints/ ({', '.join(r.name for r in loaded)}); pass the output "
                   "folders the runs wrote (make output downloads a kernel's), which hold the submission's rows and columns")
