"""Who a presented bearer token is: its scopes, its access groups and its own rate limit, if any.

Two sources: `RAGLINE_TOKEN` (or, when unset, the token generated into the data dir on first use) is the
bootstrap admin token: every scope, every access group. Every other token lives in PostgreSQL
(`pipelines/adapters/token_table.py`: created, listed and revoked by `ragline tokens ...` or
`/v1/admin/tokens`). A process keeps what it read of a token for `token_cache_seconds`, so a token
created, revoked or past its expiry takes effect in every server process within that time.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from pipelines.access import EVERYTHING, Access
from pipelines.adapters.redis_rate_limit import RateStoreUnavailable, RedisTokenBuckets
from pipelines.adapters.token_table import SCOPES, TokenRecord, TokenTable, token_digest
from pipelines.ports import StoreUnavailable
from pipelines.settings import Settings

__all__ = ["SCOPES", "Principal", "RateLimiter", "StreamSlots", "TokenStore", "load_or_create_token", "token_digest"]
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Principal:
    name: str
    digest: str
    scopes: frozenset[str]
    access: Access = EVERYTHING
    rate_per_second: float | None = None  # None: the server's per-token limit
    burst: int | None = None

    @classmethod
    def of(cls, record: TokenRecord) -> Principal:
        return cls(
            record.name,
            record.digest,
            frozenset(record.scopes),
            Access.of(record.groups),
            record.rate_per_second,
            record.burst,
        )


def load_or_create_token(settings: Settings) -> str:
    """`RAGLINE_TOKEN` when set; otherwise the token kept in the data dir, generated on first use."""
    if settings.token:
        return settings.token
    path = settings.data_dir / "token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token


class TokenStore:
    """The bootstrap principals, then the token table (attached once the stores are open), each digest's row
    kept `ttl` seconds (a bounded table, least recent out; unknown digests too, so a flood of bad tokens
    costs one lookup each per `ttl`). An unreachable table raises `StoreUnavailable`: the caller answers 503,
    never lets a token in unchecked; the bootstrap token still works. After a failed lookup the table is not
    asked again for `retry_seconds`: while PostgreSQL is away every request is refused at once, instead of each
    waiting out the pool's timeout."""

    def __init__(
        self, principals: list[Principal], ttl: float = 2.0, max_entries: int = 10_000, retry_seconds: float = 1.0
    ) -> None:
        self._fixed = principals
        self.table: TokenTable | None = None
        self.ttl, self.max_entries, self.retry_seconds = ttl, max_entries, retry_seconds
        self._unreachable_until = 0.0
        self._seen: OrderedDict[str, tuple[float, TokenRecord | None]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def for_settings(cls, settings: Settings) -> TokenStore:
        root = Principal("root", token_digest(load_or_create_token(settings)), frozenset(SCOPES))
        if (settings.data_dir / "tokens.json").exists():
            log.warning(
                "tokens_file_ignored",
                path=str(settings.data_dir / "tokens.json"),
                reason="tokens live in PostgreSQL now: issue them again with `ragline tokens create`",
            )
        return cls([root], settings.token_cache_seconds)

    def attach(self, table: TokenTable) -> None:
        self.table = table

    def _record(self, digest: str) -> TokenRecord | None:
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(digest)
            if seen is not None and now - seen[0] < self.ttl:
                self._seen.move_to_end(digest)
                return seen[1]
        if now < self._unreachable_until:
            raise StoreUnavailable("the token table was unreachable a moment ago; retrying shortly")
        try:
            record = self.table.find(digest) if self.table is not None else None
        except StoreUnavailable:
            self._unreachable_until = time.monotonic() + self.retry_seconds
            raise
        with self._lock:
            self._seen[digest] = (now, record)
            self._seen.move_to_end(digest)
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)
        return record

    def identify(self, presented: str) -> Principal | None:
        digest = token_digest(presented)
        found = None
        # Compare against every fixed digest so timing does not reveal which (or whether any) matched early.
        for principal in self._fixed:
            if hmac.compare_digest(digest, principal.digest):
                found = principal
        if found is not None:
            return found
        record = self._record(digest)
        if record is None:
            return None
        if record.expires_at is not None and record.expires_at <= datetime.now(UTC):
            return None
        return Principal.of(record)

    def accepts(self, presented: str) -> bool:
        return self.identify(presented) is not None


class RateLimiter:
    """A token bucket per key (an access token's digest, a client address): `burst` requests at once, refilled
    at `rate` per second. At most `max_keys` buckets are kept, least recently used out: a flood of addresses
    costs bounded memory, and a key whose bucket was dropped starts again with a full one.

    With `share(buckets)` (`RAGLINE_RATE_LIMIT_STORE=redis`) the buckets live in Redis, one per key for every
    server process; while Redis is out of reach this process's own buckets limit instead."""

    def __init__(self, rate: float, burst: int, max_keys: int = 100_000) -> None:
        self.rate, self.burst, self.max_keys = rate, max(1, burst), max(1, max_keys)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._shared: RedisTokenBuckets | None = None
        self._warned_at = -1e9

    def share(self, buckets: RedisTokenBuckets) -> None:
        self._shared = buckets

    def take(self, key: str, now: float, rate: float | None = None, burst: int | None = None) -> float:
        """Spend one request; return 0 when allowed, else the seconds until one is available. `rate` and
        `burst` replace the limiter's own for this key (a token with a limit of its own)."""
        rate = self.rate if rate is None else rate
        burst = self.burst if burst is None else max(1, burst)
        if rate <= 0:
            return 0.0
        if self._shared is not None:
            try:
                return self._shared.take(key, rate, burst)
            except RateStoreUnavailable as exc:
                if now - self._warned_at > 60:
                    self._warned_at = now
                    log.warning("rate_limit_store_unavailable", error=str(exc), fallback="in-process buckets")
        with self._lock:
            level, last = self._buckets.pop(key, (float(burst), now))
            level = min(float(burst), level + (now - last) * rate)
            allowed = level >= 1.0
            self._buckets[key] = (level - 1.0 if allowed else level, now)  # re-inserted: most recent last
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return 0.0 if allowed else (1.0 - level) / rate

    def __len__(self) -> int:
        return len(self._buckets)


class StreamSlots:
    """How many streams are open, in all and per access token; `open` refuses one past either cap."""

    def __init__(self, total: int, per_token: int) -> None:
        self.total, self.per_token = total, per_token
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, key: str) -> str | None:
        """Take a slot for `key`; None when taken, else why not (release a taken slot with `close`)."""
        with self._lock:
            if sum(self._open.values()) >= self.total:
                return f"the server has {self.total} streams open, its limit (max_streams)"
            held = self._open.get(key, 0)
            if held >= self.per_token:
                return f"this token has {held} streams open, its limit (max_streams_per_token)"
            self._open[key] = held + 1
            return None

    def close(self, key: str) -> None:
        with self._lock:
            held = self._open.get(key, 0) - 1
            if held > 0:
                self._open[key] = held
            else:
                self._open.pop(key, None)

    def held(self, key: str | None = None) -> int:
        with self._lock:
            return sum(self._open.values()) if key is None else self._open.get(key, 0)
