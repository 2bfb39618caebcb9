"""Semantic cache: the nearest earlier question, when it is close enough, shares its answer.

Redis here has no vector search, so the question vectors live in the vector store: a small Qdrant
Edge shard per index version in the data dir (`semantic_cache/<version>`). A point holds a question's
vector and, as payload, the exact-cache key under which Redis keeps the answer, a digest of the cache
namespace (so a new prompt, model or retrieval profile never reuses an old answer) and the question's
lexical signature (`lexical_signature`): two questions that differ in an identifier, a number, a
content word or a negation never share an answer, however close their vectors.

Like every cache it fails open: a shard that cannot be opened or read makes the lookup a bypass.
Qdrant Edge holds a lock on an open shard, so one process per data dir owns it; other processes on
the same data dir (several server workers) see `SemanticCacheUnavailable` and bypass the semantic
cache, while the exact cache in Redis stays shared by all of them.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import qdrant_edge as qe
import structlog

from pipelines.text.analysis import FUNCTION_WORDS

log = structlog.get_logger(__name__)

VECTOR = "question"
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "without", "nor", "neither"})
_KEY_TERM = re.compile(r"`[^`]+`|[\w./:-]*(?:\d|_|[a-z][A-Z]|\.[a-z]|/|::|--)[\w./:-]*")


class SemanticCacheUnavailable(RuntimeError):
    """The semantic cache shard cannot be opened or read; callers bypass it."""


@dataclass(frozen=True)
class SemanticMatch:
    similarity: float
    exact_key: str
    point_id: str


def key_terms(question: str) -> list[str]:
    """Identifiers, numbers, paths and flags of a question: what must match for two to share an answer."""
    return sorted({t.strip("`.,;:?!()'\"").lower() for t in _KEY_TERM.findall(question)} - {""})


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and not word.endswith("ss"):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def lexical_signature(question: str) -> str:
    """What two questions must share, besides close vectors, to share an answer: the same key terms,
    the same content words (function words and plural endings aside) and the same negation.

    Embedding similarity alone cannot tell minimal pairs apart: with bge-small, "How do I declare a
    query parameter as optional?" and "... as required?" score above 0.99 (docs/operations.md). So the
    semantic cache only reuses an answer for a rewording: other word order, other function words,
    politeness, punctuation, singular/plural; a paraphrase with other content words is a miss.
    """
    words = re.findall(r"[^\W_]+(?:'[a-z]+)?", question.lower())
    negations = sum(w in _NEGATIONS or w.endswith("n't") for w in words)
    content = sorted(
        {_stem(w) for w in words if w not in FUNCTION_WORDS and w not in _NEGATIONS and not w.endswith("n't")}
    )
    return "|".join(key_terms(question)) + "#" + " ".join(content) + f"#neg{negations % 2}"


def namespace_digest(namespace: str) -> str:
    return hashlib.sha256(namespace.encode()).hexdigest()[:32]


class SemanticIndex(Protocol):
    """Where question vectors are kept: a Qdrant Edge shard of this process (`SemanticCache`) or a table every
    process shares (`pipelines.caching.semantic_postgres.PostgresSemanticCache`)."""

    def nearest(self, vector: np.ndarray, namespace: str, signature: str, threshold: float) -> SemanticMatch | None: ...

    def add(self, vector: np.ndarray, namespace: str, signature: str, exact_key: str) -> None: ...

    def forget(self, point_id: str) -> None: ...

    def count(self) -> int: ...


class SemanticCache:
    def __init__(self, path: Path, dimension: int) -> None:
        self.path, self.dimension = path, dimension
        self._lock = threading.Lock()
        try:
            if (path / "edge_config.json").exists():
                self._shard = qe.EdgeShard.load(str(path))
            else:
                path.mkdir(parents=True, exist_ok=True)
                config = qe.EdgeConfig(
                    vectors={VECTOR: qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine)}
                )
                self._shard = qe.EdgeShard.create(str(path), config)
                for field in ("namespace", "signature"):
                    self._shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        except Exception as exc:  # locked by another process, or damaged
            raise SemanticCacheUnavailable(f"semantic cache {path} cannot be opened: {exc}") from exc

    def nearest(self, vector: np.ndarray, namespace: str, signature: str, threshold: float) -> SemanticMatch | None:
        """The closest cached question of this namespace with the same lexical signature, at or above `threshold`."""
        must: list[Any] = [
            qe.FieldCondition(key="namespace", match=qe.MatchValue(namespace_digest(namespace))),
            qe.FieldCondition(key="signature", match=qe.MatchValue(signature)),
        ]
        request = qe.QueryRequest(
            limit=1,
            query=qe.Query.Nearest(vector.astype(float).tolist(), using=VECTOR),
            filter=qe.Filter(must=must),
            with_payload=True,
            score_threshold=threshold,
        )
        try:
            with self._lock:
                points = self._shard.query(request)
        except Exception as exc:
            raise SemanticCacheUnavailable(f"semantic cache query failed: {exc}") from exc
        if not points or points[0].score < threshold:
            return None
        payload = points[0].payload or {}
        return SemanticMatch(float(points[0].score), str(payload["key"]), str(points[0].id))

    def add(self, vector: np.ndarray, namespace: str, signature: str, exact_key: str) -> None:
        point = qe.Point(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, exact_key)),
            vector={VECTOR: vector.astype(float).tolist()},
            payload={
                "namespace": namespace_digest(namespace),
                "signature": signature,
                "key": exact_key,
                "created": int(time.time()),
            },
        )
        try:
            with self._lock:
                self._shard.update(qe.UpdateOperation.upsert_points([point]))
        except Exception as exc:
            raise SemanticCacheUnavailable(f"semantic cache write failed: {exc}") from exc

    def forget(self, point_id: str) -> None:
        """Drop a point whose answer expired from Redis."""
        try:
            with self._lock:
                self._shard.update(qe.UpdateOperation.delete_points([point_id]))
        except Exception as exc:
            log.warning("semantic_cache_forget_failed", error=str(exc))

    def count(self) -> int:
        with self._lock:
            return int(self._shard.count(qe.CountRequest(exact=True)))

    def close(self) -> None:
        with self._lock:
            try:
                self._shard.flush()
            finally:
                self._shard.close()


_OPEN: dict[Path, SemanticCache] = {}
_OPEN_LOCK = threading.Lock()


def open_semantic_cache(root: Path, version: str, dimension: int) -> SemanticCache:
    """The process-wide handle of a version's shard (Qdrant Edge allows one open handle per shard)."""
    path = (root / version).resolve()
    with _OPEN_LOCK:
        cache = _OPEN.get(path)
        if cache is None:
            cache = SemanticCache(path, dimension)
            _OPEN[path] = cache
        return cache


def close_semantic_caches() -> None:
    with _OPEN_LOCK:
        for cache in _OPEN.values():
            cache.close()
        _OPEN.clear()
