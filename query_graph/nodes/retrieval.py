"""Retrieval nodes: query embedding, dense and BM25 candidates, and their fusion, as thin functions over
the retrieval engine (pipelines/retrieval/retriever.py).

Variants (config, overridable per request): `retrieval` = hybrid | dense | bm25, `bm25_engine` =
qdrant (sparse vectors with IDF) | memory (rank-bm25 over the shard's payloads), `fusion` = rrf |
weighted_rrf | dbsf | convex | convex_heads | convex_kept_heads, `language_route` = question_and_source | question | all (the languages
searched, pipelines/retrieval/language_lanes.py), `query_expansion` = off | passage (the language model's passage searched
beside the question, pipelines/retrieval/expansion.py), `sub_queries` = off | asks | model (a question of two asks
also searched ask by ask, the asks split by its wording or written by the language model). The same choices are bundled into a `RetrievalPlan`, so
CRAG can run the whole retrieval again for a rewritten query without a second graph.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import structlog
from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness, structured_output
from pipelines.guardrails.screen import Verdict
from pipelines.ports import Embedder, Ranked, VectorIndex
from pipelines.retrieval.bm25 import MemoryBM25Cache
from pipelines.retrieval.decomposition import model_queries
from pipelines.retrieval.expansion import model_passage, searched_vector
from pipelines.retrieval.hubness import HubnessCache
from pipelines.retrieval.language_lanes import Lane, lanes
from pipelines.retrieval.retriever import Candidate, RetrievalPlan, build_plan
from pipelines.retrieval.sentence_units import SentenceUnitsCache
from pipelines.retrieval.translations import OriginalsCache

log = structlog.get_logger(__name__)


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
    retrieval_lanes: tuple[Lane, ...],
    originals_cache: OriginalsCache,
    bm25_feedback: str,  # the variant (graph config): CRAG's second retrieval runs the plan as configured
    bridge_hop: str,  # the variant (graph config), as bm25_feedback
    distinct_passages: str,  # the variant (graph config), as bm25_feedback
    sub_queries: str,  # the variant (graph config), as bm25_feedback
    hubness_cache: HubnessCache,
    dense_hubness: str = "off",  # the variant (graph config), as bm25_feedback
    sentence_units_cache: SentenceUnitsCache | None = None,
    dense_sentences: str = "off",  # the variant (graph config), as bm25_feedback
    dense_feedback: str = "off",  # the variant (graph config), as bm25_feedback
    release_notes: str = "keep",  # the variant (graph config), as bm25_feedback
    bm25_analyzer: str = "plain",
    bm25_feedback_docs: int = 3,
    bm25_feedback_terms: int = 20,
    bm25_feedback_weight: float = 0.2,
    bridge_hop_sources: int = 3,
    passages_per_page: int = 0,
) -> RetrievalPlan:
    """The request's retrieval plan (pipelines/retrieval/retriever.py `build_plan`); `dense_hubness=csls` discounts
    the dense hits by their chunk's hubness (pipelines/retrieval/hubness.py); `dense_sentences=max|mean` orders the
    dense hits by their chunks' sentences too (pipelines/retrieval/sentence_units.py)."""
    hubness = None
    if dense_hubness == "csls":
        hubness = hubness_cache.source(index_version, vector_index, strategy, embedder)
    sentences = None
    if dense_sentences != "off" and sentence_units_cache is not None:
        sentences = sentence_units_cache.source(index_version, vector_index, strategy, embedder)
    return build_plan(
        retrieval=retrieval,
        bm25_engine=bm25_engine,
        fusion=fusion,
        rerank=rerank,
        embedder=embedder,
        vector_index=vector_index,
        bm25_memory=bm25_memory,
        index_version=index_version,
        strategy=strategy,
        candidates=candidates,
        top_k=top_k,
        rrf_k=rrf_k,
        rerank_depth=rerank_depth,
        fusion_weights=fusion_weights,
        retrieval_lanes=retrieval_lanes,
        originals_cache=originals_cache,
        bm25_feedback=bm25_feedback,
        bridge_hop=bridge_hop,
        distinct_passages=distinct_passages,
        sub_queries=sub_queries,
        bm25_analyzer=bm25_analyzer,
        bm25_feedback_docs=bm25_feedback_docs,
        bm25_feedback_terms=bm25_feedback_terms,
        bm25_feedback_weight=bm25_feedback_weight,
        bridge_hop_sources=bridge_hop_sources,
        passages_per_page=passages_per_page,
        hubness=hubness,
        release_notes=release_notes,
        sentences=sentences,
        dense_sentences=dense_sentences,
        dense_feedback=dense_feedback,
    )


