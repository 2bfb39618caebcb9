"""The index in PostgreSQL with pgvector (`RAGLINE_VECTOR_STORE=postgres`), on the embedded PostgreSQL (CI's has no
pgvector): the same ranking and scores as a Qdrant Edge shard of the same vectors, filters and caller views inside
the query, a second process reading the index the first holds open, and a store that fails loudly."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from assets.build import build_index
from pipelines.access import Access
from pipelines.adapters import pgvector_index
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.adapters.qdrant_edge import EdgeShardIndex, EdgeShardWriter
from pipelines.documents import Chunk, chunk_key
from pipelines.ingestion.build import BuildRequest
from pipelines.ports import StoreUnavailable
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from pipelines.text import analysis
from query_graph.service import QueryService

WORDS = [
    "harbor",
    "port",
    "sync",
    "build",
    "log",
    "retention",
    "worker",
    "cache",
    "token",
    "dashboard",
    "queue",
    "shard",
    "index",
    "mirror",
]
DIMENSION = 16


@pytest.fixture
def pg_schema(embedded: EmbeddedServices) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(embedded.postgres_dsn(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def synthetic(count: int, seed: int = 7) -> tuple[list[Chunk], np.ndarray, list[analysis.SparseVector]]:
    """`count` chunks of random words over two strategies, two languages and three access groups."""
    rng = np.random.default_rng(seed)
    chunks, terms = [], []
    for i in range(count):
        words = list(rng.choice(WORDS, size=int(rng.integers(3, 12))))
        terms.append(words)
        chunks.append(
            Chunk(
                chunk_id=f"doc{i % 9}.md#{i}",
                document_id=f"doc{i % 9}.md",
                title=f"Page {i % 9}",
                heading_path=[],
                anchor="",
                source_uri=f"file:///doc{i % 9}.md",
                strategy=("heading", "fixed")[i % 2],
                language=("en", "de")[(i // 2) % 2],
                position=i,
                text=" ".join(words),
                access=[["public"], ["staff"], ["staff", "ops"]][i % 3],
            )
        )
    dense = rng.normal(size=(count, DIMENSION)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    average = sum(len(t) for t in terms) / count
    return chunks, dense, [analysis.document_vector(t, average) for t in terms]


def both_stores(tmp_path: Path, dsn: str, schema: str, count: int = 240) -> tuple[EdgeShardIndex, pgvector_index.PgVectorIndex, pgvector_index.PostgresPool]:  # fmt: skip
    chunks, dense, sparse = synthetic(count)
    edge = EdgeShardWriter(tmp_path / "shard", DIMENSION)
    pool = pgvector_index.shared_pool(dsn, schema)
    location = pgvector_index.location_of("v-synthetic")
    writer = pgvector_index.PgVectorIndexWriter(pool, schema, location, DIMENSION)
    for start in range(0, count, 100):  # in batches, as a build writes
        part = slice(start, start + 100)
        edge.upsert(chunks[part], dense[part], sparse[part])
        writer.upsert(chunks[part], dense[part], sparse[part])
    edge.close()
    writer.close()
    return EdgeShardIndex(tmp_path / "shard"), pgvector_index.PgVectorIndex(pool, schema, location), pool


def assert_same(edge: list, postgres: list, tolerance: float) -> None:  # type: ignore[type-arg]
    """The same scores place by place, and the same chunks: above the last place's score exactly, and in the last
    place's score band as many (chunks tied at the cut-off may be any of the tied ones, in either store)."""
    assert len(edge) == len(postgres) > 0
    for a, b in zip(edge, postgres, strict=True):
        assert abs(a.score - b.score) <= tolerance * max(1.0, abs(a.score))
    cut = edge[-1].score + tolerance * max(1.0, abs(edge[-1].score))
    above = [({(round(x.score, 3), x.key) for x in ranked if x.score > cut}) for ranked in (edge, postgres)]
    assert above[0] == above[1]


