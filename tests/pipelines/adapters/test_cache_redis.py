from __future__ import annotations

import time
import uuid

import pytest

from pipelines.adapters.redis_cache import CacheUnavailable, RedisCache


def test_set_get_and_expiry(backend: dict[str, str]) -> None:
    cache = RedisCache(backend["redis"])
    key = f"test:{uuid.uuid4().hex}"
    assert cache.get(key) is None
    cache.set(key, {"answer": "7420"}, ttl_seconds=1)
    assert cache.get(key) == {"answer": "7420"}
    time.sleep(1.2)
    assert cache.get(key) is None


def test_flush_prefix_removes_only_its_keys(backend: dict[str, str]) -> None:
    cache = RedisCache(backend["redis"])
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    for i in range(3):
        cache.set(f"{prefix}:exact:{i}", {"i": i}, 60)
    cache.set(f"{prefix}x:other", {"keep": True}, 60)
    assert cache.flush_prefix(f"{prefix}:") == 3
    assert cache.get(f"{prefix}x:other") == {"keep": True}


def test_unreachable_redis_raises_cache_unavailable() -> None:
    cache = RedisCache("redis://127.0.0.1:1/0")
    assert cache.ping() is False
    with pytest.raises(CacheUnavailable):
        cache.get("anything")
