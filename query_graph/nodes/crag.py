"""CRAG nodes: grade the retrieval, then generate, refine into strips, or rewrite once and retry.

The graded score is the reranker's best probability when a cross-encoder ran (bands `crag_rerank_lower/upper`; the
lower one is 0 until `ragline calibrate` fits it), otherwise the top dense cosine (bands `crag_lower/upper`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import structlog
from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
from pipelines.answering.breadth import Breadth
from pipelines.answering.coverage import Coverage
from pipelines.answering.crag import Bands, action, knowledge_strips, rewrite_query
from pipelines.ports import VectorIndex
from pipelines.retrieval.rerank import probability
from pipelines.retrieval.retriever import Candidate, RerankPlan, RetrievalPlan, neighbours_of
from pipelines.text.analysis import Analyzer

log = structlog.get_logger(__name__)
GRADES = {"generate": "correct", "refine": "ambiguous", "rewrite": "incorrect"}


@dataclass(frozen=True)
class CragOutcome:
    action: str  # generate | refine | rewrite+generate | rewrite+refine | no_answer | off
    candidates: list[Candidate]
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def refine(self) -> bool:
        return self.action.endswith("refine")


def _grade_score(candidates: list[Candidate], plan: RetrievalPlan, embedding: np.ndarray) -> tuple[float | None, str]:
    """(score, scale): the best reranker probability, or the top dense cosine."""
    if not candidates:
        return None, "dense"
    reranked = [c.rerank_score for c in candidates if c.rerank_score is not None]
    if reranked:  # the best, wherever the rerank order put it
        return probability(max(reranked)), "rerank"
    dense = [c.dense_score for c in candidates if c.dense_score is not None]
    if dense:
        return max(dense), "dense"
    # bm25-only retrieval: grade on the nearest dense neighbour (of any lane) all the same
    scores = [hits[0].score for hits in plan.dense(embedding) if hits]
    return (max(scores) if scores else None), "dense"


def _rewrite(question: str, generator: str, llm_harness: LLMHarness | None) -> tuple[str, str]:
    """(rewritten query, how): through the LLM when the generator is one, else deterministic."""
    if generator == "litellm" and llm_harness is not None:
        prompt = (
            "Rewrite this question as a short search query for documentation: keep identifiers, "
            "drop filler words. Reply with the query only.\n\nQuestion: " + question
        )
        try:
            text = llm_harness.complete([{"role": "user", "content": prompt}], max_tokens=48).text.strip()
            if text:
                return text.splitlines()[0][:300], "llm"
        except GenerationUnavailable as exc:
            log.warning("crag_llm_rewrite_failed", error=str(exc))
    return rewrite_query(question), "deterministic"


@config.when(crag="graded")
def crag_outcome__graded(
    question: str,
    reranked_candidates: list[Candidate],
    query_embedding: np.ndarray,
    retrieval_plan: RetrievalPlan,
    rerank_plan: RerankPlan,
    generator: str,
    crag_lower: float,
    crag_upper: float,
    crag_rerank_lower: float,
    crag_rerank_upper: float,
    llm_harness: LLMHarness | None = None,
) -> CragOutcome:
    bands = {"dense": Bands(crag_lower, crag_upper), "rerank": Bands(crag_rerank_lower, crag_rerank_upper)}
    score, scale = _grade_score(reranked_candidates, retrieval_plan, query_embedding)
    first = action(score, bands[scale])
    trace: dict[str, Any] = {
        "grade": GRADES[first],
        "scale": scale,
        "bands": {"lower": bands[scale].lower, "upper": bands[scale].upper},
        "scores": {"initial": None if score is None else round(score, 4)},
    }
    if first != "rewrite":
        return CragOutcome(first, reranked_candidates, {**trace, "action": first})
    rewritten, how = _rewrite(question, generator, llm_harness)
    embedding = retrieval_plan.embed(rewritten)  # once: the second retrieval and its grade share it
    retried = rerank_plan.apply(rewritten, retrieval_plan.search(rewritten, embedding))
    score2, scale2 = _grade_score(retried, retrieval_plan, embedding)
    second = action(score2, bands[scale2])
    trace["scores"]["rewritten"] = None if score2 is None else round(score2, 4)
    trace["rewritten_query"], trace["rewrite"] = rewritten, how
    if second == "rewrite":  # still low after one rewrite: the documents do not cover it
        return CragOutcome("no_answer", retried, {**trace, "action": "no_answer"})
    return CragOutcome(f"rewrite+{second}", retried, {**trace, "action": f"rewrite+{second}"})


@config.when(crag="off")
def crag_outcome__off(reranked_candidates: list[Candidate]) -> CragOutcome:
    return CragOutcome("off", reranked_candidates, {"action": "off"})


def context_candidates(
    question: str,
    crag_outcome: CragOutcome,
    question_coverage: Coverage,
    question_breadth: Breadth,
    vector_index: VectorIndex,
    neighbours: bool,
    answer_words: Analyzer,
) -> list[Candidate]:
    """What the generator sees: none after `no_answer`, when the corpus does not cover the question or when
    the question is asked back (too broad); neighbours added; strips when refining (words read as the
    extractive answer reads them)."""
    if crag_outcome.action == "no_answer" or not question_coverage.covered or question_breadth.broad:
        return []
    context = crag_outcome.candidates
    if neighbours:
        context = neighbours_of(context, vector_index)
    if crag_outcome.refine:
        context = [
            replace(
                c,
                chunk=replace(
                    c.chunk,
                    context_text=knowledge_strips(
                        question, c.chunk.generation_text, words=answer_words, language=c.chunk.language
                    ),
                ),
            )
            for c in context
        ]
    return context
