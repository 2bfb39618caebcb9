"""The semantic cache in PostgreSQL with pgvector: one table every server process shares.

The Qdrant Edge shard of `pipelines/caching/semantic.py` is locked by the one process that opens it, so a
second API process on the same deployment has no semantic cache at all. Here the question vectors live in the
registry's PostgreSQL (`<schema>.semantic_cache`, a `vector` column), and any process finds the entry any
other wrote: the same namespace digest (index version, model, prompt, caller's access groups...), the same
lexical signature, the nearest question by cosine similarity at or above the threshold. The answers stay in
Redis under their exact-cache keys, as with the shard.

A lookup narrows by the (namespace, signature) index to the handful of earlier wordings of one question, then
orders those by distance: no approximate index is needed. Rows older than a day past the answer cache's time
to live are deleted (once an hour, by the process that writes). Every failure, including a PostgreSQL without
the `vector` extension, is `SemanticCacheUnavailable`: the lookup is a bypass, never an error.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
import psycopg
import structlog

from pipelines.adapters.pgvector_index import vector_literal
from pipelines.adapters.postgres_pool import PostgresPool, checked_schema, ensure_tables
from pipelines.caching.semantic import SemanticCacheUnavailable, SemanticMatch, namespace_digest
from pipelines.ports import StoreUnavailable

log = structlog.get_logger(__name__)


class PostgresSemanticCache:
    def __init__(self, dsn: str, schema: str, dimension: int, keep_seconds: float = 86_400.0) -> None:
        self.schema, self.dimension, self.keep_seconds = checked_schema(schema), dimension, keep_seconds
        self.pool = PostgresPool(dsn, f"semantic cache ({schema})", self._ensure, max_size=4)
        self._pruned_at = 0.0

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        ensure_tables(
            conn,
            s,
            "semantic",
            [
                "CREATE EXTENSION IF NOT EXISTS vector",
                f"""CREATE TABLE IF NOT EXISTS {s}.semantic_cache (
                    id uuid PRIMARY KEY,
                    namespace text NOT NULL,
                    signature text NOT NULL,
                    key text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    question vector({self.dimension}) NOT NULL
                )""",
                f"CREATE INDEX IF NOT EXISTS semantic_cache_lookup ON {s}.semantic_cache (namespace, signature)",
                f"CREATE INDEX IF NOT EXISTS semantic_cache_created ON {s}.semantic_cache (created_at)",
            ],
        )

    def _run(self, what: str, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        try:
            with self.pool.connection() as conn:
                cursor = conn.execute(sql, params)
                return cursor.fetchall() if cursor.description else []
        except (StoreUnavailable, psycopg.Error) as exc:  # unreachable, or no pgvector: the cache is bypassed
            raise SemanticCacheUnavailable(f"semantic cache {what} failed: {exc}") from exc

    def nearest(self, vector: np.ndarray, namespace: str, signature: str, threshold: float) -> SemanticMatch | None:
        """The closest cached question of this namespace with the same lexical signature, at or above `threshold`."""
        literal = vector_literal(vector)  # 384 numbers formatted once, sent for the score and the order
        rows = self._run(
            "lookup",
            f"SELECT id, key, 1 - (question <=> %s::vector) AS similarity FROM {self.schema}.semantic_cache "
            "WHERE namespace = %s AND signature = %s ORDER BY question <=> %s::vector LIMIT 1",
            (literal, namespace_digest(namespace), signature, literal),
        )
        if not rows or float(rows[0]["similarity"]) < threshold:
            return None
        return SemanticMatch(float(rows[0]["similarity"]), str(rows[0]["key"]), str(rows[0]["id"]))

    def add(self, vector: np.ndarray, namespace: str, signature: str, exact_key: str) -> None:
        self._run(
            "write",
            f"INSERT INTO {self.schema}.semantic_cache (id, namespace, signature, key, question) "
            "VALUES (%s, %s, %s, %s, %s::vector) ON CONFLICT (id) DO UPDATE SET question = EXCLUDED.question, "
            "created_at = now()",
            (
                uuid.uuid5(uuid.NAMESPACE_URL, exact_key),
                namespace_digest(namespace),
                signature,
                exact_key,
                vector_literal(vector),
            ),
        )
        if time.monotonic() - self._pruned_at > 3600:
            self._pruned_at = time.monotonic()
            self._run(
                "prune",
                f"DELETE FROM {self.schema}.semantic_cache WHERE created_at < now() - make_interval(secs => %s)",
                (self.keep_seconds,),
            )

    def forget(self, point_id: str) -> None:
        """Drop an entry whose answer expired from Redis."""
        try:
            self._run("forget", f"DELETE FROM {self.schema}.semantic_cache WHERE id = %s", (point_id,))
        except SemanticCacheUnavailable as exc:
            log.warning("semantic_cache_forget_failed", error=str(exc))

    def count(self) -> int:
        rows = self._run("count", f"SELECT count(*) AS n FROM {self.schema}.semantic_cache", ())
        return int(rows[0]["n"])

    def close(self) -> None:
        self.pool.close()
