"""The index in PostgreSQL with pgvector (`RAGLINE_VECTOR_STORE=postgres`): every server process reads it at once.

A Qdrant Edge shard admits one process, so several API processes on one deployment cannot share an embedded
index; a PostgreSQL with the `vector` extension (the embedded one ships it) can, and so can a Qdrant server
(`RAGLINE_QDRANT_URL`). One index version is two tables of the registry's schema, written once by a build and
then only read:

- `index_<version>`: each chunk's payload (`jsonb`), its dense vector (`vector(d)`, cosine) and its strategy,
  language and access groups as the columns the filters read (`access` with a GIN index, so a caller's view
  filters inside the query, never after the top k). Past `HNSW_FROM` chunks the dense vectors get an HNSW index
  (searched with `hnsw.iterative_scan`, so a filter never empties the top k); below it a search is an exact scan.
- `index_<version>_terms`: the BM25 sparse vectors as postings (term, chunk, weight). Term ids are 31-bit hashes,
  past `sparsevec`'s 10^9 dimensions, so a question's terms are joined on a b-tree index instead. The weights are
  multiplied by the term's IDF when the build closes, as Qdrant's IDF modifier does at query time:
  idf = ln(1 + (N - n + 0.5) / (n + 0.5)), N the version's chunks and n those holding the term. A sparse score is
  the sum over the question's terms of its weight times the stored one, the same score a Qdrant shard gives.

Multivector units (`RAGLINE_DENSE_UNIT_TOKENS`) are not stored here: a writer asked for them refuses.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg

from pipelines.adapters.postgres_pool import Connection, PostgresPool, checked_schema, ensure_tables
from pipelines.documents import Chunk, chunk_key
from pipelines.ports import CallerViews, Hit, Ranked, StoreUnavailable
from pipelines.text.analysis import SparseVector

PREFIX = "pg:"  # a location in this store: `pg:<table>`; others are shard paths or Qdrant collections
HNSW_FROM = 20_000  # chunks from which the dense vectors get an approximate index
EF_SEARCH = 200


def location_of(name: str) -> str:
    """The location of the index named `name` (a version, or a version and a build id)."""
    table = "index_" + re.sub(r"[^a-z0-9_]", "_", name.lower())
    if len(table) > 50:  # identifiers stop at 63 bytes, and `_terms` follows
        table = "index_" + hashlib.blake2b(name.encode(), digest_size=12).hexdigest()
    return PREFIX + table


def in_postgres(location: str) -> bool:
    return location.startswith(PREFIX)


def _table(location: str) -> str:
    if not in_postgres(location) or not re.fullmatch(r"index_[a-z0-9_]+", location[len(PREFIX) :]):
        raise ValueError(f"not a PostgreSQL index location: {location!r}")
    return location[len(PREFIX) :]


def vector_literal(values: np.ndarray) -> str:
    """A vector as pgvector's text input (`[0.1,0.2,...]`)."""
    return "[" + ",".join(f"{float(v):.7g}" for v in np.asarray(values, dtype=np.float32)) + "]"


def drop(pool: PostgresPool, schema: str, location: str) -> None:
    table = f"{checked_schema(schema)}.{_table(location)}"
    with pool.connection() as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}_terms, {table}")


def exists(pool: PostgresPool, schema: str, location: str) -> bool:
    return _indexes(pool, schema, location) is not None


def _indexes(pool: PostgresPool, schema: str, location: str) -> list[str] | None:
    """The definitions of the version table's indexes; None when the table does not exist."""
    table = _table(location)
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL AS found, "
            "array(SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s) AS defs",
            (f"{checked_schema(schema)}.{table}", schema, table),
        ).fetchone()
    return list(row["defs"]) if row and row["found"] else None


def shared_pool(dsn: str, schema: str, max_size: int = 8, timeout: float = 5.0) -> PostgresPool:
    """The pool every index of a process reads through (one per process, not one per version)."""
    schema = checked_schema(schema)

    def ensure(conn: Connection) -> None:
        ensure_tables(conn, schema, "pgvector-index", ["CREATE EXTENSION IF NOT EXISTS vector"])

    return PostgresPool(dsn, f"pgvector index ({schema})", ensure, max_size=max_size, timeout=timeout)


