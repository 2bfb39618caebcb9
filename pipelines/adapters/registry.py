"""The PostgreSQL registry of index versions: which builds exist, their checks, and which is active.

Every process reads the active version from here (never from memory), so an index activated by a
build in one process is picked up by servers in others.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipelines.adapters.postgres_pool import PostgresPool

# `deleted`: beyond the retention count; the shard or collection is dropped, the row stays as history.
STATES = ("building", "checked", "active", "retired", "failed", "deleted")


@dataclass
class IndexVersion:
    version: str
    source: str
    fingerprint: str
    embedding: dict[str, Any]
    chunk_settings: dict[str, Any]
    strategies: list[str]
    languages: list[str]
    location: str
    state: str = "building"
    document_count: int = 0
    chunk_count: int = 0
    avg_doc_length: float = 0.0
    checks: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    created_at: dt.datetime | None = None
    activated_at: dt.datetime | None = None

    def as_rebuilt(self) -> IndexVersion:
        """This row as its forced rebuild sees itself: the rebuild's checks and timings over the row's."""
        return replace(
            self,
            checks={**{k: v for k, v in self.checks.items() if k != REBUILD}, **self.checks.get(REBUILD, {})},
            timings={**{k: v for k, v in self.timings.items() if k != REBUILD}, **self.timings.get(REBUILD, {})},  # type: ignore[dict-item]
        )

    def summary(self) -> dict[str, Any]:
        return {
            "content_version": self.version,
            "embedding_fingerprint": self.fingerprint,
            "embedding": self.embedding,
            "source": self.source,
            "state": self.state,
            "strategies": self.strategies,
            "languages": self.languages,
            "documents": self.document_count,
            "chunks": self.chunk_count,
            "chunk_settings": self.chunk_settings,
            "checks": self.checks,
            "timings": self.timings,
            "location": self.location,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "activated_at": self.activated_at.isoformat() if self.activated_at else None,
        }


_COLUMNS = [
    "version",
    "source",
    "fingerprint",
    "embedding",
    "chunk_settings",
    "strategies",
    "languages",
    "location",
    "state",
    "document_count",
    "chunk_count",
    "avg_doc_length",
    "checks",
    "timings",
]
_JSON = {"embedding", "chunk_settings", "checks", "timings"}
REBUILD = "rebuild"  # key of a forced rebuild's checks and timings on the row it will replace
# Merge a JSON object into a row's column, or into its `rebuild` object while a forced rebuild runs.
_MERGE = (
    "CASE WHEN {column} ? 'rebuild' THEN jsonb_set({column}, '{{rebuild}}', ({column} -> 'rebuild') || %s) "
    "ELSE {column} || %s END"
)
# Activation of a rebuild: its checks and timings replace the ones they were kept apart from.
_PROMOTE = "({column} - 'rebuild') || coalesce({column} -> 'rebuild', '{{}}'::jsonb)"


class Registry:
    """Connections come from a psycopg_pool pool of `pool_min` to `pool_max` connections, opened on first use
    (so a process that forks before it never inherits one) and each checked before it is lent; a caller that
    waits `pool_timeout` seconds for one, or finds PostgreSQL unreachable, gets `StoreUnavailable`."""

    def __init__(
        self,
        dsn: str,
        schema: str = "ragline",
        pool_min: int = 1,
        pool_max: int = 8,
        pool_timeout: float = 5.0,
    ) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):
            raise ValueError(f"invalid registry schema name {schema!r}")
        self.dsn, self.schema = dsn, schema
        self.pool = PostgresPool(
            dsn, f"index registry ({schema})", self._ensure, min_size=pool_min, max_size=pool_max, timeout=pool_timeout
        )
        self._connect = self.pool.connection

    def pool_stats(self) -> dict[str, int]:
        return self.pool.stats()

    def close(self) -> None:
        """Close the pool's connections; the next call opens a new pool."""
        self.pool.close()

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragline-registry-{s}",))
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            cur.execute(
                f"""CREATE TABLE IF NOT EXISTS {s}.index_versions (
                    version text PRIMARY KEY,
                    source text NOT NULL,
                    fingerprint text NOT NULL,
                    embedding jsonb NOT NULL,
                    chunk_settings jsonb NOT NULL,
                    strategies text[] NOT NULL,
                    languages text[] NOT NULL,
                    location text NOT NULL,
                    state text NOT NULL,
                    document_count integer NOT NULL DEFAULT 0,
                    chunk_count integer NOT NULL DEFAULT 0,
                    avg_doc_length double precision NOT NULL DEFAULT 0,
                    checks jsonb NOT NULL DEFAULT '{{}}',
                    timings jsonb NOT NULL DEFAULT '{{}}',
                    created_at timestamptz NOT NULL DEFAULT now(),
                    activated_at timestamptz
                )"""
            )
            # Tables made before `deleted` existed carry the old inline CHECK: replace it with a named one.
            cur.execute(f"ALTER TABLE {s}.index_versions DROP CONSTRAINT IF EXISTS index_versions_state_check")
            states = ",".join(f"'{state}'" for state in STATES)
            cur.execute(
                f"ALTER TABLE {s}.index_versions ADD CONSTRAINT index_versions_state_check CHECK (state IN ({states}))"
            )
            # Shards or collections a rebuild of their version replaced; dropped once no process holds them.
            cur.execute(
                f"""CREATE TABLE IF NOT EXISTS {s}.superseded_locations (
                    location text PRIMARY KEY,
                    version text NOT NULL,
                    superseded_at timestamptz NOT NULL DEFAULT now()
                )"""
            )
            cur.execute(
                f"CREATE UNIQUE INDEX IF NOT EXISTS index_versions_one_active "
                f"ON {s}.index_versions ((true)) WHERE state = 'active'"
            )
        conn.commit()

    def record(self, entry: IndexVersion) -> None:
        """Insert or replace a version (a rebuild of the same content starts over as `building`); a location
        the row named before, if another, becomes superseded."""
        values = [Jsonb(getattr(entry, c)) if c in _JSON else getattr(entry, c) for c in _COLUMNS]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[1:])
        with self._connect() as conn:
            self._supersede(conn, entry.version, entry.location)
            conn.execute(
                f"INSERT INTO {self.schema}.index_versions ({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
                f"ON CONFLICT (version) DO UPDATE SET {updates}, created_at = now()",
                values,
            )

    def update(self, version: str, **fields: Any) -> None:
        unknown = set(fields) - set(_COLUMNS)
        if unknown or fields.get("state", "building") not in STATES:
            raise ValueError(f"cannot update {sorted(unknown) or fields.get('state')}")
        assigns = ", ".join(f"{k} = %s" for k in fields)
        values = [Jsonb(v) if k in _JSON else v for k, v in fields.items()]
        with self._connect() as conn:
            conn.execute(f"UPDATE {self.schema}.index_versions SET {assigns} WHERE version = %s", [*values, version])

    def merge(self, version: str, checks: dict[str, Any] | None = None, timings: dict[str, Any] | None = None) -> None:
        """Add check results and timings to a version's row, keeping what other steps recorded. While a
        forced rebuild of the version runs (`begin_rebuild`), they go under the row's `rebuild` key
        instead: the row describes the index that is serving until activation switches to the rebuild."""
        with self._connect() as conn:
            conn.execute(
                f"UPDATE {self.schema}.index_versions SET "
                f"checks = {_MERGE.format(column='checks')}, timings = {_MERGE.format(column='timings')} "
                "WHERE version = %s",
                (Jsonb(checks or {}), Jsonb(checks or {}), Jsonb(timings or {}), Jsonb(timings or {}), version),
            )

    def begin_rebuild(self, version: str) -> None:
        """A forced rebuild of this (active) version starts: its checks and timings are kept apart, under
        `rebuild`, until activation promotes them (a failed rebuild leaves them there, for the operator)."""
        with self._connect() as conn:
            conn.execute(
                f"UPDATE {self.schema}.index_versions SET checks = (checks - 'rebuild') || %s, "
                "timings = (timings - 'rebuild') || %s WHERE version = %s",
                (Jsonb({REBUILD: {}}), Jsonb({REBUILD: {}}), version),
            )

    def beyond_retention(self, keep: int) -> list[IndexVersion]:
        """Versions past the newest `keep` that still hold a shard or collection (never the active one)."""
        if keep < 1:
            raise ValueError(f"index retention must keep at least 1 version, not {keep}")
        kept = [v for v in self.versions() if v.state not in ("deleted", "building")]
        active = [v for v in kept if v.state == "active"]
        others = [v for v in kept if v.state != "active"]
        return others[max(0, keep - len(active)) :]

    def _supersede(self, conn: psycopg.Connection[dict[str, Any]], version: str, location: str) -> None:
        conn.execute(
            f"INSERT INTO {self.schema}.superseded_locations (location, version) "
            f"SELECT location, version FROM {self.schema}.index_versions WHERE version = %s AND location <> %s "
            "ON CONFLICT (location) DO NOTHING",
            (version, location),
        )

    def superseded(self) -> list[str]:
        """Locations a rebuild of their version replaced, oldest first, not yet dropped."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT location FROM {self.schema}.superseded_locations ORDER BY superseded_at"
            ).fetchall()
        return [row["location"] for row in rows]

    def forget_superseded(self, location: str) -> None:
        with self._connect() as conn:
            conn.execute(f"DELETE FROM {self.schema}.superseded_locations WHERE location = %s", (location,))

    def activate(self, version: str, **fields: Any) -> IndexVersion:
        """Make `version` the active index; the previous one is retired but kept for rollback.

        `fields` (location, chunk_count, ...) change the row in the same transaction: a forced rebuild of
        the active version switches it to its fresh location at once, and the old location is superseded."""
        unknown = set(fields) - set(_COLUMNS[1:]) | ({"state"} & set(fields))
        if unknown:
            raise ValueError(f"cannot set {sorted(unknown)} on activation")
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT state, location FROM {self.schema}.index_versions WHERE version = %s FOR UPDATE", (version,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no index version {version!r}")
            if row["state"] not in ("checked", "retired", "active"):
                raise ValueError(
                    f"version {version} is {row['state']}; only checked or retired versions activate"
                    + (" (its index was dropped by retention: rebuild it)" if row["state"] == "deleted" else "")
                )
            conn.execute(
                f"UPDATE {self.schema}.index_versions SET state = 'retired' WHERE state = 'active' AND version <> %s",
                (version,),
            )
            assigns = "".join(f", {k} = %s" for k in fields)
            if "location" in fields and fields["location"] != row["location"]:  # a forced rebuild goes live
                self._supersede(conn, version, fields["location"])
                assigns += (
                    f", checks = {_PROMOTE.format(column='checks')}, timings = {_PROMOTE.format(column='timings')}"
                )
            values = [Jsonb(v) if k in _JSON else v for k, v in fields.items()]
            conn.execute(
                f"UPDATE {self.schema}.index_versions SET state = 'active', activated_at = now(){assigns} "
                "WHERE version = %s",
                (*values, version),
            )
        active = self.get(version)
        assert active is not None
        return active

    def get(self, version: str) -> IndexVersion | None:
        with self._connect() as conn:
            row = conn.execute(f"SELECT * FROM {self.schema}.index_versions WHERE version = %s", (version,)).fetchone()
        return IndexVersion(**row) if row else None

    def active(self) -> IndexVersion | None:
        with self._connect() as conn:
            row = conn.execute(f"SELECT * FROM {self.schema}.index_versions WHERE state = 'active'").fetchone()
        return IndexVersion(**row) if row else None

    def versions(self) -> list[IndexVersion]:
        with self._connect() as conn:
            rows = conn.execute(f"SELECT * FROM {self.schema}.index_versions ORDER BY created_at DESC").fetchall()
        return [IndexVersion(**row) for row in rows]

    def ping(self) -> None:
        with self._connect() as conn:
            conn.execute("SELECT 1")
