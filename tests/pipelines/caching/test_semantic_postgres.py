"""The semantic cache in PostgreSQL with pgvector (the embedded PostgreSQL ships the extension): what one process
writes another finds, namespaces and lexical signatures keep answers apart, and a PostgreSQL without pgvector
or out of reach is a bypass, never an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from assets.build import build_index
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.caching.semantic import SemanticCacheUnavailable, lexical_signature
from pipelines.caching.semantic_postgres import PostgresSemanticCache
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from query_graph.service import QueryService

RAGLINE = str(Path(sys.executable).parent / "ragline")


@pytest.fixture
def pg_schema(embedded: EmbeddedServices) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(embedded.postgres_dsn(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def unit(seed: int, dimension: int = 8) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=dimension).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_an_entry_one_handle_writes_another_finds(embedded: EmbeddedServices, pg_schema: str) -> None:
    writer = PostgresSemanticCache(embedded.postgres_dsn(), pg_schema, 8)
    reader = PostgresSemanticCache(embedded.postgres_dsn(), pg_schema, 8)  # another process's pool
    try:
        question = unit(1)
        signature = lexical_signature("How long does harbor keep build logs?")
        writer.add(question, "ns-a", signature, "answer-key-1")
        near = question + 0.05 * unit(2)
        match = reader.nearest(near / np.linalg.norm(near), "ns-a", signature, 0.9)
        assert match is not None and match.exact_key == "answer-key-1" and match.similarity > 0.99
        assert reader.nearest(question, "ns-b", signature, 0.5) is None  # another namespace: another caller set
        assert reader.nearest(question, "ns-a", signature + "x", 0.5) is None  # another lexical signature
        assert reader.nearest(unit(3), "ns-a", signature, 0.9) is None  # not close enough
        writer.add(question, "ns-a", signature, "answer-key-1")  # the same entry again: replaced, not doubled
        assert reader.count() == 1
        reader.forget(match.point_id)
        assert writer.nearest(question, "ns-a", signature, 0.5) is None and writer.count() == 0
    finally:
        writer.close()
        reader.close()


def test_a_postgresql_without_pgvector_or_out_of_reach_is_unavailable() -> None:
    dsn = os.environ.get("RAGLINE_TEST_POSTGRES_DSN")
    targets = ["postgresql://postgres@127.0.0.1:1/none"]
    if dsn:
        with psycopg.connect(dsn) as conn:
            has_vector = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if has_vector is None:
            targets.append(dsn)  # CI's PostgreSQL has no pgvector: the cache must say so, not fail the query
    for target in targets:
        cache = PostgresSemanticCache(target, f"t_{uuid.uuid4().hex[:12]}", 8)
        with pytest.raises(SemanticCacheUnavailable):
            cache.nearest(unit(1), "ns", "sig", 0.9)
        with pytest.raises(SemanticCacheUnavailable):
            cache.add(unit(1), "ns", "sig", "key")
        cache.close()


def test_a_second_process_hits_the_first_processs_entry(
    embedded: EmbeddedServices, pg_schema: str, tmp_path: Path, corpus: Path
) -> None:
    """This process answers a question; `ragline query`, another process on the same stores, asks a rewording
    and is answered from the shared semantic cache."""
    settings = Settings(
        profile="services",
        home=tmp_path / "home",
        source=corpus,
        exclude=["notes/**"],
        postgres_dsn=embedded.postgres_dsn(),
        redis_url=embedded.redis_url(),
        postgres_schema=pg_schema,
        cache_prefix=f"test-{uuid.uuid4().hex[:8]}",
        token="test-token",
        registry_poll_seconds=0.0,
        semantic_cache_store="postgres",
        semantic_cache_threshold=0.85,
    )
    stores = open_stores(settings)
    try:
        build_index(settings, stores, BuildRequest.from_settings(settings))
        service = QueryService(settings, stores)
        first = service.answer("How long does harbor keep build logs?")
        assert first["status"] == "answered" and first["cache_detail"]["semantic"] == "miss"
        service.active()[1].close()  # a Qdrant Edge shard admits one process at a time: the other one reads it now
    finally:
        stores.close()
    env = {
        **os.environ,
        "RAGLINE_PROFILE": "services",
        "RAGLINE_HOME": str(settings.home),
        "RAGLINE_SOURCE": str(corpus),
        "RAGLINE_POSTGRES_DSN": str(settings.postgres_dsn),
        "RAGLINE_REDIS_URL": str(settings.redis_url),
        "RAGLINE_POSTGRES_SCHEMA": pg_schema,
        "RAGLINE_CACHE_PREFIX": settings.cache_prefix,
        "RAGLINE_SEMANTIC_CACHE_STORE": "postgres",
        "RAGLINE_SEMANTIC_CACHE_THRESHOLD": "0.85",
    }
    done = subprocess.run(
        [RAGLINE, "query", "--json", "Harbor: how long does it keep the build logs?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["cache"] == "semantic_hit", reply["cache_detail"]
    assert reply["answer"] == first["answer"]
