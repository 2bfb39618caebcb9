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


def test_serve_with_the_local_model_answers_through_it_then_stops_it_on_ctrl_c(tmp_path: Path) -> None:
    """`RAGLINE_GENERATOR=local make run`: one setting starts the packaged model's server as a child of
    `ragline serve`, the model chooses the answer's first sentence, and Ctrl-C leaves neither it nor the embedded
    servers."""
    home, port = tmp_path / "home", free_port()
    env = {
        **os.environ,
        "RAGLINE_HOME": str(home),
        "RAGLINE_SOURCE": str(write_corpus(tmp_path / "docs")),
        "RAGLINE_PORT": str(port),
        "RAGLINE_GENERATOR": "local",
        # Room for a machine shared with other work; the default (120 s) is for 2 cores of its own.
        "RAGLINE_LLM_DEADLINE_SECONDS": "400",
    }
    for name in ("RAGLINE_TOKEN", "RAGLINE_LLM_MODEL", "RAGLINE_LLM_API_BASE", "RAGLINE_LLM_STRUCTURED_OUTPUT"):
        env.pop(name, None)
    server = subprocess.Popen([RAGLINE, "serve"], env=env, stderr=subprocess.PIPE, text=True)
    model_pid = None
    try:
        token, lines = None, []
        deadline = time.monotonic() + 400
        assert server.stderr is not None
        while token is None and time.monotonic() < deadline:
            line = server.stderr.readline()
            if not line and server.poll() is not None:
                raise AssertionError("serve exited early:\n" + "".join(lines))
            lines.append(line)
            started = re.search(r"local model \S+ serving at (\S+) \(pid (\d+)", line)
            if started:
                model_pid = int(started.group(2))
                assert psutil.pid_exists(model_pid) and httpx.get(f"{started.group(1)}/models").status_code == 200
            match = re.search(r"access token (\S+)", line)
            token = match.group(1) if match else None
        assert token and model_pid, "".join(lines)
        assert psutil.Process(model_pid).ppid() == server.pid, "the model's server is ragline's own child"
        reply = None
        while reply is None and time.monotonic() < deadline + 60:
            try:  # the token is printed just before the web server binds its port
                reply = httpx.post(
                    f"http://127.0.0.1:{port}/v1/query",
                    json={"question": "How long does harbor keep build logs?"},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=420,
                )
            except httpx.ConnectError:
                time.sleep(0.2)
        assert reply is not None and reply.status_code == 200, reply and reply.text
        body = reply.json()
        assert body["generator"] == "litellm" and body["provider"]["model"] == "openai/qwen2.5-coder-1.5b", body
        # The packaged model picks the answer's first sentence among the ranker's best (`choose`, its default here).
        assert body["status"] == "answered" and body["fallback"] is None, body
        assert body["sentence_ranker"] == "llm_choice", body
        assert "14" in body["answer"] and body["citations"], body
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    deadline = time.monotonic() + 20
    while (processes_using(home) or (model_pid and psutil.pid_exists(model_pid))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_using(home) == []
    assert model_pid is not None and not psutil.pid_exists(model_pid), "the model's server outlived ragline"
