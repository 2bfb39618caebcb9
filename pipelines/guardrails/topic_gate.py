"""Topic gate: how close a question is to what the corpus is about, for the cost of a dot product.

The corpus centroid is the normalised mean of the index's dense chunk vectors. It is computed once
per index version and strategy from the vectors the build left in the embedding cache (the chunks'
texts come from the vector store, their vectors from the cache: no model runs), and kept beside the
calibration in the data dir as `topic_gate/<version>-<strategy>.npy`. `ragline calibrate` embeds the
chunks the cache lacks; at query time a version whose vectors are not cached simply has no gate.

A question whose embedding has a cosine similarity to the centroid below the calibrated floor is
off-topic: the reply is `no_answer` without any retrieval.

Without a calibration there is no floor. The reference rule (`RAGLINE_TOPIC_REFERENCE`) needs none: an English
question is off-topic when it is nearer the centroid of a fixed set of general-knowledge passages
(`data/general_reference.txt`: cooking, cars, health, travel and some forty other everyday subjects, nothing about
software) than the corpus centroid. Both are centroids of passage embeddings, so the two similarities are on one
scale and the rule has no number to fit. It is off by default: it also declines some answerable keyword queries
(docs/decisions/topic-reference.md). With it on, the build stores the passages' vectors in the embedding cache (the
`reference_vectors` asset); the centroid is kept as `topic_gate/reference-<model>-<passages>.npy`.
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
REFERENCE_FILE = Path(__file__).resolve().parent / "data" / "general_reference.txt"
REFERENCE_LANGUAGE = "en"  # the passages' language: a question in another one is not compared with them


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    similarity: float | None  # None: no centroid or no floor, the gate is open
    floor: float | None
    reference_similarity: float | None = None  # to the general-knowledge centroid; None: the rule did not run

    def as_reply(self) -> dict[str, float | bool | None]:
        reply: dict[str, float | bool | None] = {
            "passed": self.passed,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "floor": self.floor,
        }
        if self.reference_similarity is not None:
            reply["reference_similarity"] = round(self.reference_similarity, 4)
        return reply


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


def decide(
    query: np.ndarray, centroid: np.ndarray | None, floor: float | None, reference: np.ndarray | None = None
) -> GateDecision:
    """Off-topic below the floor, or (with a `reference` centroid) nearer the reference than the corpus."""
    if centroid is None:
        return GateDecision(True, None, floor)
    score = similarity(query, centroid)
    near_reference = None if reference is None else similarity(query, reference)
    passed = (floor is None or score >= floor) and (near_reference is None or score >= near_reference)
    return GateDecision(passed, score, floor, near_reference)


def reference_passages(path: Path = REFERENCE_FILE) -> list[str]:
    """The general-knowledge passages of the reference rule: one a line, `#` lines are comments."""
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return list(dict.fromkeys(line for line in lines if line and not line.startswith("#")))


def reference_path(data_dir: Path, fingerprint: str, passages: list[str]) -> Path:
    digest = hashlib.sha256("\n".join(passages).encode()).hexdigest()[:12]
    return data_dir / "topic_gate" / f"reference-{fingerprint[:16]}-{digest}.npy"


def reference_centroid(embedder: Embedder, cache_path: Path, passages: list[str]) -> np.ndarray:
    """The centroid of the reference passages' vectors, read from the embedding cache; those it lacks (an index
    built before the `reference_vectors` asset existed) are embedded once and stored there."""
    found = _cached_vectors(passages, embedder, cache_path, embed_missing=True, event="topic_reference_embedding")
    return centroid_of(np.stack([found[i] for i in range(len(passages))]))


def _cached_vectors(
    texts: list[str], embedder: Embedder, cache_path: Path, embed_missing: bool, event: str | None = None
) -> dict[int, np.ndarray]:
    """The vectors of `texts` the embedding cache holds, by position; with `embed_missing`, those it lacks are
    embedded and stored there too (logged as `event`, when given, with how many)."""
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)  # type: ignore[attr-defined]
    try:
        found = cache.lookup(texts)
        missing = [i for i in range(len(texts)) if i not in found]
        if missing and embed_missing:
            if event:
                log.info(event, passages=len(missing))
            fresh = embedder.embed_passages([texts[i] for i in missing])
            cache.store([texts[i] for i in missing], fresh)
            found.update({i: fresh[j] for j, i in enumerate(missing)})
    finally:
        cache.close()
    return found


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
    found = _cached_vectors(texts, embedder, cache_path, embed_missing)
    if len(found) < MIN_CACHED_SHARE * len(texts):
        log.warning("topic_gate_centroid_unavailable", cached=len(found), chunks=len(texts))
        return None
    return centroid_of(np.stack([found[i] for i in sorted(found)]))


class Centroids:
    """Per-process memo of centroids, read from the data dir or built lazily from the embedding cache."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._known: dict[tuple[str, str, str], np.ndarray | None] = {}
        self._references: dict[str, np.ndarray | None] = {}
        self._lock = threading.Lock()

    def reference(self, embedder: Embedder) -> np.ndarray | None:
        """The general-knowledge centroid for this embedding model; None when it cannot be had (the rule is off)."""
        fingerprint = embedder.fingerprint.digest  # type: ignore[attr-defined]
        with self._lock:
            if fingerprint not in self._references:
                self._references[fingerprint] = self._load_or_build_reference(embedder, fingerprint)
            return self._references[fingerprint]

    def _load_or_build_reference(self, embedder: Embedder, fingerprint: str) -> np.ndarray | None:
        passages = reference_passages()
        path = reference_path(self.data_dir, fingerprint, passages)
        if path.exists():
            return np.load(path)
        try:
            centroid = reference_centroid(embedder, self.data_dir / "embedding_cache.sqlite", passages)
        except Exception as exc:  # like the corpus centroid: without it the rule stays open
            log.warning("topic_reference_unavailable", error=str(exc))
            return None
        save_centroid(path, centroid)
        return centroid

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
