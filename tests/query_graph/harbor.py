"""One built index of the harbor fixture corpus per test module, and services over it with any settings.

The query-graph tests of the back half (retrieval variants, rerank, CRAG, generation, verification,
streaming) share one index per module: building it through the Dagster assets takes seconds, and
none of these tests changes it (those that break the store work on a copy).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from query_graph.active_index import ActiveIndex
from query_graph.service import QueryService
from tests.corpus import write_corpus


@dataclass
class Harbor:
    settings: Settings
    stores: Stores
    built: Any
    _indexes: ActiveIndex | None = None

    def service(self, **updates: Any) -> QueryService:
        """A service with these settings changed and a cache of its own (no answer leaks between tests).

        All of them share one view of the active index, as one server process does: a Qdrant Edge
        shard can be opened by one reader at a time."""
        settings = self.settings.model_copy(update={"cache_prefix": f"t-{uuid.uuid4().hex[:8]}", **updates})
        service = QueryService(settings, self.stores)
        if self._indexes is None:
            self._indexes = service.indexes
        service.indexes = self._indexes
        return service


@contextmanager
def harbor_index(root: Path, request: pytest.FixtureRequest, pages: dict[str, str] | None = None) -> Iterator[Harbor]:
    """`pages`: another corpus than the harbor fixture's (document id -> Markdown)."""
    from assets.build import build_index

    dsn = os.environ.get("RAGLINE_TEST_POSTGRES_DSN")
    redis = os.environ.get("RAGLINE_TEST_REDIS_URL")
    if dsn is None or redis is None:
        embedded = request.getfixturevalue("embedded")
        dsn, redis = dsn or embedded.postgres_dsn(), redis or embedded.redis_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    settings = Settings(
        profile="services",
        home=root / "home",
        source=write_corpus(root / "corpus", pages),
        exclude=["notes/**"],
        # One chunk per section: these tests name chunks by their section ("ports", "retention"); the
        # fixture pages are so short that heading_packed would make each page a single chunk.
        chunk_strategy="heading",
        postgres_dsn=dsn,
        redis_url=redis,
        postgres_schema=schema,
        token="test-token",
        registry_poll_seconds=0.0,
    )
    stores = open_stores(settings)
    index: Harbor | None = None
    try:
        built = build_index(settings, stores, BuildRequest.from_settings(settings))
        index = Harbor(settings, stores, built)
        yield index
    finally:
        current = index._indexes._current if index is not None and index._indexes is not None else None
        if current is not None:
            current[1].close()
        stores.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def retrieved_pages(reply: dict[str, object]) -> list[str]:
    """The page of each retrieved chunk of a reply, in its order."""
    retrieved = reply["retrieved"]
    assert isinstance(retrieved, list)
    return [r["document_id"] for r in retrieved]
