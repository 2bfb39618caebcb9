"""The packaged language model served for real: llama-cpp-python's OpenAI-compatible server on loopback.

`make llm` (a step of `make test`) builds the server in `.venv-llm` and joins the packaged
Qwen2.5-Coder-1.5B-Instruct GGUF (scripts/local-llm.sh). The server runs as its own process, as a
provider would, and litellm talks to it over HTTP. Where tests/llm_loopback.py scripts outages and
exact outputs, this one shows what a small real model does to the pipeline: it rarely writes the
`[C:...]` markers it is asked for, so citations are attached after generation, or the sentence is not
released.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.llm_loopback import closed_port

ROOT = Path(__file__).resolve().parents[1]
LLM_VENV = Path(os.environ.get("RAGLINE_TEST_LLM_VENV", ROOT / ".venv-llm"))
MODEL = LLM_VENV / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
ALIAS = "qwen2.5-coder-1.5b"
START_SECONDS = 180.0


@dataclass(frozen=True)
class GgufServer:
    api_base: str
    model: str  # litellm's id for it
    log: Path


@contextmanager
def gguf_server(log_dir: Path) -> Iterator[GgufServer]:
    """Start the server on a free loopback port; stop it afterwards. Fails (not skips) when not installed."""
    python = LLM_VENV / "bin" / "python"
    if not python.exists() or not MODEL.exists():
        pytest.fail(f"the local language model is not installed ({python}, {MODEL}): run `make llm`")
    port = closed_port()
    log = log_dir / "llama-server.log"
    # The flags `make llm-serve` uses; `exec` there makes this process the server itself.
    command = ["bash", str(ROOT / "scripts" / "local-llm-serve.sh"), str(port)]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "LLM_VENV": str(LLM_VENV)}
        )
    api_base = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(process, f"{api_base}/models", log)
        yield GgufServer(api_base, f"openai/{ALIAS}", log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_serving(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama-cpp server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama-cpp server not serving after {START_SECONDS:.0f} s: {log.read_text()[-2000:]}")