def test_the_same_ranking_and_scores_as_a_qdrant_edge_shard(
    tmp_path: Path, embedded: EmbeddedServices, pg_schema: str
) -> None:
    edge, postgres, pool = both_stores(tmp_path, embedded.postgres_dsn(), pg_schema)
    try:
        rng = np.random.default_rng(1)
        for trial in range(6):
            query = rng.normal(size=DIMENSION).astype(np.float32)
            query /= np.linalg.norm(query)
            words = " ".join(rng.choice(WORDS, size=3))
            sparse = analysis.query_vector(words)
            strategy = (None, "heading", "fixed")[trial % 3]
            language = (None, "de")[trial % 2]
            for one, other in ((edge, postgres), (edge.restricted(Access(frozenset({"ops"}))), postgres.restricted(Access(frozenset({"ops"}))))):  # fmt: skip
                assert_same(
                    one.dense_ranked(query, 10, strategy, language),
                    other.dense_ranked(query, 10, strategy, language),
                    1e-4,
                )
                assert_same(
                    one.sparse_ranked(sparse, 10, strategy, language),
                    other.sparse_ranked(sparse, 10, strategy, language),
                    1e-3,
                )
                hits = other.dense_search(query, 5, strategy, language)
                assert [chunk_key(h.chunk.chunk_id) for h in hits] == [r.key for r in other.dense_ranked(query, 5, strategy, language)]  # fmt: skip
        # A caller's view filters inside the query: the ops view gets ten of its own chunks, not the top ten less
        # the others'.
        ops = postgres.restricted(Access(frozenset({"ops"})))
        found = ops.dense_search(query, 10)
        assert len(found) == 10 and all("ops" in h.chunk.access for h in found)
        assert ops.count() == edge.restricted(Access(frozenset({"ops"}))).count() == 80
        assert postgres.count() == 240
        everything = {c.chunk_id for c in postgres.scroll_chunks()}
        assert everything == {c.chunk_id for c in edge.scroll_chunks()}
        assert {c.chunk_id for c in postgres.scroll_chunks("fixed", "de")} == {c.chunk_id for c in edge.scroll_chunks("fixed", "de")}  # fmt: skip
        # Read by id: the view drops chunks of groups it may not read; a missing id is left out.
        assert [c.chunk_id for c in postgres.get_chunks(["doc0.md#0", "doc1.md#1", "nope"])] == ["doc0.md#0", "doc1.md#1"]  # fmt: skip
        assert [c.chunk_id for c in ops.get_chunks(["doc0.md#0", "doc2.md#2"])] == ["doc2.md#2"]
        assert postgres.sparse_ranked(analysis.SparseVector([], []), 5) == []
    finally:
        edge.close()
        postgres.close()
        pool.close()


def test_a_second_process_reads_the_index_the_first_holds_open(
    tmp_path: Path, embedded: EmbeddedServices, pg_schema: str
) -> None:
    edge, postgres, pool = both_stores(tmp_path, embedded.postgres_dsn(), pg_schema, count=60)
    try:
        with pytest.raises(StoreUnavailable):
            EdgeShardIndex(tmp_path / "shard")  # a shard admits one handle: what this store is for
        script = (
            "from pipelines.adapters import pgvector_index as p\n"
            f"pool = p.shared_pool({embedded.postgres_dsn()!r}, {pg_schema!r})\n"
            f"index = p.PgVectorIndex(pool, {pg_schema!r}, p.location_of('v-synthetic'))\n"
            "print(index.count(), len(index.scroll_chunks('heading')))\n"
        )
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
        assert out.stdout.split() == ["60", "30"]
        assert postgres.count() == 60  # and this process still reads it
    finally:
        edge.close()
        postgres.close()
        pool.close()


def test_a_missing_or_dropped_table_is_unavailable_never_empty(
    tmp_path: Path, embedded: EmbeddedServices, pg_schema: str
) -> None:
    edge, postgres, pool = both_stores(tmp_path, embedded.postgres_dsn(), pg_schema, count=20)
    try:
        with pytest.raises(StoreUnavailable, match="missing"):
            pgvector_index.PgVectorIndex(pool, pg_schema, pgvector_index.location_of("v-never-built"))
        pgvector_index.drop(pool, pg_schema, postgres.location)
        with pytest.raises(StoreUnavailable):
            postgres.dense_ranked(np.ones(DIMENSION, dtype=np.float32), 3)
        with pytest.raises(StoreUnavailable):
            postgres.sparse_ranked(analysis.query_vector("harbor"), 3)
        with pytest.raises(ValueError, match="RAGLINE_DENSE_UNIT_TOKENS"):
            pgvector_index.PgVectorIndexWriter(pool, pg_schema, pgvector_index.location_of("v-units"), DIMENSION, True)
        with pytest.raises(ValueError, match="not a PostgreSQL index location"):
            pgvector_index.drop(pool, pg_schema, "pg:x; DROP TABLE y")
    finally:
        edge.close()
        pool.close()
    unreachable = pgvector_index.shared_pool("postgresql://postgres@127.0.0.1:1/none", pg_schema, timeout=1.0)
    with pytest.raises(StoreUnavailable):
        pgvector_index.PgVectorIndex(unreachable, pg_schema, pgvector_index.location_of("v-synthetic"))
    unreachable.close()


