"""The retrieval modes an evaluation compares, run straight against an opened index version.

dense = the vector store's dense search; bm25 = its sparse search; hybrid = fusion of both lists
(`RAGLINE_FUSION`, with BM25 feedback and the bridge hop when they are on); hybrid+rerank = the hybrid
top `rerank_depth` re-ordered by a cross-encoder. Each mode runs the retrieval engine the query graph
runs (`RetrievalPlan`, pipelines/retrieval/retriever.py), so an evaluation measures the retrieval the
server runs, lanes and all (pipelines/retrieval/language_lanes.py).
The query embedding is computed once per question by the caller and shared by every mode, so a
mode's latency is its own search, fusion and rerank time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.answering.sentence_vectors import own_shown_texts
from pipelines.documents import Chunk
from pipelines.ports import Embedder, VectorIndex
from pipelines.retrieval import fusion
from pipelines.retrieval.bm25 import MemoryBM25Cache
from pipelines.retrieval.expansion import searched_vector
from pipelines.retrieval.feedback import Feedback
from pipelines.retrieval.hubness import Hubness, HubnessCache
from pipelines.retrieval.language_lanes import Lane, lanes
from pipelines.retrieval.rerank import reranked_order
from pipelines.retrieval.retriever import RetrievalPlan, hit_rules, rule_settings
from pipelines.retrieval.sentence_units import SentenceUnits, SentenceUnitsCache
from pipelines.retrieval.translations import Originals, OriginalsCache
from pipelines.settings import Settings
from pipelines.text.language import detect_question_language

MODES = ("dense", "bm25", "hybrid", "hybrid+rerank")

# Scores one question against candidate chunks (higher is more relevant), in the candidates' order.
RerankScorer = Callable[[str, Sequence[Chunk]], Sequence[float]]


@dataclass
class SearchSetup:
    index: VectorIndex
    strategy: str | None
    candidates: int = 30
    rrf_k: int = 60
    fusion: str = "rrf"  # a name of pipelines.retrieval.fusion.FUSIONS
    fusion_weights: tuple[float, float] | None = None  # weighted_rrf: (dense, bm25)
    rerank: RerankScorer | None = None
    rerank_depth: int = 30
    rerank_order: str = "cross_encoder"  # hybrid+rerank's order (pipelines/retrieval/rerank.py RERANK_ORDERS)
    bm25_analyzer: str = "plain"  # the index's (its sparse vectors were written with it)
    index_languages: tuple[str, ...] = ()  # the index version's
    language_route: str = "question_and_source"
    source_language: str | None = "en"
    language_min_confidence: float = 0.5  # below it the question's language counts as unknown (as the gate's)
    feedback: Feedback = field(
        default_factory=Feedback
    )  # hybrid's BM25 feedback (pipelines/retrieval/feedback.py); off by default
    bridge_depth: int = 0  # hybrid's second hop looks at this many hits (the settings' top_k); 0: off
    bridge_sources: int = 3
    distinct: bool = False  # pass over hits whose passage a better hit's holds (RetrievalPlan.kept_hits)
    sub_queries: bool = False  # a question of two asks also searched per ask (RetrievalPlan.asked)
    per_page: int = 0  # hits of one page kept before other pages' (RetrievalPlan.kept_hits); 0: no limit
    embedder: Embedder | None = None  # embeds the asks of `sub_queries` (the question's own embedding is given)
    hubness: Hubness | None = None  # dense hits discounted by their chunk's hubness (`dense_hubness=csls`)
    release_notes: bool = False  # changelog hits wait unless the question asks about releases (`release_notes=defer`)
    release_notes_first: bool = False  # but the fused first hit (`release_notes=defer_but_first`)
    sentences: SentenceUnits | None = None  # dense hits ordered by their chunks' sentences too (`dense_sentences`)
    sentence_combine: str = "off"
    dense_feedback: bool = False  # dense search again from the first hits' vectors (`dense_feedback=rocchio`)
    expand: Callable[[str], str] | None = None  # writes a question's passage (`query_expansion=passage`); None: off
    decompose: Callable[[str], list[str]] | None = None  # the model's sub-queries (`sub_queries=model`); None: off

    originals: OriginalsCache = field(default_factory=OriginalsCache)
    bm25_memory: MemoryBM25Cache = field(default_factory=MemoryBM25Cache)  # the feedback's term statistics

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        index: VectorIndex,
        strategy: str | None,
        data_dir: Path | None = None,
        **overrides: Any,
    ) -> SearchSetup:
        """The retrieval settings a server would search with (one place, so a changed default reaches
        every evaluation); `overrides` for what an evaluation sets itself (its index's analyzer and
        languages, a `--fusion` flag, a reranker). `data_dir`: where the index's build kept its embedding cache
        (an evaluation index's own; default the settings'), which hubness and sentence units read."""
        data_dir = data_dir or settings.data_dir
        values: dict[str, Any] = {
            "candidates": settings.candidates,
            "rrf_k": settings.rrf_k,
            "fusion": settings.fusion,
            "fusion_weights": (settings.fusion_weights[0], settings.fusion_weights[1]),
            "rerank_depth": settings.rerank_depth,
            "rerank_order": settings.rerank if settings.rerank != "none" else "cross_encoder",
            "language_route": settings.language_route,
            "source_language": settings.source_language,
            "language_min_confidence": settings.language_min_confidence,
            **hit_rules("hybrid", settings.top_k, **rule_settings(settings)),
        }
        if settings.dense_hubness == "csls":
            embedder = load_embedder(settings.embedding_model)
            values["hubness"] = HubnessCache(data_dir).source("eval", index, strategy, embedder)
        if settings.dense_sentences != "off":
            embedder = load_embedder(settings.embedding_model)
            units = SentenceUnitsCache(data_dir, own_shown_texts)
            values["sentences"] = units.source("eval", index, strategy, embedder)
            values["sentence_combine"] = settings.dense_sentences
        values["dense_feedback"] = settings.dense_feedback == "rocchio"
        return cls(index=index, strategy=strategy, **{**values, **overrides})

    def originals_for(self, lanes: Sequence[Lane]) -> Originals | None:
        """The translation table, when a lane lists originals (read from the index once)."""
        source = next((lane.language for lane in lanes if lane.originals and lane.language), None)
        return None if source is None else self.originals.table("eval", self.index, self.strategy, source)

    def plan(self, mode: str, question: str, depth: int) -> RetrievalPlan:
        """The query graph's retrieval plan for one question (its lanes depend on its language) and one
        mode, keeping `depth` chunks: the evaluations search exactly as the server does."""
        lanes = self.lanes(question)
        return RetrievalPlan(
            retrieval=mode,
            bm25_engine="qdrant",
            fusion=self.fusion,
            embedder=self.embedder,  # the caller embeds each question once for every mode; this, only its asks
            vector_index=self.index,
            bm25_memory=self.bm25_memory,
            index_version="eval",
            strategy=self.strategy,
            lanes=lanes,
            candidates=max(self.candidates, depth),
            keep=depth,
            rrf_k=self.rrf_k,
            fusion_weights=tuple(self.fusion_weights or (1.0, 1.0)),
            bm25_analyzer=self.bm25_analyzer,
            originals=self.originals_for(lanes),
            feedback=self.feedback,
            bridge_depth=self.bridge_depth if mode == "hybrid" else 0,
            bridge_sources=self.bridge_sources,
            distinct=self.distinct,
            sub_queries=self.sub_queries,
            decompose=self.decompose,
            per_page=self.per_page,
            hubness=self.hubness,
            release_notes=self.release_notes,
            release_notes_first=self.release_notes_first,
            sentences=self.sentences,
            sentence_combine=self.sentence_combine,
            dense_feedback=self.dense_feedback,
        )

    def expanded(self, question: str, vector: np.ndarray, embedder: Embedder) -> tuple[np.ndarray, str]:
        """The vector dense search reads and the passage BM25 reads beside the question: with `expand`
        (`query_expansion=passage`) the model's passage and the mean of its embedding with the question's, as the
        query graph's `search_embedding` node; without it, the question's own vector and no passage."""
        passage = "" if self.expand is None else self.expand(question)
        return searched_vector(vector, passage, embedder), passage

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


def _search(
    mode: str, question: str, question_vector: np.ndarray, setup: SearchSetup, depth: int, expansion: str = ""
) -> list[Chunk]:
    """The mode's chunks, found as the query graph's retrieval finds them (its `RetrievalPlan`); with a written
    passage, `question_vector` is the expanded one (pipelines/retrieval/expansion.py)."""
    return [c.chunk for c in setup.plan(mode, question, depth).search(question, question_vector, expansion)]


def run_mode(
    mode: str, question: str, question_vector: np.ndarray, setup: SearchSetup, limit: int, expansion: str = ""
) -> ModeResult:
    started = time.perf_counter()
    if mode in ("dense", "bm25", "hybrid"):
        chunks = _search(mode, question, question_vector, setup, limit, expansion)
    elif mode == "hybrid+rerank":
        assert setup.rerank is not None
        pool = _search("hybrid", question, question_vector, setup, max(limit, setup.rerank_depth), expansion)
        head, tail = pool[: setup.rerank_depth], pool[setup.rerank_depth :]
        scores = list(setup.rerank(question, head)) if head else []
        chunks = [head[i] for i in reranked_order(scores, setup.rerank_order)] + tail
        chunks = chunks[:limit]
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {list(MODES)}")
    return ModeResult(chunks, (time.perf_counter() - started) * 1000)
