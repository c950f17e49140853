# The two commands: `make bench` (the main job) and `make test`. Both build .venv themselves:
# `make bench` installs only what the smoke suite needs (the `bench` extra), `make test` the
# `dev` extra (test tools and every optional backend). They share one .venv with one stamp per
# extra, so `make test` after `make bench` upgrades the same .venv instead of starting over.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
BENCH_STAMP := $(VENV)/.installed-bench
DEV_STAMP   := $(VENV)/.installed-dev

.PHONY: bench test lint install install-dev clean

# One BLAS/OpenMP thread per process: trials pin themselves too, this covers imports and tests.
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

# The smoke suite on every core (the process executor; the same numbers as one at a time), its
# tables, and a last line with the trial count, failures, wall time, the store and the tables file.
bench: $(BENCH_STAMP)
	$(PY) -m icml26.cli bench --suite smoke --store results/smoke.db

test: $(DEV_STAMP)
	$(PY) -m pytest -q

# ruff (rules, complexity <= 15, formatting) and mypy on the allowlist in pyproject.toml; CI runs it.
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check icml26 tests perf experiments examples
	$(VENV)/bin/ruff format --check icml26 tests perf experiments examples
	$(VENV)/bin/mypy

install: $(BENCH_STAMP)

install-dev: $(DEV_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip wheel

# CPU torch first: this machine keeps a CPU wheel of torch 2.13.0 on disk; elsewhere take the
# official CPU index. An unpinned `torch` would pull a multi-GB CUDA build.
$(VENV)/.torch: | $(PY)
	$(PIP) install -q torch==2.13.0 || $(PIP) install -q torch --index-url https://download.pytorch.org/whl/cpu
	touch $@

$(BENCH_STAMP): pyproject.toml $(VENV)/.torch
	$(PIP) install -q -e ".[bench]"
	touch $@

# dev includes everything bench has, so it satisfies both stamps.
$(DEV_STAMP): pyproject.toml $(VENV)/.torch
	$(PIP) install -q -e ".[dev]"
	touch $@ $(BENCH_STAMP)

clean:
	rm -rf $(VENV) results .pytest_cache
