# kit: Kaggle GPU kernels that train fast and always leave a valid submission.csv.
# Every target that needs Python creates .venv on first use.

.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
COMP ?=
# the installer of both environments: uv resolves and installs the same versions as pip (pip freeze is identical),
# in 93 s where pip took 220 s for .venv on these two cores (both from a cold cache, 2026-11-28); pip installs it first
UV := uv==0.13.9
export UV_LINK_MODE := copy
# and, as pip does, the bytecode compiled at install: without it the first tests' kernels compiled torch's modules as
# they imported them (a kernel's start 14 s, not 6), and a time-budget test counts that
export UV_COMPILE_BYTECODE := 1
# make test's processes: each runs whole test files (their module and session fixtures once), two on CI's two cores
TEST_WORKERS ?= 2
# Kaggle's image: its library versions (kaggle-image.txt) on Python 3.12, installed beside 3.11 (pyenv)
KAGGLE_VENV := .venv-kaggle
KAGGLE_PY := $(KAGGLE_VENV)/bin/python
PYTHON_KAGGLE ?= $(shell for p in python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null && { echo $$p; break; }; done)
SHIPPED := $(basename $(notdir $(wildcard kit/competitions/*.toml)))
# make kaggle-smoke on Kaggle's versions: a shipped config for each template and data path whose libraries differ
# there (timm and pillow; transformers; each booster library; smp installed from its wheels; kit's AIFF reader, the
# wave cache and torch.stft for the audio template). digit-recognizer's pixel tables and lmsys' one-hot targets left
# it for CI's time: their tests run them on the dev versions, and their libraries are dog-breed's and the essays'.
# make test runs every shipped config's smoke on the dev versions (the gallery's, the tables', the masks')
KAGGLE_SMOKE = dog-breed planet-understanding-the-amazon-from-space ventilator-lstm ventilator-transformer \
	learning-agency-lab-automated-essay-scoring-2 spaceship-titanic tabular-playground-series-may-2022 \
	nomad2018-predict-transparent-conductors tgs-salt-identification-challenge the-icml-2013-whale-challenge-right-whale-redux
# two epochs each: here the libraries' paths are the point (training, prediction, the inference kernels); what the
# smokes score is make test's, on the dev versions (planet's 8 epochs were 33 of its 50 s)
KAGGLE_SMOKE_EPOCHS = 2
# push/status/output: INFER=1 acts on the inference kernel; FORCE=1 pushes whatever GPU hours are left
INFER_FLAG = $(if $(filter 1 yes true,$(INFER)),--inference,)
FORCE_FLAG = $(if $(filter 1 yes true,$(FORCE)),--force,)
# submit: MESSAGE reaches kit as written (quotes, $) through the environment, never through make's or the shell's parsing
override MESSAGE := $(value MESSAGE)
export MESSAGE

.PHONY: help venv init plan kernel kernels push status output logs publish blend weights submit submissions quota smoke run bench quality gpu-report test lint sync clean kaggle-env kaggle-smoke

help: ## show the targets
	@echo "usage: make <target> [COMP=dog-breed | COMP=path/to/config.toml]"
	@echo
	@grep -E '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'
	@echo
	@echo "shipped configs: $$(ls kit/competitions/*.toml | xargs -n1 basename | sed 's/\.toml$$//' | tr '\n' ' ')"

$(VENV)/.installed: pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(UV)
	$(PY) -m uv pip install --quiet --python $(PY) -c constraints.txt -e ".[dev]"
	@touch $@

venv: $(VENV)/.installed ## create .venv with kit, torch 2.14.1 (CPU is fine) and the dev tools

init: venv ## draft a config from a competition's files, each guess commented  (DATA=folder [METRIC=...] [TEMPLATE=...] [OUT=file.toml])
	@$(PY) -m kit init "$(DATA)" $(if $(METRIC),--metric "$(METRIC)",) $(if $(TEMPLATE),--template "$(TEMPLATE)",) $(if $(OUT),--output "$(OUT)",)

plan: venv ## the resource plan at the competition's real size: RAM, output, scratch, tail  (COMP=... [DATA=folder])
	@$(PY) -m kit plan "$(COMP)" $(if $(DATA),--data "$(DATA)",)

kernel: venv ## build kernels/<name>/ for `kaggle kernels push -p kernels/<name>`  (COMP=...)
	@$(PY) -m kit kernel "$(COMP)"

kernels: venv ## build the bundle of every shipped config
	@$(PY) -m kit kernels

push: venv ## show the resource plan, build if stale, upload its packages, push with a session time-out (COMP=... [INFER=1] [FORCE=1])
	@$(PY) -m kit push "$(COMP)" $(INFER_FLAG) $(FORCE_FLAG)

status: venv ## the latest run's status; WAIT=1 polls until it ends, exit 1 on ERROR  (COMP=... [INFER=1])
	@$(PY) -m kit status "$(COMP)" $(if $(filter 1 yes true,$(WAIT)),--wait,) $(INFER_FLAG)

output: venv ## download the latest run's outputs into kernels/<name>/output/; ALL=1: the checkpoints too  (COMP=... [INFER=1])
	@$(PY) -m kit output "$(COMP)" $(INFER_FLAG) $(if $(filter 1 yes true,$(ALL)),--all,)

logs: venv ## the latest run's log; FOLLOW=1 prints new lines until it ends  (COMP=... [INFER=1])
	@$(PY) -m kit logs "$(COMP)" $(INFER_FLAG) $(if $(filter 1 yes true,$(FOLLOW)),--follow,)

publish: venv ## a finished run's fold checkpoints -> a Kaggle Model version for [inference]  (COMP=... [FROM=folder] [MODEL=owner/slug])
	@$(PY) -m kit publish "$(COMP)" $(if $(FROM),--from "$(FROM)",) $(if $(MODEL),--model "$(MODEL)",)

blend: venv ## blend runs on their out-of-fold predictions: submission.csv, oof.csv, blend.json  (COMP=... RUNS="out1 out2" [OUT=folder])
	@$(PY) -m kit blend "$(COMP)" $(RUNS) $(if $(OUT),--out "$(OUT)",)

weights: venv ## save pretrained weights, publish them as a Kaggle Model, print the config lines  (NAME=... [FILE=...])
	@$(PY) -m kit weights "$(NAME)" $(if $(FILE),--file "$(FILE)",) $(if $(SLUG),--slug "$(SLUG)",)

submit: venv ## submit the kernel (the inference one if any) to its code competition  (COMP=... [MESSAGE=...] [VERSION=N])
	@$(PY) -m kit submit "$(COMP)" $(if $(MESSAGE),-m "$$MESSAGE",) $(if $(VERSION),-v "$(VERSION)",)

submissions: venv ## the latest submissions to the competition: date, status, public score  (COMP=...)
	@$(PY) -m kit submissions "$(COMP)"

quota: venv ## the GPU hours used and left this week, and when they refresh
	@$(PY) -m kit quota

smoke: venv ## run the built notebook end to end on a tiny dataset in Kaggle's layout  (COMP=...)
	@$(PY) -m kit smoke "$(COMP)"

$(KAGGLE_VENV)/.installed: kaggle-image.txt
	@test -n "$(PYTHON_KAGGLE)" || { echo "make kaggle-env needs Python 3.12 (python3.12, or pyenv's); set PYTHON_KAGGLE=..."; exit 1; }
	@test -x $(KAGGLE_PY) || $(PYTHON_KAGGLE) -m venv $(KAGGLE_VENV)
	$(KAGGLE_PY) -m pip install --quiet $(UV)
	$(KAGGLE_PY) -m uv pip install --quiet --python $(KAGGLE_PY) -r kaggle-image.txt
	@touch $@

kaggle-env: $(KAGGLE_VENV)/.installed ## create .venv-kaggle: Kaggle's GPU image's library versions on Python 3.12

kaggle-smoke: venv kaggle-env ## a shipped config per template and library on Kaggle's versions (KAGGLE_SMOKE), and fp16 with two workers, 2 epochs each
	@$(MAKE) --no-print-directory -j $(TEST_WORKERS) --output-sync=target $(addprefix kaggle-smoke/,$(KAGGLE_SMOKE))

# one smoke of kaggle-smoke's (TEST_WORKERS at a time, each log printed whole as it ends), its kernel's torch on one
# thread: two OpenMP threads each spin for a core the other run holds. dog-breed's fp16 DDP run follows its first in
# the same lane: both write .smoke/dog-breed
kaggle-smoke/%:
	@OMP_NUM_THREADS=1 $(PY) -m kit smoke $* --kernel-python $(KAGGLE_PY) -p epochs=$(KAGGLE_SMOKE_EPOCHS)
	@$(if $(filter dog-breed,$*),OMP_NUM_THREADS=1 $(PY) -m kit smoke dog-breed --kernel-python $(KAGGLE_PY) \
		-p epochs=$(KAGGLE_SMOKE_EPOCHS) -p precision=fp16 -p parallel=ddp -p world_size=2,:)

run: venv ## run the built notebook locally on real data  (COMP=... DATA=folder [OUT=output] [P="epochs=2 ..."])
	@$(PY) -m kit run "$(COMP)" --data "$(DATA)" --output "$(or $(OUT),output)" $(foreach p,$(P),-p '$(p)')

bench: venv ## measure kit's data path against the naive loader, side by side (BENCH_OUT=output/bench.json)
	@$(PY) bench/bench.py --out "$(or $(BENCH_OUT),output/bench.json)"

quality: venv ## kit's default recipe against plain training loops, per template: one table (QUALITY_OUT=output/quality.json)
	@$(PY) bench/quality.py --out "$(or $(QUALITY_OUT),output/quality.json)" --jobs $(TEST_WORKERS)

gpu-report: venv ## on a CUDA GPU, under 8 min: the training arms against the ceiling, pytest -m gpu, one table (REPORT_OUT=output; DRY=1: toy sizes on the CPU)
	@$(PY) bench/gpu_report.py --out-dir "$(or $(REPORT_OUT),output)" $(if $(filter 1 yes true,$(DRY)),--device cpu --dry-run,)

# the files in collection order (tests/functional's notebook runs first, tests/unit's many short files last), not
# xdist's default of the most tests first: that ran the long one- to three-test notebook files last, a worker holding
# two of them while the other had nothing left (~1 min apart at the end, in a simulation on the CI's durations)
test: venv ## run the test suite on the CPU, a test file per process  (TEST_WORKERS=2; GPU tests: .venv/bin/pytest -m gpu; every test's seconds: output/junit.xml)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40 --junitxml=output/junit.xml

lint: venv ## ruff, the templates' .py/.ipynb pairs in sync, parameters cells and docs as kit/params.py says, the plans' table
	$(PY) -m ruff check kit tests bench
	$(PY) -m kit.build.pairing
	$(PY) -m kit.build.cells
	$(PY) -m kit.build.plan

sync: venv ## after editing kit/params.py, kit/build/skeleton.py, notebooks/*.py or a [sizes]: rewrite the parameters and step cells, the docs' tables, the .ipynb
	$(PY) -m kit.build.cells --write
	$(PY) -m kit.build.plan --write
	$(VENV)/bin/jupytext --quiet --update --to ipynb notebooks/*.py

clean: ## remove build output, smoke data and caches (keeps .venv)
	rm -rf kernels/*/ .smoke .bench .quality output .pytest_cache .ruff_cache
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +
