"""Access tokens: kept hashed in memory, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from pipelines.settings import Settings


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


class TokenStore:
    def __init__(self, tokens: list[str]) -> None:
        self._digests = [token_digest(t) for t in tokens]

    def accepts(self, presented: str) -> bool:
        digest = token_digest(presented)
        # Compare against every digest so timing does not reveal which (or whether any) matched early.
        results = [hmac.compare_digest(digest, known) for known in self._digests]
        return any(results)
