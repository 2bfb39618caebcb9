"""Access tokens in PostgreSQL: each kept as its sha256 digest with a name, scopes, access groups, an optional
expiry and an optional rate limit of its own. The token itself is returned once, when it is created.

Every server process reads the same table (`server/tokens.py` keeps what it read for a few seconds), so a
token created, revoked or past its expiry takes effect everywhere without a restart. A revoked token's row is
kept (who had it, until when); its name may be used again.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from pipelines.access import EVERY_GROUP, groups_of
from pipelines.adapters.postgres_pool import PostgresPool, checked_schema, ensure_tables

SCOPES = ("query", "feedback", "admin")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class TokenRecord:
    name: str
    digest: str
    scopes: tuple[str, ...]
    groups: tuple[str, ...]  # `*` alone: every group
    expires_at: datetime | None
    rate_per_second: float | None  # None: the server's per-token limit
    burst: int | None
    created_at: datetime
    revoked_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """What listing shows: never the digest whole (its start tells two tokens apart)."""
        return {
            "name": self.name,
            "scopes": list(self.scopes),
            "groups": list(self.groups),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            "rate_per_second": self.rate_per_second,
            "burst": self.burst,
            "created_at": self.created_at.isoformat(),
            "revoked_at": None if self.revoked_at is None else self.revoked_at.isoformat(),
            "sha256_prefix": self.digest[:12],
        }


def check_token_fields(name: str, scopes: list[str], groups: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Valid scopes and groups (sorted, distinct) for a token named `name`, else a ValueError saying what is wrong."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"invalid token name {name!r}: letters, digits and '_.@-', at most 64")
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValueError(f"scopes must be among {list(SCOPES)}, got {scopes}")
    every = [g for g in groups if g == EVERY_GROUP]
    if every and len(groups) > 1:
        raise ValueError("'*' (every group) stands alone")
    return tuple(sorted(set(scopes))), tuple(every) or groups_of(groups)


class TokenTable:
    def __init__(self, dsn: str, schema: str = "ragline") -> None:
        self.dsn, self.schema = dsn, checked_schema(schema)
        self.pool = PostgresPool(dsn, f"token store ({schema})", self._ensure, max_size=2)

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        ensure_tables(
            conn,
            s,
            "tokens",
            [
                f"""CREATE TABLE IF NOT EXISTS {s}.access_tokens (
                    digest text PRIMARY KEY,
                    name text NOT NULL,
                    scopes text[] NOT NULL,
                    groups text[] NOT NULL,
                    expires_at timestamptz,
                    rate_per_second real,
                    burst integer,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    revoked_at timestamptz
                )""",
                f"CREATE UNIQUE INDEX IF NOT EXISTS access_tokens_live_name ON {s}.access_tokens (name) "
                "WHERE revoked_at IS NULL",
            ],
        )

    def create(
        self,
        name: str,
        scopes: list[str],
        groups: list[str],
        expires_at: datetime | None = None,
        rate_per_second: float | None = None,
        burst: int | None = None,
    ) -> tuple[str, TokenRecord]:
        """A new token and its record; a ValueError for bad fields or a name a live token has."""
        scope_set, group_set = check_token_fields(name, scopes, groups)
        if rate_per_second is not None and rate_per_second <= 0:
            raise ValueError("a token's rate limit must be > 0 requests per second")
        if burst is not None and burst < 1:
            raise ValueError("a token's burst must be >= 1")
        if expires_at is not None and expires_at.tzinfo is None:
            raise ValueError("the expiry needs a time zone (e.g. 2027-01-31T00:00:00Z)")
        token = secrets.token_urlsafe(32)
        try:
            with self.pool.connection() as conn:
                row = conn.execute(
                    f"INSERT INTO {self.schema}.access_tokens "
                    "(digest, name, scopes, groups, expires_at, rate_per_second, burst) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING *",
                    (token_digest(token), name, list(scope_set), list(group_set), expires_at, rate_per_second, burst),
                ).fetchone()
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"a token named {name!r} exists; revoke it first or choose another name") from None
        assert row is not None
        return token, _record(row)

    def find(self, digest: str) -> TokenRecord | None:
        """The live (not revoked) token of this digest; an expired one is returned, the caller refuses it."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT * FROM {self.schema}.access_tokens WHERE digest = %s AND revoked_at IS NULL", (digest,)
            ).fetchone()
        return None if row is None else _record(row)

    def list(self, include_revoked: bool = False) -> list[TokenRecord]:
        where = "" if include_revoked else "WHERE revoked_at IS NULL"
        with self.pool.connection() as conn:
            rows = conn.execute(f"SELECT * FROM {self.schema}.access_tokens {where} ORDER BY created_at").fetchall()
        return [_record(r) for r in rows]

    def revoke(self, name: str) -> int:
        """Revoke the live token named `name`; a ValueError when there is none."""
        with self.pool.connection() as conn:
            count = conn.execute(
                f"UPDATE {self.schema}.access_tokens SET revoked_at = now() WHERE name = %s AND revoked_at IS NULL",
                (name,),
            ).rowcount
        if not count:
            raise ValueError(f"no live token named {name!r}")
        return count

    def close(self) -> None:
        self.pool.close()


def _record(row: dict[str, Any]) -> TokenRecord:
    return TokenRecord(
        name=row["name"],
        digest=row["digest"],
        scopes=tuple(row["scopes"]),
        groups=tuple(row["groups"]),
        expires_at=row["expires_at"],
        rate_per_second=row["rate_per_second"],
        burst=row["burst"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )
