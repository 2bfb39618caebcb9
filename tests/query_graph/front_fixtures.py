"""One fixture index for the front-of-graph tests (guardrails, caches, topic gate), built once per
module through the Dagster assets, and a factory of query services with per-test settings."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis

from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from query_graph.service import QueryService
from tests.corpus import write_corpus

# Nodes of the answer phase and of the query embedding: none may run for a refusal or a cache hit.
RETRIEVAL_AND_GENERATION = {
    "query_embedding",
    "dense_hits",
    "bm25_hits",
    "feedback_bm25_hits",
    "fused_candidates",
    "reranked_candidates",
    "crag_outcome",
    "draft_answer",
    "validated_answer",
    "reply",
}


@dataclass
class FrontEnv:
    settings: Settings
    stores: Stores
    version: str
    redis_url: str

    def redis_keys(self, prefix: str) -> list[bytes]:
        return list(redis.Redis.from_url(self.redis_url).scan_iter(match=f"{prefix}*"))


@pytest.fixture(scope="module")
def front_env(tmp_path_factory: pytest.TempPathFactory, embedded: EmbeddedServices) -> Iterator[FrontEnv]:
    from assets.build import build_index

    root = tmp_path_factory.mktemp("front")
    dsn = os.environ.get("RAGLINE_TEST_POSTGRES_DSN") or embedded.postgres_dsn()
    redis_url = os.environ.get("RAGLINE_TEST_REDIS_URL") or embedded.redis_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = Settings(
        profile="services",
        home=root / "home",
        source=write_corpus(root / "corpus"),
        exclude=["notes/**"],
        postgres_dsn=dsn,
        redis_url=redis_url,
        postgres_schema=schema,
        cache_prefix=f"test-{uuid.uuid4().hex[:8]}",
        token="test-token",
        registry_poll_seconds=0.0,
    )
    stores = open_stores(settings)
    outcome = build_index(settings, stores, BuildRequest.from_settings(settings))
    yield FrontEnv(settings, stores, outcome.version, redis_url)
    stores.close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


ServiceFactory = Callable[..., QueryService]


@pytest.fixture
def make_service(front_env: FrontEnv) -> Iterator[ServiceFactory]:
    """QueryService(settings + updates), each with a cache prefix of its own unless given one. Qdrant
    Edge allows one open handle per shard and process, so making a service closes the previous one's."""
    made: list[QueryService] = []

    def close_previous() -> None:
        while made:
            made.pop().active()[1].close()

    def make(**updates: Any) -> QueryService:
        close_previous()
        prefix = f"{front_env.settings.cache_prefix}-{uuid.uuid4().hex[:8]}"
        service = QueryService(
            front_env.settings.model_copy(update={"cache_prefix": prefix, **updates}), front_env.stores
        )
        made.append(service)
        return service

    yield make
    close_previous()


def data_dir(front_env: FrontEnv) -> Path:
    return front_env.settings.data_dir
