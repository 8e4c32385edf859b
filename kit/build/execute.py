"""Run a built notebook locally the way Kaggle does: papermill on a real Jupyter kernel, here one that cannot
import kit (so the embedded runtime is what runs), with KitErrors raised inside coming out as one line."""
from __future__ import annotations

import json
import os
import site
import sys
import tempfile
import venv
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kit.errors import KitError

KERNEL_NAME = "kit-free-python3"


@contextmanager
def kit_free_kernel(python: str | None = None) -> Iterator[str]:
    """A kernelspec for an interpreter that sees this environment's packages but not kit.

    The interpreter is a bare venv whose one .pth file lists our site-packages folders. Folders listed in
    a .pth join sys.path without their own .pth files being run, so an editable install of kit (a .pth
    hook) stays invisible while torch, timm and the rest import as usual. `python`: another environment's
    interpreter instead (one with ipykernel and without kit, such as `make kaggle-env`'s)."""
    with tempfile.TemporaryDirectory(prefix="kit-kernel-") as tmp:
        if python is None:
            env_dir = Path(tmp) / "env"
            venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
            py = f"python{sys.version_info.major}.{sys.version_info.minor}"
            site_dir = env_dir / "lib" / py / "site-packages"
            folders = [p for p in site.getsitepackages() + [site.getusersitepackages()] if Path(p).is_dir()]
            (site_dir / "host-packages.pth").write_text("\n".join(folders) + "\n")
            python = str(env_dir / "bin" / "python")
        elif not Path(python).is_file():
            raise KitError(f"kernel python '{python}' not found; build it first (make kaggle-env)")
        else:
            python = str(Path(python).absolute())  # not resolved: a venv's python is a symlink that must stay one
        spec_dir = Path(tmp) / "jupyter" / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        # log level: ipykernel's start-up warnings (plain-TCP transport on loopback) are noise in a smoke log
        argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--IPKernelApp.log_level=ERROR"]
        (spec_dir / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
        jupyter_path = os.pathsep.join(filter(None, [str(Path(tmp) / "jupyter"), os.environ.get("JUPYTER_PATH")]))
        with environ({"JUPYTER_PATH": jupyter_path}):
            yield KERNEL_NAME


@contextmanager
def environ(values: Mapping[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(
    notebook: Path,
    executed: Path,
    parameters: Mapping[str, Any],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    start_timeout: int = 120,
    python: str | None = None,
) -> None:
    """Execute `notebook` into `executed`, streaming its output here; raise KitError if a cell fails.
    `python`: the kernel's interpreter (kit_free_kernel)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    batch_env = {"KIT_BATCH": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    with kit_free_kernel(python) as kernel, environ(batch_env):
        try:
            papermill.execute_notebook(
                str(notebook),
                str(executed),
                parameters=dict(parameters),
                kernel_name=kernel,
                cwd=str(cwd),
                progress_bar=False,
                stdout_file=sys.stdout,
                stderr_file=sys.stderr,
                start_timeout=start_timeout,
            )
        except PapermillExecutionError as e:
            if e.ename == "KitError":
                raise KitError(e.evalue) from None
            first = (e.evalue or "").strip().splitlines()[:1]
            raise KitError(
                f"the notebook failed in cell [{e.exec_count}] with {e.ename}: {first[0] if first else ''} "
                f"(traceback in {executed})"
            ) from None
