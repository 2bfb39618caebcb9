#!/usr/bin/env bash
# Serve the packaged model installed by `make llm` (scripts/local-llm.sh) with llama-cpp-python's
# OpenAI-compatible server on loopback: `make llm-serve` and the tests (tests/llm_gguf.py) both start it
# here, so both run it with the same flags.
#
# --interrupt_requests False: by default the server ends a streaming answer as soon as another request
# arrives ("[DONE]" with no finish_reason), so with two questions at once one of them failed with 503
# generation_unavailable. Without interruption the requests queue: the model answers one at a time.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${1:-8080}
VENV=${LLM_VENV:-.venv-llm}
exec "$VENV/bin/python" -m llama_cpp.server \
    --model "$VENV/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" --model_alias qwen2.5-coder-1.5b \
    --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads 2 --interrupt_requests False