def test_a_build_into_postgres_answers_as_one_into_a_shard(
    tmp_path: Path, corpus: Path, embedded: EmbeddedServices, pg_schema: str
) -> None:
    """The whole pipeline: a shard-built version is rebuilt into PostgreSQL when the setting changes, and the
    answer and its citations are the shard's."""
    settings = Settings(
        profile="services",
        home=tmp_path / "home",
        source=corpus,
        exclude=["notes/**"],
        postgres_dsn=embedded.postgres_dsn(),
        redis_url=embedded.redis_url(),
        postgres_schema=pg_schema,
        cache_prefix=f"test-{uuid.uuid4().hex[:8]}",
        registry_poll_seconds=0.0,
        semantic_cache=False,
    )
    question = "How long does harbor keep build logs?"
    on_shard = settings.model_copy(update={"vector_store": "qdrant"})
    # a cache of its own: the table's reply must come from the table, not from the shard reply's cache entry
    on_table = settings.model_copy(update={"vector_store": "postgres", "cache_prefix": f"test-{uuid.uuid4().hex[:8]}"})
    shard_stores, table_stores = open_stores(on_shard), open_stores(on_table)
    try:
        assert build_index(on_shard, shard_stores, BuildRequest.from_settings(on_shard)).built
        serving = QueryService(on_shard, shard_stores)  # a server holding the shard open
        shard = serving.answer(question)
        location = shard_stores.registry.active().location  # type: ignore[union-attr]
        # The same version, rebuilt into the other store: a setting changed, not the content.
        assert build_index(on_table, table_stores, BuildRequest.from_settings(on_table)).built
        assert table_stores.registry.active().location.startswith("pg:")  # type: ignore[union-attr]
        assert Path(location).exists()  # the server still holds the shard
        table = QueryService(on_table, table_stores).answer(question)
        serving.answer("Which port does the dashboard listen on?")  # its next poll: it reopens, then lets go
        assert not Path(location).exists()  # and the replaced shard is dropped
    finally:
        shard_stores.close()
        table_stores.close()
    assert table["status"] == shard["status"] == "answered" and "14 days" in table["answer"]
    assert table["answer"] == shard["answer"]
    assert [c["chunk_id"] for c in table["citations"]] == [c["chunk_id"] for c in shard["citations"]]
    assert [r["chunk_id"] for r in table["retrieved"]] == [r["chunk_id"] for r in shard["retrieved"]]


def test_the_hnsw_index_of_a_large_version_ranks_as_the_exact_scan(
    tmp_path: Path, embedded: EmbeddedServices, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `HNSW_FROM` chunks the dense vectors get an HNSW index; lowered here so that 240 chunks get one, and
    read through connections that may not scan the table (the planner would: 240 rows are cheaper to scan). Its
    searches are the shard's, and a narrow caller view with filters still fills its top k (iterative scan)."""
    monkeypatch.setattr(pgvector_index, "HNSW_FROM", 100)
    edge, exact, pool = both_stores(tmp_path, embedded.postgres_dsn(), pg_schema)
    no_scan = pgvector_index.shared_pool(embedded.postgres_dsn() + "&options=-c%20enable_seqscan%3Doff", pg_schema)
    postgres = pgvector_index.PgVectorIndex(no_scan, pg_schema, exact.location)
    try:
        with no_scan.connection() as conn:
            plan = conn.execute(
                f"EXPLAIN SELECT key FROM {postgres.table} ORDER BY dense <=> %s::vector LIMIT 10",
                ("[" + ",".join(["0.25"] * DIMENSION) + "]",),
            ).fetchall()
        assert any("hnsw" in str(row).lower() or "dense_idx" in str(row).lower() for row in plan), plan
        rng = np.random.default_rng(5)
        ops = Access(frozenset({"ops"}))
        for _ in range(5):
            query = rng.normal(size=DIMENSION).astype(np.float32)
            query /= np.linalg.norm(query)
            assert_same(edge.dense_ranked(query, 10), postgres.dense_ranked(query, 10), 1e-4)
            narrow = postgres.restricted(ops).dense_ranked(query, 10, "heading", "de")
            assert len(narrow) == 10
            assert_same(edge.restricted(ops).dense_ranked(query, 10, "heading", "de"), narrow, 1e-4)
    finally:
        edge.close()
        no_scan.close()
        pool.close()
