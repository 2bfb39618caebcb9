"""Topic gate: how close a question is to what the corpus is about, for the cost of a dot product.

The corpus centroid is the normalised mean of the index's dense chunk vectors. It is computed once
per index version and strategy from the vectors the build left in the embedding cache (the chunks'
texts come from the vector store, their vectors from the cache: no model runs), and kept beside the
calibration in the data dir as `topic_gate/<version>-<strategy>.npy`. `ragline calibrate` embeds the
chunks the cache lacks; at query time a version whose vectors are not cached simply has no gate.

A question whose embedding has a cosine similarity to the centroid below the calibrated floor is
off-topic: the reply is `no_answer` without any retrieval.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import structlog

from pipelines.caching.embeddings import EmbeddingCache
from pipelines.ingestion.dense_units import embedding_text
from pipelines.ports import Embedder, VectorIndex

log = structlog.get_logger(__name__)

MIN_CACHED_SHARE = 0.95  # below this share of cached vectors, a lazily built centroid is not trusted


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    similarity: float | None  # None: no centroid or no floor, the gate is open
    floor: float | None

    def as_reply(self) -> dict[str, float | bool | None]:
        return {
            "passed": self.passed,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "floor": self.floor,
        }


def centroid_of(vectors: np.ndarray) -> np.ndarray:
    mean = np.asarray(vectors, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    if not np.isfinite(norm) or norm == 0.0:
        raise ValueError("cannot take the centroid of no vectors (or of vectors that cancel out)")
    return (mean / norm).astype(np.float32)


def similarity(query: np.ndarray, centroid: np.ndarray) -> float:
    """Cosine similarity of a (normalised) query embedding to the unit centroid."""
    q = np.asarray(query, dtype=np.float32)
    return float(q @ centroid / (float(np.linalg.norm(q)) or 1.0))


def decide(query: np.ndarray, centroid: np.ndarray | None, floor: float | None) -> GateDecision:
    if centroid is None:
        return GateDecision(True, None, floor)
    score = similarity(query, centroid)
    return GateDecision(floor is None or score >= floor, score, floor)


def centroid_path(data_dir: Path, version: str, strategy: str, access_key: str = "*") -> Path:
    """The whole index's centroid, or (`access_key` other than `*`) the centroid of one group set's chunks."""
    if access_key == "*":
        return data_dir / "topic_gate" / f"{version}-{strategy}.npy"
    scope = hashlib.sha256(access_key.encode()).hexdigest()[:12]
    return data_dir / "topic_gate" / f"{version}-{strategy}-groups-{scope}.npy"


def build_centroid(
    index: VectorIndex, strategy: str, embedder: Embedder, cache_path: Path, embed_missing: bool
) -> np.ndarray | None:
    """The centroid of the index's chunks of `strategy`; None when too few vectors are cached and
    `embed_missing` is off (the query path never runs the passage model)."""
    texts = [embedding_text(c) for c in index.scroll_chunks(strategy)]
    if not texts:
        return None
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)  # type: ignore[attr-defined]
    try:
        found = cache.lookup(texts)
        missing = [i for i in range(len(texts)) if i not in found]
        if missing and embed_missing:
            fresh = embedder.embed_passages([texts[i] for i in missing])
            cache.store([texts[i] for i in missing], fresh)
            found.update({i: fresh[j] for j, i in enumerate(missing)})
    finally:
        cache.close()
    if len(found) < MIN_CACHED_SHARE * len(texts):
        log.warning("topic_gate_centroid_unavailable", cached=len(found), chunks=len(texts))
        return None
    return centroid_of(np.stack([found[i] for i in sorted(found)]))


class Centroids:
    """Per-process memo of centroids, read from the data dir or built lazily from the embedding cache."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._known: dict[tuple[str, str, str], np.ndarray | None] = {}
        self._lock = threading.Lock()

    def get(self, version: str, strategy: str, index: VectorIndex, embedder: Embedder) -> np.ndarray | None:
        """The centroid of what `index` holds: a caller's view (`VectorIndex.restricted`) has its own, of the
        chunks it may read, so a restricted page never moves the gate of a caller outside its groups."""
        key = (version, strategy, index.access_key)
        with self._lock:
            if key not in self._known:
                self._known[key] = self._load_or_build(version, strategy, index, embedder)
            return self._known[key]

    def _load_or_build(self, version: str, strategy: str, index: VectorIndex, embedder: Embedder) -> np.ndarray | None:
        path = centroid_path(self.data_dir, version, strategy, index.access_key)
        if path.exists():
            return np.load(path)
        try:
            centroid = build_centroid(index, strategy, embedder, self.data_dir / "embedding_cache.sqlite", False)
        except Exception as exc:  # the gate is an optimisation: without a centroid it stays open
            log.warning("topic_gate_centroid_failed", version=version, error=str(exc))
            return None
        if centroid is not None:
            save_centroid(path, centroid)
        return centroid


def save_centroid(path: Path, centroid: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, centroid)
    tmp.replace(path)  # atomic: a concurrent reader sees the old file or the new one
