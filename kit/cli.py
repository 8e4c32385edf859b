"""`kit` / `python -m kit`: parse the arguments, call one library function, turn KitError into one line."""
from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path
from typing import Any


def _value(text: str) -> tuple[str, Any]:
    """`key=value` with a TOML value (2, 0.5, true, "x"); a bare word is a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got '{text}'")
    try:
        return key, tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return key, raw


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a version number (1, 2, ...), got '{text}'")
    return int(text)


def cmd_kernel(args) -> None:
    from kit.build import bundle

    built = bundle.build(args.comp)
    for warning in built.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for b in (built, built.inference):
        if b is not None:
            print(f"built {b.folder}/ ({b.notebook.name} + kernel-metadata.json) for {b.metadata['id']}")
    if built.packages is not None:
        print(f"packages: {built.packages.folder}/ ({len(built.packages.wheels)} wheels), the dataset "
              f"{built.packages.dataset} (make push uploads it first; by hand: kaggle datasets create -p that folder)")
    if built.inference is None:
        print(f"push it with: kaggle kernels push -p {built.folder}")
    else:
        print(f"push the training kernel first (kaggle kernels push -p {built.folder}), and once its run is complete "
              f"the inference kernel (kaggle kernels push -p {built.inference.folder}): that one is submitted")


def cmd_plan(args) -> None:
    from kit.build import plan

    made = plan.plan(args.comp, args.data or "")
    if args.strict and made.over(plan.KAGGLE_T4X2):
        raise SystemExit(1)


def cmd_kernels(args) -> None:
    from kit import config as kit_config
    from kit.build import bundle

    for name in kit_config.shipped():
        built = bundle.build(name)
        for warning in built.warnings:
            print(f"warning: {name}: {warning}", file=sys.stderr)
        for b in (built, built.inference):
            if b is not None:
                print(f"built {b.folder}/ ({b.metadata['id']})")


def cmd_push(args) -> None:
    from kit.build import push

    answer = push.push(args.comp, inference=args.inference, force=args.force)
    version = f" version {answer['version']}" if answer["version"] else ""
    print(f"pushed {answer['id']}{version}: {answer['url']} (Kaggle stops it after {answer['timeout_s'] / 3600:.1f} h)")
    print(f"watch it with: make status {push.make_args(args.comp, args.inference)} WAIT=1")


def cmd_status(args) -> None:
    from kit.build import push

    push.status(args.comp, wait=args.wait, inference=args.inference)


def cmd_output(args) -> None:
    from kit.build import push

    folder, names = push.output(args.comp, inference=args.inference, everything=args.all)
    print(f"downloaded {len(names)} files to {folder}/: {', '.join(names)}")
    if not args.all:
        print(f"the fold checkpoints stayed on Kaggle; make output COMP={args.comp} ALL=1 downloads them too (for make publish)")


def cmd_logs(args) -> None:
    from kit.build import push

    push.logs(args.comp, follow=args.follow, inference=args.inference)


def cmd_publish(args) -> None:
    from kit.build import publish

    done = publish.publish(args.comp, source=args.source or "", model=args.model or "")
    print(f"published {done.version}: {len(done.folds)} folds of run {done.run.name} ({done.size / 2**20:.1f} MB)")
    print("predict with it instead of the training kernel's output, in the config:")
    print(f'[inference]\ntrained_model = "{done.version}"')


def cmd_blend(args) -> None:
    from kit.build import blend

    done = blend.blend_outputs(args.comp, args.runs, out=args.out or "")
    weights = ", ".join(f"{name} {w:.3f}" for name, w in zip(done.blended.names, done.blended.fitted.weights))
    print(f"wrote {done.folder}/submission.csv ({done.rows} rows; the blend of {weights}), oof.csv and blend.json")


def cmd_weights(args) -> None:
    from kit.build import weights

    done = weights.publish(args.name, file=args.file or "", slug=args.slug or "")
    print(f"published {done.version} from {done.saved.folder}/")
    print("attach and use them in the config:")
    print(done.config_lines(), end="")


def cmd_submit(args) -> None:
    from kit.build import submit

    done = submit.submit(args.comp, message=args.message or "", version=args.version)
    print(f"submitted {done.kernel} version {done.version} to {done.competition}: {done.message or 'ok'}")
    if done.submission is not None:
        print(f"submission {done.submission.ref}: {submit.describe(done.submission)}")
    print(f"follow its score with: make submissions COMP={args.comp}")


def cmd_submissions(args) -> None:
    from kit.build import submit

    competition, listed = submit.submissions(args.comp)
    if not listed:
        print(f"no submissions to {competition} yet")
    for s in listed:
        print(submit.describe(s))


def cmd_quota(args) -> None:
    from kit.build import push

    for name, q in push.quota().items():
        print(q.describe(name))


def cmd_smoke(args) -> None:
    from kit import smoke
    from kit.errors import KitError

    started = time.time()
    result = smoke.run(args.comp, overrides=dict(args.param or []), python=args.kernel_python)
    if not result.folds:  # a valid submission, but the smoke is there to show the training works
        raise KitError(f"smoke: no fold trained, and the submission is the training labels' fallback; see "
                       f"{result.submission.parent / 'kit.log'} for why")
    print(f"smoke passed in {time.time() - started:.0f}s: {result.rows} submission rows, out-of-fold "
          f"{result.metric} {result.score:.4f} (predicting {result.baseline_name}: {result.baseline:.4f})")
    print(f"  data       {result.input_dir}")
    print(f"  notebook   {result.executed}")
    print(f"  submission {result.submission}")
    if result.inference:
        print(f"  inference  {result.inference} (the inference notebook's, from the mounted training output: the same to 1e-4)")


def cmd_init(args) -> None:
    from kit.build import init

    text = init.draft(args.data, metric=args.metric or "", template=args.template or "")
    if not args.output:
        print(text, end="")
        return
    path = init.write(text, args.output)
    print(f"wrote {path}; check its guessed lines, then: make kernel COMP={path}")


def cmd_run(args) -> None:
    from kit import config as kit_config
    from kit import files, params, templates
    from kit.build import execute, notebook

    cfg = kit_config.load(args.comp)
    overrides = dict(args.param or [])
    params.check(templates.get(cfg.spec.template).params, {**cfg.params, **overrides}, "-p")
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    built = out / "kernel.ipynb"
    files.write_text(built, notebook.dumps(notebook.build(cfg.spec.template, cfg.parameters(), cfg.kernel.internet)))
    values = {"data_dir": str(Path(args.data).resolve()), "output_dir": str(out), **overrides}
    execute.run(built, out / "executed.ipynb", values, cwd=out)
    print(f"done: {out / 'submission.csv'} (executed notebook: {out / 'executed.ipynb'})")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kit", description="Kaggle GPU kernels that train fast and always submit.")
    sub = p.add_subparsers(dest="command", required=True)
    k = sub.add_parser("kernel", help="build kernels/<name>/ (notebook + kernel-metadata.json)")
    k.add_argument("comp", help="a shipped config name (dog-breed) or a path to a .toml file")
    k.set_defaults(func=cmd_kernel)
    pl = sub.add_parser("plan", help="the resource plan at the competition's real size: RAM, output, scratch, tail")
    pl.add_argument("comp")
    pl.add_argument("--data", help="the competition's data folder, where at hand: its rows instead of [sizes]'")
    pl.add_argument("--strict", action="store_true", help="exit 1 when the plan passes a Kaggle limit")
    pl.set_defaults(func=cmd_plan)
    ks = sub.add_parser("kernels", help="build the bundle of every shipped config")
    ks.set_defaults(func=cmd_kernels)
    infer = "act on the inference kernel (kernels/<name>-infer/) of a config with [inference]"
    pu = sub.add_parser("push", help="build if stale, then push the kernel with the official kaggle client")
    pu.add_argument("comp")
    pu.add_argument("--inference", action="store_true", help=infer)
    pu.add_argument("--force", action="store_true", help="push even when the week's GPU hours left are too few")
    pu.set_defaults(func=cmd_push)
    st = sub.add_parser("status", help="the latest run's status on Kaggle")
    st.add_argument("comp")
    st.add_argument("--wait", action="store_true", help="poll until it completes; exit 1 if it failed")
    st.add_argument("--inference", action="store_true", help=infer)
    st.set_defaults(func=cmd_status)
    ou = sub.add_parser("output", help="download the latest run's outputs into kernels/<name>/output/")
    ou.add_argument("comp")
    ou.add_argument("--inference", action="store_true", help=infer)
    ou.add_argument("--all", action="store_true", help="the fold checkpoints too (they stay on Kaggle by default)")
    ou.set_defaults(func=cmd_output)
    lo = sub.add_parser("logs", help="the latest run's log on Kaggle")
    lo.add_argument("comp")
    lo.add_argument("--follow", action="store_true", help="print new lines as they come, until the run ends")
    lo.add_argument("--inference", action="store_true", help=infer)
    lo.set_defaults(func=cmd_logs)
    pb = sub.add_parser("publish", help="publish a finished run's fold checkpoints as a Kaggle Model version")
    pb.add_argument("comp")
    pb.add_argument("--from", dest="source", help="the run's output folder (default: kernels/<name>/output/)")
    pb.add_argument("--model", help="owner/slug of the model (default: yours, named as the training kernel)")
    pb.set_defaults(func=cmd_publish)
    bl = sub.add_parser("blend", help="blend runs' kept predictions: weights fitted out of fold, a blended submission")
    bl.add_argument("comp")
    bl.add_argument("runs", nargs="+", help="each run's output folder (a local run's, or a kernel's from make output)")
    bl.add_argument("--out", help="where submission.csv, oof.csv and blend.json go (default: kernels/<name>/blend/)")
    bl.set_defaults(func=cmd_blend)
    we = sub.add_parser("weights", help="save pretrained weights and publish them as a Kaggle Model")
    we.add_argument("name", help="a timm model name, a Hugging Face model folder, or a hub id")
    we.add_argument("--file", help="timm: a weights file on this machine instead of the hub's")
    we.add_argument("--slug", help="the model's slug (default: from the name)")
    we.set_defaults(func=cmd_weights)
    sb = sub.add_parser("submit", help="submit the kernel (the inference kernel if any) to its code competition")
    sb.add_argument("comp")
    sb.add_argument("-m", "--message", help="the submission's description (default: kit <kernel> v<N>)")
    sb.add_argument("-v", "--version", type=_positive, help="the kernel version to submit (default: the latest)")
    sb.set_defaults(func=cmd_submit)
    sl = sub.add_parser("submissions", help="the latest submissions to the config's competition, with scores")
    sl.add_argument("comp")
    sl.set_defaults(func=cmd_submissions)
    qu = sub.add_parser("quota", help="the GPU hours used and left this week")
    qu.set_defaults(func=cmd_quota)
    s = sub.add_parser("smoke", help="run the built notebook on a tiny dataset in the competition's Kaggle layout")
    s.add_argument("comp")
    s.add_argument("-p", "--param", action="append", type=_value, metavar="KEY=VALUE", help="override a parameter")
    s.add_argument("--kernel-python", help="run the notebook on this interpreter (e.g. .venv-kaggle/bin/python)")
    s.set_defaults(func=cmd_smoke)
    it = sub.add_parser("init", help="draft a config from a competition's files: each guess commented, and what it cannot tell")
    it.add_argument("data", help="the competition's data folder (sample submission, tables, images, archives)")
    it.add_argument("--metric", help="the competition's metric (log_loss, auc, map@5, ...); guessed where not given")
    it.add_argument("--template", help="cnn, lstm, transformer, text, ...; guessed where not given")
    it.add_argument("--output", help="write the config to this file (never over an existing one) instead of printing it")
    it.set_defaults(func=cmd_init)
    r = sub.add_parser("run", help="run the built notebook locally on a copy of the competition data")
    r.add_argument("comp")
    r.add_argument("--data", required=True, help="the competition's data folder")
    r.add_argument("--output", default="output", help="where checkpoints, logs and submission.csv go")
    r.add_argument("-p", "--param", action="append", type=_value, metavar="KEY=VALUE", help="override a parameter")
    r.set_defaults(func=cmd_run)
    return p


def main(argv: list[str] | None = None) -> int:
    from kit.errors import KitError

    args = parser().parse_args(argv)
    try:
        args.func(args)
    except KitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
