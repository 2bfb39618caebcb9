"""Retrieval nodes: query embedding, dense and BM25 candidates, reciprocal rank fusion."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines import bm25
from pipelines.documents import Chunk
from pipelines.fusion import reciprocal_rank_fusion
from pipelines.ports import Embedder, Hit, VectorIndex


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk
    fused_rank: int
    fused_score: float
    dense_rank: int | None
    dense_score: float | None
    bm25_rank: int | None
    bm25_score: float | None

    def as_dict(self) -> dict[str, object]:
        c = self.chunk
        return {
            "chunk_id": c.chunk_id,
            "document_id": c.document_id,
            "title": c.title,
            "anchor": c.anchor,
            "heading_path": c.heading_path,
            "source_uri": c.source_uri,
            "fused_rank": self.fused_rank,
            "fused_score": round(self.fused_score, 6),
            "dense_rank": self.dense_rank,
            "dense_score": None if self.dense_score is None else round(self.dense_score, 6),
            "bm25_rank": self.bm25_rank,
            "bm25_score": None if self.bm25_score is None else round(self.bm25_score, 6),
        }


def query_embedding(question: str, embedder: Embedder) -> np.ndarray:
    """The question embedded with the active index's model (the service checked the fingerprint)."""
    return embedder.embed_query(question)


def dense_hits(query_embedding: np.ndarray, vector_index: VectorIndex, candidates: int, strategy: str) -> list[Hit]:
    return vector_index.dense_search(query_embedding, candidates, strategy)


def bm25_query(question: str) -> bm25.SparseVector:
    return bm25.query_vector(question)


def bm25_hits(bm25_query: bm25.SparseVector, vector_index: VectorIndex, candidates: int, strategy: str) -> list[Hit]:
    return vector_index.sparse_search(bm25_query, candidates, strategy)


def fused_candidates(dense_hits: list[Hit], bm25_hits: list[Hit], rrf_k: int, top_k: int) -> list[Candidate]:
    """Reciprocal rank fusion of the dense and BM25 lists, keeping each list's rank and score."""
    chunks = {h.chunk.chunk_id: h.chunk for h in [*dense_hits, *bm25_hits]}
    dense = {h.chunk.chunk_id: (rank, h.score) for rank, h in enumerate(dense_hits, start=1)}
    sparse = {h.chunk.chunk_id: (rank, h.score) for rank, h in enumerate(bm25_hits, start=1)}
    fused = reciprocal_rank_fusion([list(dense), list(sparse)], k=rrf_k)[:top_k]
    return [
        Candidate(
            chunk=chunks[chunk_id],
            fused_rank=rank,
            fused_score=score,
            dense_rank=dense.get(chunk_id, (None, None))[0],
            dense_score=dense.get(chunk_id, (None, None))[1],
            bm25_rank=sparse.get(chunk_id, (None, None))[0],
            bm25_score=sparse.get(chunk_id, (None, None))[1],
        )
        for rank, (chunk_id, score) in enumerate(fused, start=1)
    ]
