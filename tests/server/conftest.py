"""One indexed fixture corpus for the whole server suite (built once through the Dagster assets), and
apps over it with whatever settings a test needs. Tokens: the root token (every scope) plus a
query-only and an admin-only token in the registry's PostgreSQL (pipelines/adapters/token_table.py)."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import uvicorn
from fastapi.testclient import TestClient

from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.adapters.token_table import TokenTable
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from server.app import create_app
from tests.corpus import write_corpus

ROOT = {"Authorization": "Bearer test-token"}


@dataclass
class ServerEnv:
    settings: Settings
    stores: Stores
    version: str
    query_token: str
    admin_token: str

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def services_settings(root: Path, embedded: EmbeddedServices) -> Settings:
    """The services profile over the fixture corpus in `root`, with a registry schema of its own."""
    return Settings(
        profile="services",
        home=root / "home",
        source=write_corpus(root / "corpus"),
        exclude=["notes/**"],
        postgres_dsn=os.environ.get("RAGLINE_TEST_POSTGRES_DSN") or embedded.postgres_dsn(),
        redis_url=os.environ.get("RAGLINE_TEST_REDIS_URL") or embedded.redis_url(),
        postgres_schema=f"t_{uuid.uuid4().hex[:12]}",
        cache_prefix=f"test-{uuid.uuid4().hex[:8]}",
        token="test-token",
        registry_poll_seconds=0.0,
    )


@pytest.fixture(scope="session")
def server_env(tmp_path_factory: pytest.TempPathFactory, embedded: EmbeddedServices) -> Iterator[ServerEnv]:
    from assets.build import build_index

    root = tmp_path_factory.mktemp("server")
    settings = services_settings(root, embedded)
    schema, dsn = settings.postgres_schema, settings.postgres_dsn
    assert dsn is not None
    table = TokenTable(dsn, schema)
    query_token = table.create("reader", ["query"], [])[0]
    admin_token = table.create("operator", ["admin"], [])[0]
    table.close()
    stores = open_stores(settings)
    outcome = build_index(settings, stores, BuildRequest.from_settings(settings))
    yield ServerEnv(settings, stores, outcome.version, query_token, admin_token)
    stores.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


AppFactory = Callable[..., AbstractContextManager[TestClient]]


@pytest.fixture(scope="session")
def make_client(server_env: ServerEnv) -> AppFactory:
    """`with make_client(rate_limit_burst=2) as client:` an app over the shared index with those settings."""

    @contextmanager
    def factory(build_launcher: Any = None, **overrides: Any) -> Iterator[TestClient]:
        settings = server_env.settings.model_copy(update=overrides)
        with TestClient(create_app(settings, server_env.stores, build_launcher=build_launcher)) as client:
            yield client

    return factory


@pytest.fixture
def client(make_client: AppFactory) -> Iterator[TestClient]:
    """An app with default settings but no rate limits. One app at a time: an embedded shard admits one
    open handle per process."""
    with make_client(rate_limit_per_second=0.0, rate_limit_per_address_per_second=0.0) as shared:
        yield shared


def fresh_question(text: str) -> str:
    """The same question with a unique tail, so it misses the exact cache."""
    return f"{text} ({uuid.uuid4().hex[:6]})"


@contextmanager
def live_server(settings: Settings, stores: Stores) -> Iterator[str]:
    """The app on a real loopback port (a browser, or a client that hangs up, needs a real socket)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings, stores), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
