"""The retrieval modes an evaluation compares, run straight against an opened index version.

dense = the vector store's dense search; bm25 = its sparse search; hybrid = fusion of both lists
(RRF by default); hybrid+rerank = the hybrid top `rerank_depth` re-ordered by a cross-encoder.
The query embedding is computed once per question by the caller and shared by every mode, so a
mode's latency is its own search, fusion and rerank time. Each mode searches the question's retrieval
lanes (pipelines/language_lanes.py) as the query graph does: one lane for an index of one language.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipelines import bm25, fusion
from pipelines.bm25_feedback import Feedback
from pipelines.bm25_memory import MemoryBM25Cache
from pipelines.documents import Chunk, chunk_key
from pipelines.guardrails import detect_question_language
from pipelines.language_lanes import Lane, fuse_lanes, lanes
from pipelines.ports import Hit, VectorIndex
from pipelines.settings import Settings
from pipelines.translations import Originals, OriginalsCache

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
    index_languages: tuple[str, ...] = ()  # the index version's
    language_route: str = "question_and_source"
    source_language: str | None = "en"
    language_min_confidence: float = 0.5  # below it the question's language counts as unknown (as the gate's)
    feedback: Feedback = field(
        default_factory=Feedback
    )  # hybrid's BM25 feedback (pipelines/bm25_feedback.py); off by default

    originals: OriginalsCache = field(default_factory=OriginalsCache)
    bm25_memory: MemoryBM25Cache = field(default_factory=MemoryBM25Cache)  # the feedback's term statistics

    @classmethod
    def from_settings(
        cls, settings: Settings, index: VectorIndex, strategy: str | None, **overrides: Any
    ) -> SearchSetup:
        """The retrieval settings a server would search with (one place, so a changed default reaches
        every evaluation); `overrides` for what an evaluation sets itself (its index's analyzer and
        languages, a `--fusion` flag, a reranker)."""
        values: dict[str, Any] = {
            "candidates": settings.candidates,
            "rrf_k": settings.rrf_k,
            "fusion": settings.fusion,
            "fusion_weights": (settings.fusion_weights[0], settings.fusion_weights[1]),
            "rerank_depth": settings.rerank_depth,
            "language_route": settings.language_route,
            "source_language": settings.source_language,
            "language_min_confidence": settings.language_min_confidence,
            "feedback": Feedback.from_settings(settings),
        }
        return cls(index=index, strategy=strategy, **{**values, **overrides})

    def originals_for(self, lanes: Sequence[Lane]) -> Originals | None:
        """The translation table, when a lane lists originals (read from the index once)."""
        source = next((lane.language for lane in lanes if lane.originals and lane.language), None)
        return None if source is None else self.originals.table("eval", self.index, self.strategy, source)

    def lanes(self, question: str) -> tuple[Lane, ...]:
        language = None
        if len(self.index_languages) > 1:  # one language: nothing to route, and no need to detect
            guess = detect_question_language(question)
            language = guess.language if guess.confidence >= self.language_min_confidence else None
        return lanes(self.language_route, language, self.index_languages, self.source_language)


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


def _search(mode: str, question: str, question_vector: np.ndarray, setup: SearchSetup, depth: int) -> list[Chunk]:
    """The mode's lists in every lane of the question, fused as the query graph fuses them."""
    width = max(setup.candidates, depth)
    lanes = setup.lanes(question)
    dense: list[list[Hit]] = []
    sparse: list[list[Hit]] = []
    for lane in lanes:
        meaning = mode != "bm25"
        dense.append(setup.index.dense_search(question_vector, width, setup.strategy, lane.language) if meaning else [])
        lexical = mode != "dense" and lane.lexical
        vector = None
        if lexical and mode == "hybrid" and setup.feedback.on:  # BM25 feedback from the dense top
            vector = _feedback_query(question, lane, dense[-1], setup)
        elif lexical:
            vector = bm25.query_vector(question, setup.bm25_analyzer, lane.analysis_language)
        sparse.append(setup.index.sparse_search(vector, width, setup.strategy, lane.language) if vector else [])
    if mode != "hybrid" and len(dense) == 1:  # one list: its own order, whatever the fusion method
        return [h.chunk for h in (dense if mode == "dense" else sparse)[0][:depth]]
    chunks = {chunk_key(h.chunk.chunk_id): h.chunk for hits in [*dense, *sparse] for h in hits}
    lists = [[[(chunk_key(h.chunk.chunk_id), h.score) for h in hits] for hits in lanes] for lanes in (dense, sparse)]
    weights = setup.fusion_weights or (1.0, 1.0)
    originals = setup.originals_for(lanes)
    fused = fuse_lanes(lanes, *lists, setup.fusion, mode, setup.rrf_k, weights, originals)[:depth]
    missing = [key for key, _ in fused if key not in chunks]  # originals no search of this question found
    if missing:
        chunks.update(setup.index.chunks_by_key(missing))
    return [chunks[key] for key, _ in fused]


def _feedback_query(question: str, lane: Lane, dense: list[Hit], setup: SearchSetup) -> bm25.SparseVector:
    """The question expanded by the lane's top dense chunks' heaviest terms, as the query graph's
    `feedback_bm25_hits` node does (query_graph/retrieval.py)."""
    engine = setup.bm25_memory.engine("eval", setup.index, setup.strategy, lane.language, setup.bm25_analyzer)
    keys = [chunk_key(h.chunk.chunk_id) for h in dense]
    return bm25.weighted_query_vector(setup.feedback.weights(question, keys, engine, lane.analysis_language))


def run_mode(mode: str, question: str, question_vector: np.ndarray, setup: SearchSetup, limit: int) -> ModeResult:
    started = time.perf_counter()
    if mode in ("dense", "bm25", "hybrid"):
        chunks = _search(mode, question, question_vector, setup, limit)
    elif mode == "hybrid+rerank":
        assert setup.rerank is not None
        pool = _search("hybrid", question, question_vector, setup, max(limit, setup.rerank_depth))
        head, tail = pool[: setup.rerank_depth], pool[setup.rerank_depth :]
        scores = list(setup.rerank(question, head)) if head else []
        # Stable sort: equal cross-encoder scores keep their fused order.
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        chunks = [head[i] for i in order] + tail
        chunks = chunks[:limit]
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {list(MODES)}")
    return ModeResult(chunks, (time.perf_counter() - started) * 1000)
