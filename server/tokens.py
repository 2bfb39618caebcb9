"""Access tokens with scopes: kept as sha256 digests only, compared in constant time.

Two sources: `RAGLINE_TOKEN` (or, when unset, the token generated into the data dir on first use)
holds every scope; `<data dir>/tokens.json` lists further tokens by digest with their scopes:

    {"tokens": [{"name": "ci", "sha256": "<hex digest>", "scopes": ["query"]}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from pipelines.settings import Settings

SCOPES = ("query", "admin")
TOKENS_FILE = "tokens.json"


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


def issue_token(settings: Settings, name: str, scopes: list[str]) -> str:
    """Add a token to the tokens file and return it; only its digest is stored, so show it once."""
    unknown = set(scopes) - set(SCOPES)
    if unknown or not scopes:
        raise ValueError(f"scopes must be among {list(SCOPES)}, got {scopes}")
    path = settings.data_dir / TOKENS_FILE
    existing = json.loads(path.read_text())["tokens"] if path.exists() else []
    token = secrets.token_urlsafe(32)
    existing.append({"name": name, "sha256": token_digest(token), "scopes": sorted(set(scopes))})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"tokens": existing}, indent=2) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)
    return token


class TokenStore:
    def __init__(self, principals: list[Principal]) -> None:
        self._principals = principals

    @classmethod
    def for_settings(cls, settings: Settings) -> TokenStore:
        root = Principal("root", token_digest(load_or_create_token(settings)), frozenset(SCOPES))
        return cls([root, *read_tokens_file(settings.data_dir / TOKENS_FILE)])

    def identify(self, presented: str) -> Principal | None:
        digest = token_digest(presented)
        found = None
        # Compare against every digest so timing does not reveal which (or whether any) matched early.
        for principal in self._principals:
            if hmac.compare_digest(digest, principal.digest):
                found = principal
        return found

    def accepts(self, presented: str) -> bool:
        return self.identify(presented) is not None


class RateLimiter:
    """A token bucket per access token: `burst` requests at once, refilled at `rate` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, max(1, burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, now: float) -> float:
        """Spend one request; return 0 when allowed, else the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        with self._lock:
            level, last = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1.0 - level) / self.rate
