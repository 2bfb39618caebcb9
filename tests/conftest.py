"""Real-service fixtures. With RAGLINE_TEST_POSTGRES_DSN / RAGLINE_TEST_REDIS_URL (CI) the tests talk
to those servers; without them (a laptop with nothing installed) they start the embedded ones.
Either way no test is skipped for want of a server, and the embedded servers always run too."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from tests.corpus import write_corpus
from tests.llm_gguf import GgufServer, gguf_server
from tests.query_graph.harbor import Harbor, harbor_index

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServices]:
    services = EmbeddedServices(tmp_path_factory.mktemp("embedded"))
    yield services
    services.stop()


@pytest.fixture(scope="session", params=["configured", "embedded"])
def backend(request: pytest.FixtureRequest, embedded: EmbeddedServices) -> dict[str, str]:
    """Both kinds of server: the configured ones (CI's, or embedded on a bare laptop) and the embedded ones."""
    if request.param == "configured":
        return {
            "postgres": os.environ.get("RAGLINE_TEST_POSTGRES_DSN") or embedded.postgres_dsn(),
            "redis": os.environ.get("RAGLINE_TEST_REDIS_URL") or embedded.redis_url(),
        }
    return {"postgres": embedded.postgres_dsn(), "redis": embedded.redis_url()}


@pytest.fixture
def schema(backend: dict[str, str]) -> Iterator[str]:
    """A registry schema of this test's own, dropped afterwards: runs never see each other's rows."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(backend["postgres"], autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def settings(tmp_path: Path, corpus: Path, backend: dict[str, str], schema: str) -> Settings:
    return Settings(
        profile="services",
        home=tmp_path / "home",
        source=corpus,
        exclude=["notes/**"],
        postgres_dsn=backend["postgres"],
        redis_url=backend["redis"],
        postgres_schema=schema,
        cache_prefix=f"test-{uuid.uuid4().hex[:8]}",
        token="test-token",
        registry_poll_seconds=0.0,
    )


@pytest.fixture
def stores(settings: Settings) -> Iterator[Stores]:
    opened = open_stores(settings)
    yield opened
    opened.close()


@pytest.fixture
def built(settings: Settings, stores: Stores):  # type: ignore[no-untyped-def]
    """The fixture corpus indexed through the Dagster assets."""
    from assets.build import build_index

    return build_index(settings, stores, BuildRequest.from_settings(settings))


@pytest.fixture(scope="session")
def gguf_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GgufServer]:
    """The packaged language model behind llama-cpp-python's server on loopback, one for the whole run."""
    with gguf_server(tmp_path_factory.mktemp("llm")) as server:
        yield server


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    """The harbor fixture corpus (tests/query_graph/harbor.py), indexed once per test module that asks for it."""
    with harbor_index(tmp_path_factory.mktemp("harbor"), request) as index:
        yield index
