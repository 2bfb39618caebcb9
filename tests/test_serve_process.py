"""`ragline serve` as `make run` starts it: embedded servers, an index built through Dagster, a cited
answer over real HTTP, and Ctrl-C leaving no process behind."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from tests.corpus import write_corpus

RAGLINE = str(Path(sys.executable).parent / "ragline")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def processes_using(path: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(path) in cmdline:
            found.append(f"{proc.info['pid']}: {cmdline[:120]}")
    return found


def test_serve_answers_then_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {
        **os.environ,
        "RAGLINE_HOME": str(home),
        "RAGLINE_SOURCE": str(write_corpus(tmp_path / "docs")),
        "RAGLINE_PORT": str(port),
        "RAGLINE_LOG_JSON": "true",
    }
    env.pop("RAGLINE_TOKEN", None)
    server = subprocess.Popen([RAGLINE, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        token, lines = None, []
        deadline = time.monotonic() + 300
        assert server.stderr is not None
        while token is None and time.monotonic() < deadline:
            line = server.stderr.readline()
            if not line and server.poll() is not None:
                raise AssertionError("serve exited early:\n" + "".join(lines))
            lines.append(line)
            match = re.search(r"access token (\S+)", line)
            token = match.group(1) if match else None
        assert token and token == (home / "token").read_text().strip()
        assert any(f"http://127.0.0.1:{port}" in line for line in lines)
        reply = None
        while time.monotonic() < deadline:
            try:
                reply = httpx.post(
                    f"http://127.0.0.1:{port}/v1/query",
                    json={"question": "How long does harbor keep build logs?"},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=30,
                )
                break
            except httpx.ConnectError:
                time.sleep(0.2)
        assert reply is not None and reply.status_code == 200, reply and reply.text
        assert reply.json()["status"] == "answered" and "14 days" in reply.json()["answer"]
        assert processes_using(home), "embedded PostgreSQL and Redis should be running in the data dir"
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    deadline = time.monotonic() + 20
    while processes_using(home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_using(home) == []
