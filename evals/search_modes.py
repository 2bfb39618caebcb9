"""The retrieval modes an evaluation compares, run straight against an opened index version.

dense = the vector store's dense search; bm25 = its sparse search; hybrid = fusion of both lists
(RRF by default); hybrid+rerank = the hybrid top `rerank_depth` re-ordered by a cross-encoder.
The query embedding is computed once per question by the caller and shared by every mode, so a
mode's latency is its own search, fusion and rerank time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipelines import bm25, fusion
from pipelines.documents import Chunk
from pipelines.ports import VectorIndex

MODES = ("dense", "bm25", "hybrid", "hybrid+rerank")

# Scores one question against candidate chunks (higher is more relevant), in the candidates' order.
RerankScorer = Callable[[str, Sequence[Chunk]], Sequence[float]]


@dataclass
class SearchSetup:
    index: VectorIndex
    strategy: str | None
    candidates: int = 30
    rrf_k: int = 60
    fusion: str = "rrf"  # a name of pipelines.fusion.FUSIONS
    fusion_weights: tuple[float, float] | None = None  # weighted_rrf: (dense, bm25)
    rerank: RerankScorer | None = None
    rerank_depth: int = 30
    bm25_analyzer: str = "plain"  # the index's (its sparse vectors were written with it)


@dataclass
class ModeResult:
    chunks: list[Chunk]
    ms: float


def check_modes(modes: Sequence[str], setup: SearchSetup) -> None:
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; known: {list(MODES)}")
    if "hybrid+rerank" in modes and setup.rerank is None:
        raise ValueError("mode hybrid+rerank needs a cross-encoder reranker, and none is available")
    if setup.fusion not in fusion.FUSIONS:
        raise ValueError(f"unknown fusion {setup.fusion!r}; known: {list(fusion.FUSIONS)}")


def _hybrid(question_vector: np.ndarray, sparse: bm25.SparseVector, setup: SearchSetup, depth: int) -> list[Chunk]:
    width = max(setup.candidates, depth)
    dense = setup.index.dense_search(question_vector, width, setup.strategy)
    lexical = setup.index.sparse_search(sparse, width, setup.strategy)
    chunks = {h.chunk.chunk_id: h.chunk for h in [*dense, *lexical]}
    lists = [[(h.chunk.chunk_id, h.score) for h in hits] for hits in (dense, lexical)]
    fused = fusion.fuse(setup.fusion, lists, setup.rrf_k, setup.fusion_weights)
    return [chunks[cid] for cid, _ in fused[:depth]]


def run_mode(mode: str, question: str, question_vector: np.ndarray, setup: SearchSetup, limit: int) -> ModeResult:
    started = time.perf_counter()
    if mode == "dense":
        chunks = [h.chunk for h in setup.index.dense_search(question_vector, limit, setup.strategy)]
    elif mode == "bm25":
        chunks = [
            h.chunk
            for h in setup.index.sparse_search(bm25.query_vector(question, setup.bm25_analyzer), limit, setup.strategy)
        ]
    elif mode == "hybrid":
        chunks = _hybrid(question_vector, bm25.query_vector(question, setup.bm25_analyzer), setup, limit)
    elif mode == "hybrid+rerank":
        assert setup.rerank is not None
        pool = _hybrid(
            question_vector, bm25.query_vector(question, setup.bm25_analyzer), setup, max(limit, setup.rerank_depth)
        )
        head, tail = pool[: setup.rerank_depth], pool[setup.rerank_depth :]
        scores = list(setup.rerank(question, head)) if head else []
        # Stable sort: equal cross-encoder scores keep their fused order.
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        chunks = [head[i] for i in order] + tail
        chunks = chunks[:limit]
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {list(MODES)}")
    return ModeResult(chunks, (time.perf_counter() - started) * 1000)
