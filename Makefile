# The two commands: `make bench` (the main job) and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: bench test install clean

# One BLAS/OpenMP thread per process: trials pin themselves too, this covers imports and tests.
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

bench: $(STAMP)
	$(PY) -m icml26.cli bench --suite smoke --store results/smoke.db

test: $(STAMP)
	$(PY) -m pytest -q

install: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip wheel

# CPU torch first: this machine keeps a CPU wheel of torch 2.13.0 on disk; elsewhere take the
# official CPU index. An unpinned `torch` would pull a multi-GB CUDA build.
$(VENV)/.torch: | $(PY)
	$(PIP) install -q torch==2.13.0 || $(PIP) install -q torch --index-url https://download.pytorch.org/whl/cpu
	touch $@

$(STAMP): pyproject.toml $(VENV)/.torch
	$(PIP) install -q -e ".[dev]"
	touch $@

clean:
	rm -rf $(VENV) results .pytest_cache
