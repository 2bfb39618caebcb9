"""Redis adapter for the answer caches. Callers treat every error as a miss (caches fail open)."""

from __future__ import annotations

import json
from typing import Any

import redis


class CacheUnavailable(RuntimeError):
    """Redis could not be reached; the caller computes the reply and marks it `cache: bypass`."""


class RedisCache:
    def __init__(self, url: str, timeout_seconds: float = 0.25) -> None:
        self.url = url
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds, retry_on_timeout=False
        )

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self._client.get(key)
        except redis.RedisError as exc:
            raise CacheUnavailable(str(exc)) from exc
        return json.loads(raw) if raw else None

    def set(self, key: str, value: dict[str, Any], ttl_seconds: int) -> None:
        try:
            self._client.set(key, json.dumps(value), ex=ttl_seconds)
        except redis.RedisError as exc:
            raise CacheUnavailable(str(exc)) from exc

    def flush_prefix(self, prefix: str) -> int:
        deleted = 0
        try:
            for key in self._client.scan_iter(match=f"{prefix}*", count=500):
                deleted += int(self._client.delete(key))
        except redis.RedisError as exc:
            raise CacheUnavailable(str(exc)) from exc
        return deleted

    def ping(self) -> bool:
        try:
            return bool(self._client.ping())
        except redis.RedisError:
            return False