class PgVectorIndexWriter:
    """Creates a version's tables; a half-written pair of a failed build under the same name is dropped first."""

    def __init__(self, pool: PostgresPool, schema: str, location: str, dimension: int, units: bool = False) -> None:
        if units:
            raise ValueError(
                "RAGLINE_VECTOR_STORE=postgres stores no multivector units: set RAGLINE_DENSE_UNIT_TOKENS=0, "
                "or use Qdrant (RAGLINE_VECTOR_STORE=qdrant)"
            )
        self.pool, self.dimension = pool, dimension
        self.table = f"{checked_schema(schema)}.{_table(location)}"
        t = self.table
        with self.pool.connection() as conn:
            conn.execute(f"DROP TABLE IF EXISTS {t}_terms, {t}_postings, {t}")
            conn.execute(
                f"""CREATE TABLE {t} (
                    key text PRIMARY KEY,
                    strategy text NOT NULL,
                    language text NOT NULL,
                    access text[] NOT NULL,
                    payload jsonb NOT NULL,
                    dense vector({int(dimension)}) NOT NULL
                )"""
            )
            # Raw BM25 weights while the build writes; `close` turns them into the IDF-weighted `_terms`.
            conn.execute(f"CREATE TABLE {t}_postings (term integer NOT NULL, key text NOT NULL, weight real NOT NULL)")

    def upsert(
        self,
        chunks: Sequence[Chunk],
        dense: np.ndarray,
        sparse: Sequence[SparseVector],
        units: Sequence[np.ndarray] | None = None,
    ) -> None:
        if units is not None:
            raise ValueError("RAGLINE_VECTOR_STORE=postgres stores no multivector units")
        if not len(chunks) == len(dense) == len(sparse):
            raise ValueError(f"{len(chunks)} chunks, {len(dense)} dense and {len(sparse)} sparse vectors")
        t = self.table
        try:
            with self.pool.connection() as conn, conn.cursor() as cur:
                keys = [chunk_key(c.chunk_id) for c in chunks]
                cur.execute(f"DELETE FROM {t}_postings WHERE key = ANY(%s)", (keys,))  # an upsert, as Qdrant's
                with cur.copy(f"COPY {t} (key, strategy, language, access, payload, dense) FROM STDIN") as copy:
                    for key, chunk, vector in zip(keys, chunks, dense, strict=True):
                        payload = json.dumps(chunk.payload(), ensure_ascii=False)
                        copy.write_row(
                            (key, chunk.strategy, chunk.language, list(chunk.access), payload, vector_literal(vector))
                        )
                with cur.copy(f"COPY {t}_postings (term, key, weight) FROM STDIN") as copy:
                    for key, vector in zip(keys, sparse, strict=True):
                        for term, weight in zip(vector.indices, vector.values, strict=True):
                            copy.write_row((term, key, weight))
        except psycopg.errors.UniqueViolation as exc:
            raise ValueError(f"a chunk was written twice to {t}: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreUnavailable(f"writing {t} failed: {exc}") from exc

    def count(self) -> int:
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT count(*) AS n FROM {self.table}").fetchone()
        return int(row["n"]) if row else 0

    def close(self) -> None:
        """IDF-weight the postings, then index both tables for reading."""
        t = self.table
        with self.pool.connection() as conn:
            conn.execute(
                f"""CREATE TABLE {t}_terms AS
                    WITH total AS (SELECT count(*)::float8 AS n FROM {t}),
                         df AS (SELECT term, count(*)::float8 AS n FROM {t}_postings GROUP BY term)
                    SELECT p.term, p.key,
                           (p.weight * ln(1 + (total.n - df.n + 0.5) / (df.n + 0.5)))::real AS weight
                    FROM {t}_postings p JOIN df USING (term) CROSS JOIN total"""
            )
            conn.execute(f"DROP TABLE {t}_postings")
            conn.execute(f"CREATE INDEX ON {t}_terms (term) INCLUDE (key, weight)")
            conn.execute(f"CREATE INDEX ON {t} USING gin (access)")
            conn.execute(f"CREATE INDEX ON {t} (strategy, language)")
            row = conn.execute(f"SELECT count(*) AS n FROM {t}").fetchone()
            if row and int(row["n"]) >= HNSW_FROM:
                conn.execute(f"CREATE INDEX ON {t} USING hnsw (dense vector_cosine_ops)")
            conn.execute(f"ANALYZE {t}")
            conn.execute(f"ANALYZE {t}_terms")


class PgVectorIndex(CallerViews):
    """Read side of a version's tables; `restricted(access)` is one caller's view, as `EdgeShardIndex`'s: every
    search, scroll, read by id and count of it sees only the chunks of the caller's groups. The pool is the
    process's (`shared_pool`); closing an index leaves it open."""

    def __init__(self, pool: PostgresPool, schema: str, location: str) -> None:
        self.pool, self.location = pool, location
        self.table = f"{checked_schema(schema)}.{_table(location)}"
        indexes = _indexes(pool, schema, location)
        if indexes is None:
            raise StoreUnavailable(f"index table {self.table} is missing")
        # Only an HNSW index reads the search settings: an exact scan needs no round trips to set them.
        self.hnsw = any("USING hnsw" in definition for definition in indexes)

    @contextmanager
    def _cursor(self, what: str) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        try:
            with self.pool.connection() as conn, conn.cursor() as cur:
                yield cur
        except psycopg.Error as exc:  # a dropped version, a lost connection: never a made-up result
            raise StoreUnavailable(f"{what} failed on {self.table}: {exc}") from exc

    def _where(self, strategy: str | None, language: str | None, alias: str = "") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("strategy", strategy), ("language", language)):
            if value is not None:
                clauses.append(f"{alias}{column} = %s")
                params.append(value)
        if self.visible is not None:
            clauses.append(f"{alias}access && %s::text[]")
            params.append(list(self.visible))
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _dense(
        self, vector: np.ndarray, limit: int, strategy: str | None, language: str | None, payload: bool
    ) -> list[dict[str, Any]]:
        where, params = self._where(strategy, language)
        columns = "key, payload" if payload else "key"
        query = vector_literal(vector)
        with self._cursor("dense search") as cur:
            if self.hnsw:
                cur.execute(
                    f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(limit))}; "
                    "SET LOCAL hnsw.iterative_scan = strict_order"
                )
            cur.execute(
                f"SELECT {columns}, 1 - (dense <=> %s::vector) AS score FROM {self.table}{where} "
                "ORDER BY dense <=> %s::vector, key LIMIT %s",
                [query, *params, query, int(limit)],
            )
            return cur.fetchall()

    def _sparse(
        self, vector: SparseVector, limit: int, strategy: str | None, language: str | None, payload: bool
    ) -> list[dict[str, Any]]:
        where, params = self._where(strategy, language, "c.")
        columns = "c.key, c.payload" if payload else "c.key"
        with self._cursor("sparse search") as cur:
            cur.execute(
                f"""SELECT {columns}, s.score FROM (
                        SELECT t.key, sum(q.weight * t.weight) AS score
                        FROM unnest(%s::integer[], %s::real[]) AS q(term, weight)
                        JOIN {self.table}_terms t USING (term)
                        GROUP BY t.key
                    ) s JOIN {self.table} c USING (key){where}
                    ORDER BY s.score DESC, c.key LIMIT %s""",
                [list(vector.indices), list(vector.values), *params, int(limit)],
            )
            return cur.fetchall()

    @staticmethod
    def _hits(rows: list[dict[str, Any]]) -> list[Hit]:
        return [Hit(Chunk.from_payload(row["payload"]), float(row["score"])) for row in rows]

    @staticmethod
    def _ranked(rows: list[dict[str, Any]]) -> list[Ranked]:
        return [Ranked(row["key"], float(row["score"])) for row in rows]

    def dense_ranked(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        return self._ranked(self._dense(vector, limit, strategy, language, False))

    def sparse_ranked(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Ranked]:
        return self._ranked(self._sparse(vector, limit, strategy, language, False)) if vector.indices else []

    def dense_search(
        self, vector: np.ndarray, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._hits(self._dense(vector, limit, strategy, language, True))

    def sparse_search(
        self, vector: SparseVector, limit: int, strategy: str | None = None, language: str | None = None
    ) -> list[Hit]:
        return self._hits(self._sparse(vector, limit, strategy, language, True)) if vector.indices else []

    def scroll_chunks(self, strategy: str | None = None, language: str | None = None) -> list[Chunk]:
        where, params = self._where(strategy, language)
        with self._cursor("scroll") as cur:
            cur.execute(f"SELECT payload FROM {self.table}{where} ORDER BY key", params)
            return [Chunk.from_payload(row["payload"]) for row in cur.fetchall()]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return list(self.chunks_by_key([chunk_key(c) for c in chunk_ids]).values())

    def chunks_by_key(self, keys: Sequence[str]) -> dict[str, Chunk]:
        if not keys:
            return {}
        with self._cursor("read by id") as cur:
            cur.execute(f"SELECT key, payload FROM {self.table} WHERE key = ANY(%s)", (list(keys),))
            found = {row["key"]: Chunk.from_payload(row["payload"]) for row in cur.fetchall()}
        return self.readable(found)

    def count(self) -> int:
        where, params = self._where(None, None)
        with self._cursor("count") as cur:
            cur.execute(f"SELECT count(*) AS n FROM {self.table}{where}", params)
            row = cur.fetchone()
        return int(row["n"]) if row else 0

    def close(self) -> None:
        """Nothing is held per version: the pool is the process's."""
