"""Faults under load, with real processes: a `ragline serve` process (services profile) answers eight clients
without pause while its Redis is killed and started again, a new index version is activated by another
process, and a build that fails its checks runs. No request fails: the caches fail open while Redis is away,
the swap is seamless (replies name the new version within the registry's poll), and the failed build leaves the
active version serving."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from assets.build import BuildFailed, build_index
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from tests.server.conftest import services_settings
from tests.server.test_builds_dagster_webserver import free_port, ragline_environment

QUESTIONS = [
    "Which port does the harbor dashboard listen on?",
    "How long does harbor keep build logs?",
    "How do I upload to my own registry?",
    "Which Python version does harbor need?",
]


@contextmanager
def redis_server(port: int, folder: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() != b"PONG":
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.05)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@contextmanager
def ragline_serve(settings: Settings, port: int, log: Path) -> Iterator[str]:
    env = {**os.environ, **ragline_environment(settings), "RAGLINE_PORT": str(port), "RAGLINE_HOST": "127.0.0.1"}
    handle = log.open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "ragline", "serve", "--no-build"], env=env, stdout=handle, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "ragline serve never became ready"
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        handle.close()


class Load:
    """Eight client threads asking the questions in turn (repeats are cache hits) until stopped."""

    def __init__(self, url: str, token: str, clients: int = 8) -> None:
        self.url, self.token, self.clients = url, token, clients
        self.outcomes: list[tuple[float, int, str, str]] = []  # (time, status, cache, version)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(clients)]

    def _client(self, n: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.url, timeout=60) as http:
            i = n
            while not self._stop.is_set():
                question = QUESTIONS[i % len(QUESTIONS)]
                i += 1
                try:
                    response = http.post("/v1/query", json={"question": question}, headers=headers)
                    body = response.json() if response.status_code == 200 else {}
                    outcome = (
                        response.status_code,
                        body.get("cache", ""),
                        body.get("index", {}).get("content_version", ""),
                    )
                except httpx.HTTPError as exc:
                    outcome = (0, type(exc).__name__, "")
                with self._lock:
                    self.outcomes.append((time.monotonic(), *outcome))

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def since(self, moment: float) -> list[tuple[float, int, str, str]]:
        with self._lock:
            return [o for o in self.outcomes if o[0] >= moment]


def test_no_request_fails_while_redis_restarts_an_index_swaps_and_a_build_fails(
    tmp_path: Path, embedded: EmbeddedServices
) -> None:
    redis_port = free_port()
    with redis_server(redis_port, tmp_path):
        settings = services_settings(tmp_path, embedded).model_copy(
            update={
                "redis_url": f"redis://127.0.0.1:{redis_port}/0",
                "cache_prefix": f"faults-{uuid.uuid4().hex[:6]}",
                "rate_limit_per_second": 0.0,
                "rate_limit_per_address_per_second": 0.0,
            }
        )
        stores = open_stores(settings)
        first = build_index(settings, stores, BuildRequest.from_settings(settings))
        stores.close()
        corpus = Path(str(settings.source))
        try:
            with ragline_serve(settings, free_port(), tmp_path / "serve.log") as url, Load(url, "test-token") as load:
                time.sleep(3)
                assert load.since(0) and all(o[1] == 200 for o in load.since(0))

                # 1. Redis goes away for three seconds, then comes back (a new, empty one on the same port).
                subprocess.run(["redis-cli", "-p", str(redis_port), "shutdown", "nosave"], capture_output=True)
                away = time.monotonic()
                time.sleep(3)
                with redis_server(redis_port, tmp_path):
                    back = time.monotonic()
                    time.sleep(3)
                    during = load.since(away)
                    assert [o for o in during if o[1] != 200] == [], Counter(o[1] for o in during)
                    assert any(o[2] == "bypass" for o in during if o[0] < back)  # the caches failed open
                    assert any(o[2] == "hit" for o in load.since(back + 1))  # and are used again

                    # 2. Another process activates a new version while the server answers.
                    (corpus / "guide" / "webhooks.md").write_text(
                        "# Webhooks\n\nHarbor calls a webhook after every sync.\n"
                    )
                    stores = open_stores(settings)
                    second = build_index(settings, stores, BuildRequest.from_settings(settings))
                    stores.close()
                    assert second.built and second.version != first.version
                    swapped = time.monotonic()
                    time.sleep(settings.registry_poll_seconds + 4)
                    late = load.since(swapped + settings.registry_poll_seconds + 2)
                    assert late and {o[3] for o in late} == {second.version}

                    # 3. A build that fails its checks (a page in a language the index may not hold).
                    (corpus / "guide" / "extra.md").write_text(
                        "# Weitere Hinweise\n\nHarbor speichert Protokolle vierzehn Tage lang.\n"
                    )
                    stores = open_stores(settings)
                    failing = settings.model_copy(update={"languages": ["de"]})
                    with pytest.raises(BuildFailed):
                        build_index(failing, stores, BuildRequest.from_settings(failing))
                    assert stores.registry.active().version == second.version  # type: ignore[union-attr]
                    stores.close()
                    failed_at = time.monotonic()
                    time.sleep(3)
                    after = load.since(failed_at)
                    assert after and {o[3] for o in after} == {second.version}
                everything = load.since(0)
            assert [o for o in everything if o[1] != 200] == [], Counter(o[1] for o in everything)
            assert len(everything) > 100
        finally:
            shutil.rmtree(tmp_path / "home" / "shards", ignore_errors=True)
            with psycopg.connect(str(settings.postgres_dsn), autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {settings.postgres_schema} CASCADE")
