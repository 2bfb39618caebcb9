# Two commands do all the set-up: `make run` and `make test`. Both create .venv when it is missing.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.ragline-installed

.PHONY: install run test lint dagster clean

install: $(STAMP)

# torch first and alone: this machine has a local CPU build; letting another requirement pick a
# torch would download a multi-gigabyte CUDA build. requirements.lock holds every resolved version.
$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==26.3
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -c requirements.lock -e '.[dev]'
	$(PY) -m pip check
	@touch $(STAMP)

run: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/ragline serve

# System packages the tests need (Chromium + driver for the web pages, espeak-ng for spoken questions):
# installed once, a no-op when present.
test: install
	bash scripts/system-deps.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	HF_HUB_OFFLINE=1 $(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The Dagster UI on the same storage the CLI and server use (embedded profile).
dagster: install
	DAGSTER_HOME=$(CURDIR) $(VENV)/bin/dagster dev -w workspace.yaml

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
