"""The in-memory BM25 engine (`rank-bm25`), an alternative to Qdrant's sparse vectors with IDF.

Its corpus is read from the index's own payloads (so it always matches what the vector store holds)
once per index version, strategy and language, and kept until that version is no longer in use. It
uses the same analyzer as the sparse vectors, so the two engines differ only in how they score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import structlog
from rank_bm25 import BM25Okapi

from pipelines.caching.built_once import BuiltOnce
from pipelines.documents import Chunk, chunk_key
from pipelines.ingestion.dense_units import with_trail
from pipelines.ports import Hit, VectorIndex
from pipelines.text.analysis import analyzer

log = structlog.get_logger(__name__)


@dataclass
class MemoryBM25:
    chunks: list[Chunk]
    engine: BM25Okapi | None  # None for an empty corpus (rank-bm25 cannot index one)
    analyzer_name: str = "plain"
    positions: dict[str, int] = field(default_factory=dict)  # chunk key -> its row in the engine
    _weights: dict[str, dict[str, float]] = field(default_factory=dict)  # term_weights, per chunk key

    @classmethod
    def build(cls, chunks: list[Chunk], analyzer_name: str = "plain") -> MemoryBM25:
        analyze = analyzer(analyzer_name)
        # The text the sparse vectors were written from (pipelines/ingestion/build.py `embedding_text`): the page
        # title and heading path, then the chunk. A title that is not also a heading (a BEIR abstract's,
        # a page whose title comes from front matter) must count in both engines alike.
        corpus = [analyze(with_trail(c, c.text), c.language) for c in chunks]
        positions = {chunk_key(c.chunk_id): row for row, c in enumerate(chunks)}
        return cls(chunks, BM25Okapi(corpus) if chunks else None, analyzer_name, positions)

    @property
    def idf(self) -> Mapping[str, float]:
        return self.engine.idf if self.engine is not None else {}

    def term_counts(self, key: str) -> Mapping[str, int]:
        """How often each analysed term occurs in the chunk (empty for a chunk the engine lacks)."""
        row = self.positions.get(key)
        return self.engine.doc_freqs[row] if self.engine is not None and row is not None else {}

    def term_weights(self, key: str) -> Mapping[str, float]:
        """Each of the chunk's terms weighted by its share of the chunk's terms times its IDF (negative
        IDF, a term in most chunks, counts 0): what BM25 feedback adds up. Computed once per chunk."""
        weights = self._weights.get(key)
        if weights is None:
            counts, idf = self.term_counts(key), self.idf
            total = sum(counts.values()) or 1
            weights = {term: n / total * max(idf.get(term, 0.0), 0.0) for term, n in counts.items()}
            self._weights[key] = weights  # a race computes the same dict twice, harmlessly
        return weights

    def chunks_by_key(self, keys: list[str]) -> dict[str, Chunk]:
        """The chunks of these keys that the engine holds (payloads without a store call)."""
        return {key: self.chunks[row] for key in keys if (row := self.positions.get(key)) is not None}

    def search_weighted(self, weights: Mapping[str, float], limit: int) -> list[Hit]:
        """BM25 with a weight per query term (feedback-expanded queries): the sum of weight x the
        term's BM25 score."""
        if self.engine is None or not weights:
            return []
        scores = np.zeros(len(self.chunks))
        for term, weight in weights.items():
            scores += weight * np.asarray(self.engine.get_scores([term]))
        top = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(self.chunks[i], float(scores[i])) for i in top if scores[i] > 0]

    def search(self, question: str, limit: int, language: str | None = None) -> list[Hit]:
        """`language`: the one the question is analysed in (its lane's chunks')."""
        terms = analyzer(self.analyzer_name)(question, language)
        if self.engine is None or not terms:
            return []
        scores = np.asarray(self.engine.get_scores(terms))
        top = np.argsort(-scores, kind="stable")[:limit]
        return [Hit(self.chunks[i], float(scores[i])) for i in top if scores[i] > 0]


class MemoryBM25Cache:
    """One engine per (index version, caller's access groups, strategy, language), built on first use from the
    chunks the index (or a caller's view of it, `VectorIndex.restricted`) holds; the oldest are dropped."""

    def __init__(self, keep: int = 8) -> None:
        self._engines: BuiltOnce[tuple[str, str, str | None, str | None], MemoryBM25] = BuiltOnce(keep)

    def engine(
        self, version: str, index: VectorIndex, strategy: str | None, language: str | None, analyzer_name: str = "plain"
    ) -> MemoryBM25:
        def build() -> MemoryBM25:
            chunks = index.scroll_chunks(strategy, language)
            log.info(
                "bm25_memory_built",
                version=version,
                access=index.access_key,
                strategy=strategy,
                language=language,
                chunks=len(chunks),
            )
            return MemoryBM25.build(chunks, analyzer_name)

        return self._engines.get((version, index.access_key, strategy, language), build)
