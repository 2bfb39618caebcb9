"""One PostgreSQL connection pool (psycopg_pool) per store: opened on first use (a process that forks before it
never inherits a connection), each connection checked before it is lent, the store's tables made once on its
first connection, and every connection failure or wait past `timeout` raised as `StoreUnavailable`."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pipelines.ports import StoreUnavailable

Connection = psycopg.Connection[dict[str, Any]]


def checked_schema(schema: str) -> str:
    """A schema name safe to write into SQL (it cannot be a query parameter), else a ValueError."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):
        raise ValueError(f"invalid schema name {schema!r}")
    return schema


def ensure_tables(conn: Connection, schema: str, store: str, statements: list[str]) -> None:
    """A store's schema and tables, made once under an advisory lock (several processes may start at once), then
    committed: an `ensure` for `PostgresPool`."""
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragline-{store}-{schema}",))
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        for statement in statements:
            cur.execute(statement)  # DDL of the store's own, its schema checked
    conn.commit()


class PostgresPool:
    def __init__(
        self,
        dsn: str,
        name: str,
        ensure: Callable[[Connection], None],
        min_size: int = 0,
        max_size: int = 4,
        timeout: float = 5.0,
    ) -> None:
        """`name` says which store failed in its errors; `ensure(conn)` makes its tables (idempotent, committed by
        it), run on the first connection lent."""
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError(f"a pool needs 0 <= min_size <= max_size, max_size >= 1; got {min_size}, {max_size}")
        self.dsn, self.name, self.ensure = dsn, name, ensure
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout
        self._pool: ConnectionPool[Connection] | None = None
        self._lock = threading.Lock()
        self._ensured = False

    def _opened(self) -> ConnectionPool[Connection]:
        with self._lock:
            if self._pool is None:
                pool: ConnectionPool[Connection] = ConnectionPool(
                    self.dsn,
                    min_size=self.min_size,
                    max_size=self.max_size,
                    timeout=self.timeout,
                    kwargs={"row_factory": dict_row, "connect_timeout": 5, "autocommit": False},
                    check=ConnectionPool.check_connection,
                    name=self.name,
                    open=False,
                )
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A pooled connection for the block: committed after it, rolled back if it raised, then returned."""
        try:
            with self._opened().connection() as conn:
                if not self._ensured:
                    self.ensure(conn)
                    self._ensured = True
                yield conn
        except psycopg.OperationalError as exc:  # PoolTimeout is one: no connection came within `timeout`
            raise StoreUnavailable(f"{self.name} unreachable: {exc}") from exc

    def stats(self) -> dict[str, int]:
        """psycopg_pool's counters (`pool_size`, `pool_available`, `requests_waiting`, ...); empty before first use."""
        return {} if self._pool is None else dict(self._pool.get_stats())

    def close(self) -> None:
        """Close the pool's connections; the next `connection()` opens a new pool."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
