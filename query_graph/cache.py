"""Exact-cache nodes. The namespace holds everything that changes an answer (DESIGN.md), so a new
index, model, prompt or limit misses old entries without a flush. Caches fail open."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pipelines.cache_redis import CacheUnavailable
from pipelines.ports import Cache


@dataclass(frozen=True)
class CacheLookup:
    reply: dict[str, Any] | None
    status: str  # "hit", "miss" or "bypass" (the cache could not be reached)


def normalized_question(question: str) -> str:
    return " ".join(question.lower().split())


def cache_namespace(
    index_version: str,
    index_fingerprint: str,
    strategy: str,
    retrieval_profile: str,
    prompt_version: str,
    generator_model: str,
    answer_max_tokens: int,
) -> str:
    parts = [index_version, index_fingerprint, strategy, retrieval_profile, prompt_version, generator_model]
    return json.dumps([*parts, answer_max_tokens])


def exact_cache_key(normalized_question: str, cache_namespace: str, cache_prefix: str) -> str:
    digest = hashlib.sha256(f"{cache_namespace}\x00{normalized_question}".encode()).hexdigest()
    return f"{cache_prefix}:exact:{digest}"


def exact_cache_lookup(exact_cache_key: str, cache: Cache) -> CacheLookup:
    try:
        cached = cache.get(exact_cache_key)
    except CacheUnavailable:
        return CacheLookup(None, "bypass")
    return CacheLookup(cached, "hit" if cached is not None else "miss")