def retrieval_lanes(
    guardrail_verdict: Verdict,
    language_route: str,
    index_languages: list[str],
    source_language: str | None = None,
    language_filter: str | None = None,
) -> tuple[Lane, ...]:
    """The languages the question is searched in. `language_route` is the variant, read from the graph's
    config: the variants differ by one argument of `pipelines.retrieval.language_lanes.lanes`, not by a function."""
    return lanes(language_route, guardrail_verdict.language, index_languages, source_language, language_filter)


def query_embedding(question: str, embedder: Embedder) -> np.ndarray:
    """The question embedded with the active index's model (the service checked the fingerprint)."""
    return embedder.embed_query(question)


@config.when(query_expansion="passage")
def expansion_passage__passage(question: str, llm_harness: LLMHarness) -> str:
    """The passage the language model writes in answer to the question (pipelines/retrieval/expansion.py), which
    both retrievers search with beside the question; empty when the model is unavailable (the question's own
    search then, never a failed query)."""
    try:
        return model_passage(question, llm_harness)
    except GenerationUnavailable as exc:
        log.warning("query_expansion_unavailable", error=str(exc))
        return ""


@config.when(query_expansion="off")
def expansion_passage__off() -> str:
    return ""


def search_embedding(query_embedding: np.ndarray, expansion_passage: str, embedder: Embedder) -> np.ndarray:
    """The vector dense search reads: the question's, or its mean with the written passage's
    (`query_expansion=passage`). The caches, the topic gate and the answer's sentences read the question's own."""
    return searched_vector(query_embedding, expansion_passage, embedder)


def dense_hits(search_embedding: np.ndarray, retrieval_plan: RetrievalPlan) -> list[list[Ranked]]:
    """One ranked list per lane."""
    return retrieval_plan.dense(search_embedding)


def dense_order(
    search_embedding: np.ndarray, dense_hits: list[list[Ranked]], retrieval_plan: RetrievalPlan
) -> list[list[Ranked]] | None:
    """The dense lists as fusion orders them when chunks are also read by their sentences (`dense_sentences=max|mean`,
    pipelines/retrieval/sentence_units.py); None: the store's lists (`off`)."""
    return retrieval_plan.sentences_ranked(dense_hits, search_embedding)


def bm25_hits(question: str, retrieval_plan: RetrievalPlan, expansion_passage: str = "") -> list[list[Ranked]]:
    """One ranked list per lane (empty for a lane BM25 does not search); the written passage's terms join the
    question's at a lower weight (`query_expansion=passage`)."""
    return retrieval_plan.sparse(question, expansion_passage)


@config.when(bm25_feedback="on")
def feedback_bm25_hits__on(
    question: str,
    dense_hits: list[list[Ranked]],
    retrieval_plan: RetrievalPlan,
    expansion_passage: str = "",
) -> list[list[Ranked]]:
    """BM25 for the question expanded by the top dense chunks' heaviest terms, one list per lane: in a
    hybrid retrieval it takes the place of `bm25_hits` (one BM25 search either way). With a written passage
    (`query_expansion=passage`) the passage is the expansion instead."""
    if expansion_passage:
        return retrieval_plan.sparse(question, expansion_passage)
    return retrieval_plan.sparse_with_feedback(question, dense_hits)


@config.when(bm25_feedback="off")
def feedback_bm25_hits__off(bm25_hits: list[list[Ranked]]) -> list[list[Ranked]]:
    return bm25_hits


