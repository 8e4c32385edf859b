"""`make plan`: a config's resource plan (kit.run.footprint) at its competition's real size, from the config's
[sizes] (or from its data, where it is at hand), set beside a Kaggle GPU T4 x2 session's limits; `make push` shows
it and refuses a plan over a limit."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from kit import config as kit_config
from kit import files
from kit.errors import KitError
from kit.run import footprint
from kit.runtime.resources import GB, KAGGLE_T4X2, LIBRARIES_RAM, Plan


def plan(comp: str, data: str = "", log=print) -> Plan:
    """The plan of config `comp` at its real size; its table and verdict go to `log`."""
    cfg = kit_config.load(comp)
    if cfg.sizes is None:
        raise KitError(f"{cfg.path}: no [sizes] table; give the competition's train_rows, test_rows and outputs at its "
                       "real size (make plan reads them), or point make plan at the data (DATA=folder)")
    sizes = footprint.completed(cfg.sizes, cfg.spec)
    if data:
        sizes = from_data(cfg, Path(data), sizes, log)
    made = footprint.plan(cfg.spec.template, sizes, cfg.checked, cfg.spec, KAGGLE_T4X2,
                          headline=footprint.describe(sizes, cfg.name))
    each = LIBRARIES_RAM + made.total("ram", "data")  # a worker's libraries and its copy of the data
    made = footprint.with_workers(made, footprint.workers_on(cfg.kernel.machine_shape, cfg.checked), each)
    log(made.table(KAGGLE_T4X2))
    over = made.over(KAGGLE_T4X2)
    log("\n".join(f"over: {line}" for line in over) if over else f"fits {KAGGLE_T4X2.name}")
    return made


def from_data(cfg: kit_config.Config, folder: Path, sizes, log):
    """The examples the data at hand holds, where kit can count them without decoding it: the training and test
    tables' sequences (the sequence templates), the image folders' files (segmentation), else the tables' rows;
    the rest of [sizes] as the config gives it."""
    spec, found = cfg.spec, {}
    for key, table, images in (("train_rows", spec.train, spec.train_images), ("test_rows", spec.test or spec.sample_submission,
                                                                               spec.test_images)):
        path = folder / table if table else None
        if spec.template == "segmentation" and images and (folder / images).is_dir():
            found[key] = sum(1 for p in (folder / images).rglob("*") if p.is_file())
        elif path is not None and path.is_file() and path.suffix in (".csv", ".tsv"):
            found[key] = examples(path, spec)
    if not found:
        log(f"plan: nothing in {folder} kit counts without decoding the data; the sizes are [sizes]'s")
        return sizes
    log(f"plan: counted in {folder}: " + ", ".join(f"{k} {v:,}" for k, v in found.items()))
    return replace(sizes, **found)


def examples(path: Path, spec) -> int:
    """A table's examples: its sequences (one column read), or its rows (its lines counted, not parsed: a 55 million
    row table is counted in seconds)."""
    if spec.sequence_column:
        return int(pd.read_csv(path, usecols=[spec.sequence_column], sep="\t" if path.suffix == ".tsv" else ",")
                   [spec.sequence_column].nunique())
    lines = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            lines += chunk.count(b"\n")
    return max(lines - 1, 0)  # less the header (a text's own line breaks overcount: [sizes] is exact)


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "resources.md"
TABLE = re.compile(r"(<!-- plans -->\n)(.*?)(<!-- end -->)", re.S)


def shipped_table() -> str:
    """Every shipped config's plan at its real size, a markdown row each: what docs/resources.md shows."""
    rows = ["| config | rows (train / test) | outputs | RAM GB | output GB | scratch GB | writes s | what kit changes to fit |",
            "|---|---|---|---|---|---|---|---|"]
    for name in kit_config.shipped():
        made = plan(name, log=lambda line: None)
        cfg = kit_config.load(name)
        s = footprint.completed(cfg.sizes, cfg.spec)
        changes = "; ".join(dict.fromkeys(n.note for n in made.needs if n.note and any(
            word in n.note for word in ("likeliest", "would not fit", "not kept", "float16"))))
        over = made.over(KAGGLE_T4X2)
        rows.append(f"| `{name}` | {s.train_rows:,} / {s.test_rows:,} | {s.outputs:,} | {made.ram / GB:.1f} | "
                    f"{made.output / GB:.2f} | {made.scratch / GB:.1f} | {made.tail_s:.0f} | "
                    f"{'**over: ' + over[0] + '**; ' if over else ''}{changes} |")
    return "\n".join(rows) + "\n"


def docs_differ(write: bool = False) -> list[str]:
    """Where docs/resources.md's table differs from the shipped configs' plans (rewritten with `write`)."""
    page = DOCS_PAGE.read_text(encoding="utf-8")
    m = TABLE.search(page)
    if m is None:
        return [f"{DOCS_PAGE}: no <!-- plans --> ... <!-- end --> block"]
    want = shipped_table()
    if m.group(2) == want:
        return []
    if write:
        files.write_text(DOCS_PAGE, page[: m.start(2)] + want + page[m.end(2):])
        return []
    return [f"{DOCS_PAGE}: the plans' table differs from the shipped configs' (make sync rewrites it)"]


def main(argv: list[str] | None = None) -> int:
    problems = docs_differ(write="--write" in (argv if argv is not None else sys.argv[1:]))
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
