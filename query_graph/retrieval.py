"""Retrieval nodes: query embedding, dense and BM25 candidates, and their fusion.

Variants (config, overridable per request): `retrieval` = hybrid | dense | bm25, `bm25_engine` =
qdrant (sparse vectors with IDF) | memory (rank-bm25 over the shard's payloads), `fusion` = rrf |
weighted_rrf | dbsf. The same choices are bundled into a `RetrievalPlan`, so CRAG can run the whole
retrieval again for a rewritten query without a second graph.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from hamilton.function_modifiers import config

from pipelines import bm25
from pipelines.bm25_memory import MemoryBM25Cache
from pipelines.documents import Chunk
from pipelines.fusion import fuse
from pipelines.ports import Embedder, Ranked, StoreUnavailable, VectorIndex

# BM25 searches overlap the query embedding here; a few threads serve concurrent requests.
_BM25_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bm25")


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

    def dense(self, embedding: np.ndarray) -> list[Ranked]:
        return self.vector_index.dense_ranked(embedding, self.candidates, self.strategy, self.language)

    def sparse(self, question: str) -> list[Ranked]:
        if self.bm25_engine == "memory":
            engine = self.bm25_memory.engine(self.index_version, self.vector_index, self.strategy, self.language)
            return [Ranked(h.chunk.chunk_id, h.score) for h in engine.search(question, self.candidates)]
        return self.vector_index.sparse_ranked(
            bm25.query_vector(question), self.candidates, self.strategy, self.language
        )

    def fused(self, dense: list[Ranked], sparse: list[Ranked]) -> list[Candidate]:
        """Fuse the chosen lists, then read only the kept chunks' payloads (one store call)."""
        lists = {"hybrid": [dense, sparse], "dense": [dense], "bm25": [sparse]}[self.retrieval]
        ranked = [[(h.chunk_id, h.score) for h in hits] for hits in lists]
        kept = fuse(self.fusion, ranked, k=self.rrf_k, weights=list(self.fusion_weights)[: len(ranked)])[: self.keep]
        chunks = {c.chunk_id: c for c in self.vector_index.get_chunks([cid for cid, _ in kept])}
        return _candidates(kept, chunks, dense, sparse)

    def sparse_soon(self, question: str) -> Future[list[Ranked]] | None:
        """The BM25 search started on a worker thread, so it runs while the query is embedded (onnxruntime
        releases the GIL); None when this retrieval does not use BM25."""
        if self.retrieval == "dense":
            return None
        return _BM25_POOL.submit(contextvars.copy_context().run, self.sparse, question)

    def run(self, question: str) -> list[Candidate]:
        """A whole retrieval pass (CRAG's second try uses it): BM25 overlaps the embedding."""
        pending = self.sparse_soon(question)
        dense = self.dense(self.embedder.embed_query(question)) if self.retrieval != "bm25" else []
        sparse = pending.result() if pending is not None else []
        return self.fused(dense, sparse)


def _candidates(
    kept: list[tuple[str, float]], chunks: dict[str, Chunk], dense_hits: list[Ranked], bm25_hits: list[Ranked]
) -> list[Candidate]:
    """Candidates in fused order, each with every retriever's own rank and score."""
    dense = {h.chunk_id: (rank, h.score) for rank, h in enumerate(dense_hits, start=1)}
    sparse = {h.chunk_id: (rank, h.score) for rank, h in enumerate(bm25_hits, start=1)}
    missing = [cid for cid, _ in kept if cid not in chunks]
    if missing:  # a point without its payload: the shard is damaged, do not answer from half of it
        raise StoreUnavailable(f"chunks {missing[:3]} were found by search but cannot be read")
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
        for rank, (chunk_id, score) in enumerate(kept, start=1)
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
    )


def query_embedding(question: str, embedder: Embedder) -> np.ndarray:
    """The question embedded with the active index's model (the service checked the fingerprint)."""
    return embedder.embed_query(question)


def dense_hits(query_embedding: np.ndarray, retrieval_plan: RetrievalPlan) -> list[Ranked]:
    return retrieval_plan.dense(query_embedding)


def bm25_prefetch(question: str, retrieval_plan: RetrievalPlan) -> Future[list[Ranked]] | None:
    """BM25 started before the query embedding (the front half asks for this node first), so
    retrieval costs little more than the embedding. If the front half ends the request early (topic
    gate, semantic cache), the result is simply never read."""
    return retrieval_plan.sparse_soon(question)


def bm25_hits(question: str, retrieval_plan: RetrievalPlan, bm25_prefetch: Future[list[Ranked]] | None) -> list[Ranked]:
    """The prefetched BM25 hits (this node's time is the wait beyond the embedding), or a search now."""
    if bm25_prefetch is None:
        return retrieval_plan.sparse(question)
    return bm25_prefetch.result()


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
