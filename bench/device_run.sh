#!/usr/bin/env bash
# One run of make gpu-report on a lent GPU machine, from the repository root, in under 8 minutes:
#   OUT=/some/folder bash bench/device_run.sh
# The machine has torch, timm, transformers, pandas, numpy, scipy, scikit-learn, pytest, pytest-xdist, tqdm,
# matplotlib, pillow, psutil, safetensors, huggingface-hub, jinja2, pyyaml, requests, rich; what the GPU tests
# need beyond that travels as wheels in .whl/ (carry it), installed into /tmp/site. Only /tmp/site goes on
# PYTHONPATH, not the repository: the notebooks' Jupyter kernels inherit it and must not import kit (they run
# the runtime embedded in the notebook); bench/gpu_report.py and python -m pytest find kit from the repository.
# Every file comes back from $OUT (at most 8): device_run.log (all of this output), env.txt, gpu-report.json,
# gpu-report.md (rewritten after each section: a run cut short keeps what finished), gpu-tests.txt.
#
# The wheels (python 3.12, manylinux x86_64 or pure), made with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform any -d .whl NAME==VERSION ...
# (15 MB; debugpy as its pure-Python wheel): papermill==2.7.0 nbclient==0.11.0 nbformat==5.11.1 jupyter-client==8.10.0 jupyter-core==5.9.1
# traitlets==5.16.1 tornado==6.6.1 pyzmq==27.3.0 fastjsonschema==2.22.3 jsonschema==4.26.0
# jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 entrypoints==0.4.2
# tenacity==9.2.1 click==8.5.1 platformdirs==4.14.8 ipykernel==7.4.0 ipython==9.18.1 ipython-pygments-lexers==1.1.1
# comm==0.2.3 debugpy==1.8.22 jedi==0.20.1 parso==0.8.7 matplotlib-inline==0.2.2 nest-asyncio2==1.7.4
# prompt-toolkit==3.0.53 wcwidth==0.9.4 stack-data==0.6.3 asttokens==3.0.2 executing==2.3.0 pure-eval==0.2.4
# pexpect==4.9.0 ptyprocess==0.7.0 python-slugify==9.2.0 text-unidecode==1.3 segmentation-models-pytorch==0.6.0
# nvidia-ml-py==13.615.71 jupytext==1.19.6 mdit-py-plugins==0.7.0 markdown-it-py==4.3.0 mdurl==0.1.2
# Not carried: xgboost and catboost (their CUDA wheels are hundreds of MB; their GPU tests skip and the report
# says so in a line), lightgbm (no CUDA in its wheel) and kaggle (not on the GPU tests' paths). jupytext is on
# them: kit.smoke builds the notebooks (the first lent run, without it, collected no GPU test).
# A CPU rehearsal: OUT=/tmp/out PY=.venv/bin/python SITE=/tmp/site-try REPORT_ARGS="--device cpu --dry-run" bash ...
set -u
OUT=${OUT:?set OUT to the folder whose files come back}
PY=${PY:-python3}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
exec > >(tee "$OUT/device_run.log") 2>&1
started=$(date +%s)
export PYTHONUNBUFFERED=1 PYTHONPATH=$SITE PIP_DISABLE_PIP_VERSION_CHECK=1 KINETO_LOG_LEVEL=5

echo "== $(date -u '+%F %T UTC') $(hostname), repo $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if ls .whl/*.whl >/dev/null 2>&1; then
  # all at once; if one wheel does not suit this Python, one at a time, so the others still install
  if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl; then
    for w in .whl/*.whl; do
      "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$w" \
        || echo "device_run: could not install $w"
    done
  fi
else
  echo "device_run: no .whl/ here (carry it): the notebook tests will fail to import papermill"
fi
echo "== installed in $(( $(date +%s) - started )) s"
# what the GPU tests import, before they are collected: a missing wheel is one line here, not 0 tests run
"$PY" -c "import kit.smoke, papermill, ipykernel, segmentation_models_pytorch" \
  || echo "device_run: the GPU tests cannot import what they need (above): add its wheel to .whl/"
{
  "$PY" - <<'EOF'
import platform, sys
from importlib import metadata
import torch
print(f"python {platform.python_version()} ({sys.executable}), torch {torch.__version__}, cuda {torch.version.cuda}, "
      f"cudnn {torch.backends.cudnn.version()}, gpu {torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}")
for name in ("timm", "transformers", "numpy", "pandas", "pytest", "pytest-xdist", "papermill", "ipykernel", "jupyter-client",
             "pyzmq", "segmentation-models-pytorch", "nvidia-ml-py", "xgboost", "catboost", "lightgbm"):
    try:
        print(f"{name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"{name} missing")
EOF
  echo "gcc: $(gcc --version 2>/dev/null | head -1 || echo missing)  (torch.compile's inductor needs it)"
  nproc; free -g | head -2
} 2>&1 | tee "$OUT/env.txt"

# the report's own time box leaves the install and the start-up their share of 8 minutes; timeout is the backstop
left=$(( 470 - ($(date +%s) - started) ))
# shellcheck disable=SC2086  # REPORT_ARGS: words
timeout --kill-after=10 "$left" "$PY" bench/gpu_report.py --out-dir "$OUT" --budget-s $(( left - 25 )) ${REPORT_ARGS:-}
echo "== gpu_report exit $? after $(( $(date +%s) - started )) s in all"
ls -la "$OUT"
