"""Token buckets in Redis: one rate limit shared by every server process.

Each bucket is a Redis hash (`<prefix>:<key>`: level, last refill) updated by one Lua script, so a request on
any process spends from the same bucket, atomically, on Redis's own clock (processes' clocks may differ). A
bucket left alone expires once it would be full again. Redis out of reach raises `RateStoreUnavailable`; the
server then limits with its own in-process bucket (`server/tokens.py`), never refuses for want of Redis.
"""

from __future__ import annotations

import redis

_TAKE = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'level', 'at')
local level, at = tonumber(state[1]) or burst, tonumber(state[2]) or now
level = math.min(burst, level + math.max(0, now - at) * rate)
local wait = 0
if level >= 1 then level = level - 1 else wait = (1 - level) / rate end
redis.call('HSET', KEYS[1], 'level', tostring(level), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class RateStoreUnavailable(RuntimeError):
    """Redis could not be reached; the caller limits in its own process instead."""


class RedisTokenBuckets:
    def __init__(self, url: str, prefix: str, timeout_seconds: float = 0.1) -> None:
        self.prefix = prefix
        self._client = redis.Redis.from_url(
            url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds, retry_on_timeout=False
        )
        self._take = self._client.register_script(_TAKE)

    def take(self, key: str, rate: float, burst: int) -> float:
        """Spend one request from the bucket of `key`; 0 when allowed, else the seconds until one is available."""
        try:
            return float(self._take(keys=[f"{self.prefix}:{key}"], args=[rate, max(1, burst)]))
        except redis.RedisError as exc:
            raise RateStoreUnavailable(str(exc)) from exc