@config.when(retrieval="hybrid")
def fused_candidates__hybrid(
    question: str,
    dense_hits: list[list[Ranked]],
    feedback_bm25_hits: list[list[Ranked]],
    retrieval_plan: RetrievalPlan,
    dense_order: list[list[Ranked]] | None,
) -> list[Candidate]:
    """Dense and BM25 lists fused (by default the convex combination with each list's first two hits first;
    plain convex, RRF, weighted RRF or DBSF as configured); BM25 with feedback when that variant is on. The
    question decides whether changelog hits wait (`release_notes=defer`)."""
    return retrieval_plan.fused(dense_hits, feedback_bm25_hits, question, dense_order)


@config.when(retrieval="dense")
def fused_candidates__dense(
    question: str,
    dense_hits: list[list[Ranked]],
    retrieval_plan: RetrievalPlan,
    dense_order: list[list[Ranked]] | None,
) -> list[Candidate]:
    return retrieval_plan.fused(dense_hits, [], question, dense_order)


@config.when(retrieval="bm25")
def fused_candidates__bm25(
    question: str, bm25_hits: list[list[Ranked]], retrieval_plan: RetrievalPlan
) -> list[Candidate]:
    return retrieval_plan.fused([], bm25_hits, question)


@config.when(dense_feedback="rocchio")
def fed_back_candidates__rocchio(
    question: str,
    fused_candidates: list[Candidate],
    search_embedding: np.ndarray,
    dense_hits: list[list[Ranked]],
    feedback_bm25_hits: list[list[Ranked]],
    retrieval_plan: RetrievalPlan,
) -> list[Candidate]:
    """The fusion again after a dense search with the question's vector moved toward the first fused hits' vectors
    (pipelines/retrieval/dense_feedback.py); the same BM25 list, the question's own cosines kept."""
    return retrieval_plan.fed_back(question, fused_candidates, search_embedding, dense_hits, feedback_bm25_hits)


@config.when(dense_feedback="off")
def fed_back_candidates__off(fused_candidates: list[Candidate]) -> list[Candidate]:
    return fused_candidates


@config.when(sub_queries="asks")
def asked_candidates__asks(
    question: str, fed_back_candidates: list[Candidate], retrieval_plan: RetrievalPlan
) -> list[Candidate]:
    """A question that asks two things or more is also searched ask by ask, the lists taking turns
    (pipelines/retrieval/retriever.py `RetrievalPlan.asked`)."""
    return retrieval_plan.asked(question, fed_back_candidates)


@config.when(sub_queries="model")
def asked_candidates__model(
    question: str,
    fed_back_candidates: list[Candidate],
    retrieval_plan: RetrievalPlan,
    llm_harness: LLMHarness,
    llm_structured_output: str,
) -> list[Candidate]:
    """The language model rewrites the question as one to three self-contained search queries
    (pipelines/retrieval/decomposition.py), each searched as `asks` searches its asks, the lists taking turns; a
    question of one thing, or a model that fails, keeps the whole question's list (never a failed query)."""
    form = structured_output(llm_structured_output)

    def queries(text: str) -> list[str]:
        try:
            return model_queries(text, llm_harness, form)
        except GenerationUnavailable as exc:
            log.warning("sub_queries_unavailable", error=str(exc))
            return []

    return replace(retrieval_plan, decompose=queries).asked(question, fed_back_candidates)


@config.when(sub_queries="off")
def asked_candidates__off(fed_back_candidates: list[Candidate]) -> list[Candidate]:
    return fed_back_candidates


@config.when(bridge_hop="on")
def bridged_candidates__on(
    question: str, asked_candidates: list[Candidate], retrieval_plan: RetrievalPlan
) -> list[Candidate]:
    """A question that asks two things gets a second hop's chunk right after the hit whose section named
    the identifier that found it (pipelines/retrieval/bridge_hop.py)."""
    return retrieval_plan.bridged(question, asked_candidates)


@config.when(bridge_hop="off")
def bridged_candidates__off(asked_candidates: list[Candidate]) -> list[Candidate]:
    return asked_candidates
