"""Cache nodes: the exact cache (Redis) and the semantic cache (question vectors in Qdrant Edge,
answers in Redis under the exact-cache key of the question that produced them).

The namespace holds everything that changes an answer (DESIGN.md: content version, embedding
fingerprint, strategy, retrieval profile, prompt version, generator model, answer token limit) plus
the calibration in force and a digest of the query code's logic (in the retrieval profile, `back_half.code_digest`),
so a new index, model, prompt, limit, threshold or ragline version misses old entries without a flush.
Caches fail open: an unreachable Redis or shard is a `bypass`, never an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from pipelines.adapters.redis_cache import CacheUnavailable
from pipelines.caching.semantic import SemanticCacheUnavailable, SemanticIndex, lexical_signature
from pipelines.ports import Cache
from pipelines.text.language import LanguageGuess

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class CacheLookup:
    reply: dict[str, Any] | None
    status: str  # "hit", "semantic_hit", "miss", "bypass" (cache unreachable) or "off"
    similarity: float | None = None


@dataclass(frozen=True)
class SemanticSetup:
    """The semantic cache of the active index version, and the threshold in force (None: off)."""

    cache: SemanticIndex | None
    threshold: float | None
    unavailable: str | None = None  # why the shard could not be opened, when it could not

    @property
    def active(self) -> bool:
        return self.threshold is not None and (self.cache is not None or self.unavailable is not None)


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
    calibration_version: str,
    access_key: str = "*",
) -> str:
    """Everything that changes an answer, the caller's access groups included: an answer written from a page
    one caller may read is never served to a caller who may not (`pipelines/access.py`)."""
    parts = [index_version, index_fingerprint, strategy, retrieval_profile, prompt_version, generator_model]
    return json.dumps([*parts, answer_max_tokens, calibration_version, *([access_key] if access_key != "*" else [])])


def exact_cache_key(
    normalized_question: str, cache_namespace: str, cache_prefix: str, guardrail_language: LanguageGuess | None = None
) -> str:
    """The key of the question's answer. The language joins it only when it came from speech and differs
    from what the words alone give: then the nodes after the gate see another language than a typed
    question with the same words would (coverage reads it), so the two must not share an answer. A
    spoken question whose language its words confirm shares the typed question's entry."""
    text = f"{cache_namespace}\x00{normalized_question}" + _language_part(guardrail_language)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{cache_prefix}:exact:{digest}"


def exact_cache_lookup(exact_cache_key: str, cache: Cache) -> CacheLookup:
    try:
        cached = cache.get(exact_cache_key)
    except CacheUnavailable:
        return CacheLookup(None, "bypass")
    return CacheLookup(cached, "hit" if cached is not None else "miss")


def _language_part(guardrail_language: LanguageGuess | None) -> str:
    """The language, when it is not the one the question's words give (see `exact_cache_key`)."""
    if guardrail_language is not None and guardrail_language.overrides_text:
        return f"\x00language={guardrail_language.language}"
    return ""


def semantic_namespace(cache_namespace: str, cache_prefix: str, guardrail_language: LanguageGuess | None = None) -> str:
    """The exact-cache namespace within this deployment's prefix (answers live under prefixed keys), with
    the language on the same rule as the exact key: an answer given under a stated or spoken language
    that overrides the words is matched only by questions asked under that language."""
    return f"{cache_prefix}\x00{cache_namespace}" + _language_part(guardrail_language)


def semantic_cache_lookup(
    question: str,
    query_embedding: np.ndarray,
    semantic_setup: SemanticSetup,
    semantic_namespace: str,
    exact_cache_lookup: CacheLookup,
    cache: Cache,
) -> CacheLookup:
    """The answer of the nearest earlier question of this namespace with the same lexical signature."""
    if not semantic_setup.active:
        return CacheLookup(None, "off")
    if semantic_setup.cache is None or exact_cache_lookup.status == "bypass":
        return CacheLookup(None, "bypass")
    assert semantic_setup.threshold is not None
    try:
        match = semantic_setup.cache.nearest(
            query_embedding, semantic_namespace, lexical_signature(question), semantic_setup.threshold
        )
        if match is None:
            return CacheLookup(None, "miss")
        cached = cache.get(match.exact_key)
    except (SemanticCacheUnavailable, CacheUnavailable) as exc:
        log.warning("semantic_cache_bypass", error=str(exc))
        return CacheLookup(None, "bypass")
    if cached is None:  # the answer expired from Redis: the vector has nothing left to point at
        semantic_setup.cache.forget(match.point_id)
        return CacheLookup(None, "miss")
    return CacheLookup(cached, "semantic_hit", round(match.similarity, 4))
