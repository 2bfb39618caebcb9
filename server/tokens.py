"""Access tokens with scopes: kept as sha256 digests only, compared in constant time.

Two sources: `RAGLINE_TOKEN` (or, when unset, the token generated into the data dir on first use)
holds every scope; `<data dir>/tokens.json` lists further tokens by digest with their scopes:

    {"tokens": [{"name": "ci", "sha256": "<hex digest>", "scopes": ["query"]}]}

A running server reads the file again when it changes (`ragline token add` and `ragline token revoke` replace
it), so a revoked token stops working at its next request, in every server process, without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import structlog

from pipelines.settings import Settings

SCOPES = ("query", "admin")
TOKENS_FILE = "tokens.json"
log = structlog.get_logger(__name__)


class TokensFileError(ValueError):
    """The tokens file is not in the documented shape."""


@dataclass(frozen=True)
class Principal:
    name: str
    digest: str
    scopes: frozenset[str]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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


def read_tokens_file(path: Path) -> list[Principal]:
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text())["tokens"]
        principals = [Principal(e["name"], e["sha256"].lower(), frozenset(e["scopes"])) for e in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise TokensFileError(f"{path}: expected {{'tokens': [{{'name', 'sha256', 'scopes'}}]}}: {exc}") from exc
    for p in principals:
        if len(p.digest) != 64 or not p.scopes <= set(SCOPES):
            raise TokensFileError(f"{path}: token {p.name!r} needs a sha256 hex digest and scopes among {SCOPES}")
    return principals


def _stored(path: Path) -> list[dict[str, object]]:
    """The tokens file's entries, read once and checked (a broken file is an error, not an empty list)."""
    return [{"name": p.name, "sha256": p.digest, "scopes": sorted(p.scopes)} for p in read_tokens_file(path)]


def _store(path: Path, entries: list[dict[str, object]]) -> None:
    """Replace the file in one step, so a server reading it sees the old list or the new one, never half."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"tokens": entries}, indent=2) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)


def issue_token(settings: Settings, name: str, scopes: list[str]) -> str:
    """Add a token to the tokens file and return it; only its digest is stored, so show it once. Names are
    unique, so that `revoke_token` removes exactly the token meant."""
    unknown = set(scopes) - set(SCOPES)
    if unknown or not scopes:
        raise ValueError(f"scopes must be among {list(SCOPES)}, got {scopes}")
    path = settings.data_dir / TOKENS_FILE
    existing = _stored(path)
    if any(entry["name"] == name for entry in existing):
        raise ValueError(f"a token named {name!r} exists; revoke it first or choose another name")
    token = secrets.token_urlsafe(32)
    existing.append({"name": name, "sha256": token_digest(token), "scopes": sorted(set(scopes))})
    _store(path, existing)
    return token


def revoke_token(settings: Settings, name: str) -> int:
    """Remove the tokens named `name` from the tokens file; the number removed (a ValueError when none is)."""
    path = settings.data_dir / TOKENS_FILE
    existing = _stored(path)
    kept = [entry for entry in existing if entry["name"] != name]
    if len(kept) == len(existing):
        names = sorted({str(entry["name"]) for entry in existing})
        raise ValueError(f"no token named {name!r}; the tokens file holds {names or 'none'}")
    _store(path, kept)
    return len(existing) - len(kept)


def list_tokens(settings: Settings) -> list[Principal]:
    return read_tokens_file(settings.data_dir / TOKENS_FILE)


class TokenStore:
    """Who a presented token is: the fixed principals (the root token) and those of a tokens file, read again
    when the file changes (its size, modification time or inode: one `stat` a request). A file that turns
    invalid while the server runs fails closed: its tokens stop working, the root token still does, and
    `tokens_file_invalid` is logged, once for each change, until the file is mended."""

    def __init__(self, principals: list[Principal], tokens_file: Path | None = None) -> None:
        self._fixed = principals
        self._file = tokens_file
        self._from_file: list[Principal] = []
        self._seen: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        if tokens_file is not None:
            self._from_file = read_tokens_file(tokens_file)  # broken at start: the server does not start
            self._seen = self._signature()

    @classmethod
    def for_settings(cls, settings: Settings) -> TokenStore:
        root = Principal("root", token_digest(load_or_create_token(settings)), frozenset(SCOPES))
        return cls([root], settings.data_dir / TOKENS_FILE)

    def _signature(self) -> tuple[int, int, int] | None:
        assert self._file is not None
        try:
            stat = self._file.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def _current(self) -> list[Principal]:
        if self._file is None:
            return self._fixed
        signature = self._signature()
        if signature != self._seen:
            with self._lock:
                if signature != self._seen:
                    try:
                        self._from_file = read_tokens_file(self._file)
                        log.info("tokens_file_reloaded", path=str(self._file), tokens=len(self._from_file))
                    except (TokensFileError, OSError) as exc:
                        self._from_file = []
                        log.error("tokens_file_invalid", path=str(self._file), error=str(exc))
                    self._seen = signature
        return [*self._fixed, *self._from_file]

    def identify(self, presented: str) -> Principal | None:
        digest = token_digest(presented)
        found = None
        # Compare against every digest so timing does not reveal which (or whether any) matched early.
        for principal in self._current():
            if hmac.compare_digest(digest, principal.digest):
                found = principal
        return found

    def accepts(self, presented: str) -> bool:
        return self.identify(presented) is not None


class RateLimiter:
    """A token bucket per key (an access token's digest, a client address): `burst` requests at once, refilled
    at `rate` per second. At most `max_keys` buckets are kept, least recently used out: a flood of addresses
    costs bounded memory, and a key whose bucket was dropped starts again with a full one."""

    def __init__(self, rate: float, burst: int, max_keys: int = 100_000) -> None:
        self.rate, self.burst, self.max_keys = rate, max(1, burst), max(1, max_keys)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, now: float) -> float:
        """Spend one request; return 0 when allowed, else the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        with self._lock:
            level, last = self._buckets.pop(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            allowed = level >= 1.0
            self._buckets[key] = (level - 1.0 if allowed else level, now)  # re-inserted: most recent last
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return 0.0 if allowed else (1.0 - level) / self.rate

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
