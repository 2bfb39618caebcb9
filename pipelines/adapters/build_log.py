"""Index builds started over the admin API, in PostgreSQL: every server process sees every build, and only one
build runs at a time across all of them.

A row per build (`<schema>.index_builds`): its request, state (queued, running, succeeded, failed, cancelled),
result or error, whether a cancel was asked for (by any process: the one running it reads the flag), and a
heartbeat the process running it renews. A build whose heartbeat is older than `stale_seconds`
was abandoned (its process stopped): the next start marks it failed and may begin another.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipelines.adapters.postgres_pool import PostgresPool, checked_schema, ensure_tables

TERMINAL = ("succeeded", "failed", "cancelled")
_OPEN = "state NOT IN ('succeeded', 'failed', 'cancelled')"


class BuildLog:
    def __init__(self, dsn: str, schema: str = "ragline", stale_seconds: float = 120.0) -> None:
        self.schema, self.stale_seconds = checked_schema(schema), stale_seconds
        self.pool = PostgresPool(dsn, f"build log ({schema})", self._ensure, max_size=2)

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        ensure_tables(
            conn,
            s,
            "builds",
            [
                f"""CREATE TABLE IF NOT EXISTS {s}.index_builds (
                    id text PRIMARY KEY,
                    via text NOT NULL,
                    request jsonb NOT NULL,
                    state text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    finished_at timestamptz,
                    heartbeat_at timestamptz NOT NULL DEFAULT now(),
                    result jsonb NOT NULL DEFAULT '{{}}',
                    error text
                )""",
                f"ALTER TABLE {s}.index_builds ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false",
            ],
        )

    def claim(self, build_id: str, via: str, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """(row, started): the build already running anywhere, or a new queued row for this one."""
        s = self.schema
        with self.pool.connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragline-build-claim-{s}",))
            conn.execute(
                f"UPDATE {s}.index_builds SET state = 'failed', finished_at = now(), "
                "error = 'abandoned: the server process running it stopped' "
                f"WHERE {_OPEN} AND heartbeat_at < now() - make_interval(secs => %s)",
                (self.stale_seconds,),
            )
            running = conn.execute(
                f"SELECT * FROM {s}.index_builds WHERE {_OPEN} ORDER BY created_at LIMIT 1"
            ).fetchone()
            if running is not None:
                return running, False
            row = conn.execute(
                f"INSERT INTO {s}.index_builds (id, via, request, state) VALUES (%s, %s, %s, 'queued') RETURNING *",
                (build_id, via, Jsonb(request)),
            ).fetchone()
        assert row is not None
        return row, True

    def update(self, build_id: str, state: str, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        finished = "now()" if state in TERMINAL else "NULL"
        with self.pool.connection() as conn:
            conn.execute(
                f"UPDATE {self.schema}.index_builds SET state = %s, result = %s, error = %s, heartbeat_at = now(), "
                f"finished_at = {finished} WHERE id = %s",
                (state, Jsonb(result or {}), error, build_id),
            )

    def heartbeat(self, build_id: str) -> None:
        with self.pool.connection() as conn:
            conn.execute(f"UPDATE {self.schema}.index_builds SET heartbeat_at = now() WHERE id = %s", (build_id,))

    def request_cancel(self, build_id: str) -> dict[str, Any] | None:
        """Ask the build's process to stop it (a build already finished is left as it is); None: no such build."""
        with self.pool.connection() as conn:
            conn.execute(
                f"UPDATE {self.schema}.index_builds SET cancel_requested = true WHERE id = %s AND {_OPEN}", (build_id,)
            )
            return conn.execute(f"SELECT * FROM {self.schema}.index_builds WHERE id = %s", (build_id,)).fetchone()

    def cancel_requested(self, build_id: str) -> bool:
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT cancel_requested FROM {self.schema}.index_builds WHERE id = %s", (build_id,)
            ).fetchone()
        return bool(row and row["cancel_requested"])

    def get(self, build_id: str) -> dict[str, Any] | None:
        with self.pool.connection() as conn:
            return conn.execute(f"SELECT * FROM {self.schema}.index_builds WHERE id = %s", (build_id,)).fetchone()

    def close(self) -> None:
        self.pool.close()
