"""The packaged local language model's server as a child process of ragline (`generator=local`).

`ragline serve` with `RAGLINE_GENERATOR=local` starts llama-cpp-python's OpenAI-compatible server on a
loopback port (scripts/local-llm-serve.sh, the flags `make llm-serve` and the tests use), waits until it
lists its model, points the litellm generator at it and stops it when ragline stops. The child never
outlives ragline: it is stopped (SIGTERM, then SIGKILL) on the way out, runs in a session of its own so a
terminal's Ctrl-C reaches ragline first (which stops the web server, then the model), and on Linux is told
by the kernel to end should ragline die without cleaning up (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import structlog

from pipelines.settings import PROJECT_ROOT, Settings

log = structlog.get_logger(__name__)
SERVE_SCRIPT = PROJECT_ROOT / "scripts" / "local-llm-serve.sh"
MODEL_FILE = "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"  # scripts/local-llm.sh puts it there
_PR_SET_PDEATHSIG = 1


class LocalModelUnavailable(RuntimeError):
    """The local model is not installed, or its server did not start."""


@dataclass(frozen=True)
class LocalModelServer:
    process: subprocess.Popen[bytes]
    api_base: str
    log_file: Path

    @property
    def pid(self) -> int:
        return self.process.pid


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (Linux; elsewhere a no-op)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def installed(venv: Path) -> bool:
    return (venv / "bin" / "python").exists() and (venv / MODEL_FILE).exists()


def start(venv: Path, port: int, log_file: Path, start_seconds: float) -> LocalModelServer:
    """Start the server and return once it answers `GET /v1/models`; raises `LocalModelUnavailable`."""
    if not installed(venv):
        raise LocalModelUnavailable(f"the local model is not installed in {venv}: run `make llm`")
    port = port or free_port()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as sink:
        process = subprocess.Popen(
            ["bash", str(SERVE_SCRIPT), str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "LLM_VENV": str(venv)},
            start_new_session=True,
            preexec_fn=_die_with_parent,  # only a prctl call, before exec
        )
    server = LocalModelServer(process, f"http://127.0.0.1:{port}/v1", log_file)
    try:
        _wait_until_serving(server, start_seconds)
    except BaseException:
        stop(server)
        raise
    return server


def _wait_until_serving(server: LocalModelServer, start_seconds: float) -> None:
    deadline = time.monotonic() + start_seconds
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log_file.read_text(errors="replace")[-1500:]
            raise LocalModelUnavailable(f"the local model's server exited with {server.process.returncode}: {tail}")
        try:
            if httpx.get(f"{server.api_base}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise LocalModelUnavailable(f"the local model's server did not answer within {start_seconds:.0f} s")


def stop(server: LocalModelServer, grace_seconds: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace_seconds`; waits for the process, so none is left behind."""
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    log.info("local_model_stopped", pid=server.pid, returncode=server.process.returncode)


@contextmanager
def local_model(settings: Settings) -> Iterator[tuple[Settings, LocalModelServer | None]]:
    """(the settings pointed at a running local model server, the server), which stops when the block
    ends; (the settings as they are, None) when `local_llm` is off."""
    if not settings.local_llm:
        yield settings, None
        return
    server = start(
        settings.local_llm_venv,
        settings.local_llm_port,
        settings.data_dir / "local-llm.log",
        settings.local_llm_start_seconds,
    )
    try:
        yield settings.model_copy(update={"llm_api_base": server.api_base}), server
    finally:
        stop(server)
