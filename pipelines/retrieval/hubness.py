"""Dense hubness: a chunk close to everything is discounted in the dense list (`dense_hubness=csls`).

Some chunks sit near every question in embedding space (a changelog's one-line entries name every function of a
library; an API index lists them all), and dense search ranks them high for most questions. Cross-domain similarity
local scaling (CSLS, Conneau et al. 2018) discounts each candidate by its mean similarity to its own nearest
neighbours: here a chunk's hubness is the mean cosine between its vector and its `NEIGHBOURS` most similar other chunks
of the same strategy and language, and a dense hit's score becomes its cosine less half its hubness (the CSLS score,
2 cos - r_question - r_chunk, up to a constant per question, halved). No weight is fitted. docs/decisions/hubness.md.

The figures are computed once per index version (and caller's view of it) from the vectors in the data dir's
embedding cache, which the build filled; a view whose chunks are mostly missing from the cache (an index built
elsewhere) gets no discount, with a warning, rather than a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import structlog

from pipelines.caching.built_once import BuiltOnce
from pipelines.caching.embeddings import EmbeddingCache
from pipelines.documents import chunk_key
from pipelines.ingestion.dense_units import embedding_text
from pipelines.ports import Embedder, Ranked, VectorIndex

log = structlog.get_logger(__name__)

NEIGHBOURS = 10  # CSLS's usual k
BLOCK = 512  # rows compared at once: memory BLOCK x chunks
MIN_CACHED_SHARE = 0.5  # below this share of a view's chunks with a cached vector, no discount

# Each chunk's hubness by its point id (`documents.chunk_key`) for one language lane; None: no discount.
Hubness = Callable[[str | None], Mapping[str, float] | None]


def neighbour_similarity(vectors: np.ndarray, k: int = NEIGHBOURS) -> np.ndarray:
    """Each row's mean cosine to its `k` most similar other rows (fewer when there are fewer rows)."""
    count = len(vectors)
    if count < 2:
        return np.zeros(count)
    unit = np.asarray(vectors, dtype=np.float32)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    k = min(k, count - 1)
    out = np.empty(count)
    for start in range(0, count, BLOCK):
        sims = unit[start : start + BLOCK] @ unit.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf  # not its own neighbour
        out[start : start + BLOCK] = np.partition(sims, count - k, axis=1)[:, count - k :].mean(axis=1)
    return out


def penalised(hits: Sequence[Ranked], hubness: Mapping[str, float] | None) -> list[Ranked]:
    """The dense hits with each score less half its chunk's hubness, best first; a chunk without a figure counts
    the mean."""
    if not hubness:
        return list(hits)
    typical = float(np.mean(list(hubness.values())))
    rescored = [replace(h, score=h.score - hubness.get(h.key, typical) / 2) for h in hits]
    return sorted(rescored, key=lambda h: -h.score)


class HubnessCache:
    """One table per (index version, caller's view, strategy, language), built on first use from the embedding
    cache in `data_dir`; the oldest are dropped."""

    def __init__(self, data_dir: Path, keep: int = 8) -> None:
        self.cache_path = data_dir / "embedding_cache.sqlite"
        self._tables: BuiltOnce[tuple[str, str, str | None, str | None], dict[str, float] | None] = BuiltOnce(keep)

    def source(self, version: str, index: VectorIndex, strategy: str | None, embedder: Embedder) -> Hubness:
        """The plan's hubness: per language lane, the table of this version's chunks as `index` shows them."""

        def of(language: str | None) -> Mapping[str, float] | None:
            key = (version, index.access_key, strategy, language)
            return self._tables.get(key, lambda: self._build(version, index, strategy, language, embedder))

        return of

    def _build(
        self, version: str, index: VectorIndex, strategy: str | None, language: str | None, embedder: Embedder
    ) -> dict[str, float] | None:
        chunks = index.scroll_chunks(strategy, language)
        if not chunks or not self.cache_path.exists():
            return None
        fingerprint = embedder.fingerprint.digest  # type: ignore[attr-defined]
        cache = EmbeddingCache(self.cache_path, fingerprint, embedder.dimension)
        try:
            found = cache.lookup([embedding_text(c) for c in chunks])
        finally:
            cache.close()
        if len(found) < MIN_CACHED_SHARE * len(chunks):
            log.warning("dense_hubness_unavailable", version=version, cached=len(found), chunks=len(chunks))
            return None
        held = sorted(found)
        figures = neighbour_similarity(np.stack([found[i] for i in held]))
        log.info("dense_hubness_built", version=version, strategy=strategy, language=language, chunks=len(held))
        return {chunk_key(chunks[i].chunk_id): float(v) for i, v in zip(held, figures, strict=True)}
