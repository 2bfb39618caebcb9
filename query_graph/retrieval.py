"""Retrieval nodes: query embedding, dense and BM25 candidates, and their fusion.

Variants (config, overridable per request): `retrieval` = hybrid | dense | bm25, `bm25_engine` =
qdrant (sparse vectors with IDF) | memory (rank-bm25 over the shard's payloads), `fusion` = rrf |
weighted_rrf | dbsf. The same choices are bundled into a `RetrievalPlan`, so CRAG can run the whole
retrieval again for a rewritten query without a second graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hamilton.function_modifiers import config

from pipelines import bm25
from pipelines.bm25_memory import MemoryBM25Cache
from pipelines.documents import Chunk, chunk_key
from pipelines.fusion import fuse
from pipelines.ports import Embedder, Ranked, StoreUnavailable, VectorIndex


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk
    fused_rank: int
    fused_score: float
    dense_rank: int | None
    dense_score: float | None
    bm25_rank: int | None
    bm25_score: float | None
    rerank_score: float | None = None
    neighbour_of: str | None = None  # set on a chunk added only because it is adjacent to a hit

    def as_dict(self) -> dict[str, object]:
        c = self.chunk
        out: dict[str, object] = {
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
        if self.rerank_score is not None:
            out["rerank_score"] = round(self.rerank_score, 6)
        if self.neighbour_of is not None:
            out["neighbour_of"] = self.neighbour_of
        return out


@dataclass(frozen=True)
class RetrievalPlan:
    """Everything one retrieval pass needs, fixed for a request."""

    retrieval: str
    bm25_engine: str
    fusion: str
    embedder: Embedder
    vector_index: VectorIndex
    bm25_memory: MemoryBM25Cache
    index_version: str
    strategy: str
    language: str | None
    candidates: int
    keep: int  # candidates kept after fusion (the rerank depth when a reranker follows)
    rrf_k: int
    fusion_weights: tuple[float, ...]
    bm25_analyzer: str = "plain"  # the active index version's, so questions are analysed as its chunks were

    def dense(self, embedding: np.ndarray) -> list[Ranked]:
        return self.vector_index.dense_ranked(embedding, self.candidates, self.strategy, self.language)

    def sparse(self, question: str) -> list[Ranked]:
        if self.bm25_engine == "memory":
            engine = self.bm25_memory.engine(
                self.index_version, self.vector_index, self.strategy, self.language, self.bm25_analyzer
            )
            return [Ranked(chunk_key(h.chunk.chunk_id), h.score) for h in engine.search(question, self.candidates)]
        return self.vector_index.sparse_ranked(
            bm25.query_vector(question, self.bm25_analyzer), self.candidates, self.strategy, self.language
        )

    def fused(self, dense: list[Ranked], sparse: list[Ranked]) -> list[Candidate]:
        """Fuse the chosen lists, then read only the kept chunks' payloads (one store call)."""
        lists = {"hybrid": [dense, sparse], "dense": [dense], "bm25": [sparse]}[self.retrieval]
        ranked = [[(h.key, h.score) for h in hits] for hits in lists]
        kept = fuse(self.fusion, ranked, k=self.rrf_k, weights=list(self.fusion_weights)[: len(ranked)])[: self.keep]
        chunks = self.vector_index.chunks_by_key([key for key, _ in kept])
        return _candidates(kept, chunks, dense, sparse)

    def run(self, question: str) -> list[Candidate]:
        """A whole retrieval pass (CRAG's second try uses it). The BM25 search runs after the embedding,
        not beside it: on 2 cores onnxruntime already uses both, and a search thread next to it made
        retrieval slower (p50 9.7 ms against 9.0 ms in one run; docs/operations.md)."""
        dense = self.dense(self.embedder.embed_query(question)) if self.retrieval != "bm25" else []
        sparse = self.sparse(question) if self.retrieval != "dense" else []
        return self.fused(dense, sparse)


def _candidates(
    kept: list[tuple[str, float]], chunks: dict[str, Chunk], dense_hits: list[Ranked], bm25_hits: list[Ranked]
) -> list[Candidate]:
    """Candidates in fused order, each with every retriever's own rank and score."""
    dense = {h.key: (rank, h.score) for rank, h in enumerate(dense_hits, start=1)}
    sparse = {h.key: (rank, h.score) for rank, h in enumerate(bm25_hits, start=1)}
    missing = [key for key, _ in kept if key not in chunks]
    if missing:  # a point without its payload: the shard is damaged, do not answer from half of it
        raise StoreUnavailable(f"chunks {missing[:3]} were found by search but cannot be read")
    return [
        Candidate(
            chunk=chunks[key],
            fused_rank=rank,
            fused_score=score,
            dense_rank=dense.get(key, (None, None))[0],
            dense_score=dense.get(key, (None, None))[1],
            bm25_rank=sparse.get(key, (None, None))[0],
            bm25_score=sparse.get(key, (None, None))[1],
        )
        for rank, (key, score) in enumerate(kept, start=1)
    ]


def retrieval_plan(
    retrieval: str,
    bm25_engine: str,
    fusion: str,
    rerank: str,
    embedder: Embedder,
    vector_index: VectorIndex,
    bm25_memory: MemoryBM25Cache,
    index_version: str,
    strategy: str,
    candidates: int,
    top_k: int,
    rrf_k: int,
    rerank_depth: int,
    fusion_weights: list[float],
    language_filter: str | None = None,
    bm25_analyzer: str = "plain",
) -> RetrievalPlan:
    return RetrievalPlan(
        retrieval=retrieval,
        bm25_engine=bm25_engine,
        fusion=fusion,
        embedder=embedder,
        vector_index=vector_index,
        bm25_memory=bm25_memory,
        index_version=index_version,
        strategy=strategy,
        language=language_filter,
        candidates=max(candidates, top_k),
        keep=max(rerank_depth, top_k) if rerank != "none" else top_k,
        rrf_k=rrf_k,
        fusion_weights=tuple(fusion_weights),
        bm25_analyzer=bm25_analyzer,
    )


def query_embedding(question: str, embedder: Embedder) -> np.ndarray:
    """The question embedded with the active index's model (the service checked the fingerprint)."""
    return embedder.embed_query(question)


def dense_hits(query_embedding: np.ndarray, retrieval_plan: RetrievalPlan) -> list[Ranked]:
    return retrieval_plan.dense(query_embedding)


def bm25_hits(question: str, retrieval_plan: RetrievalPlan) -> list[Ranked]:
    return retrieval_plan.sparse(question)


@config.when(retrieval="hybrid")
def fused_candidates__hybrid(
    dense_hits: list[Ranked], bm25_hits: list[Ranked], retrieval_plan: RetrievalPlan
) -> list[Candidate]:
    """Dense and BM25 lists fused (RRF k=60 by default; weighted RRF or DBSF as configured)."""
    return retrieval_plan.fused(dense_hits, bm25_hits)


@config.when(retrieval="dense")
def fused_candidates__dense(dense_hits: list[Ranked], retrieval_plan: RetrievalPlan) -> list[Candidate]:
    return retrieval_plan.fused(dense_hits, [])


@config.when(retrieval="bm25")
def fused_candidates__bm25(bm25_hits: list[Ranked], retrieval_plan: RetrievalPlan) -> list[Candidate]:
    return retrieval_plan.fused([], bm25_hits)
