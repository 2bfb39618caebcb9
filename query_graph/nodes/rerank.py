"""Rerank nodes: `none` keeps the fused order; `cross_encoder` rescores the top candidates and orders them
by its score, `cross_encoder_mean_rank` by the mean of its rank and the fused rank
(pipelines/retrieval/retriever.py `RerankPlan`, pipelines/retrieval/rerank.py `reranked_order`). Neighbour expansion (`neighbours_of`) follows, in CRAG's
`context_candidates`.
"""

from __future__ import annotations

from hamilton.function_modifiers import config

from pipelines.retrieval.rerank import CrossEncoderReranker
from pipelines.retrieval.retriever import Candidate, RerankPlan


@config.when(rerank="none")
def rerank_plan__none(top_k: int) -> RerankPlan:
    return RerankPlan(None, top_k)


@config.when(rerank="cross_encoder")
def rerank_plan__cross_encoder(reranker: CrossEncoderReranker, top_k: int) -> RerankPlan:
    return RerankPlan(reranker, top_k, "cross_encoder")


@config.when(rerank="cross_encoder_mean_rank")
def rerank_plan__cross_encoder_mean_rank(reranker: CrossEncoderReranker, top_k: int) -> RerankPlan:
    return RerankPlan(reranker, top_k, "cross_encoder_mean_rank")


def reranked_candidates(question: str, bridged_candidates: list[Candidate], rerank_plan: RerankPlan) -> list[Candidate]:
    """The top_k candidates in the reranker's order (the fused order when rerank is `none`)."""
    return rerank_plan.apply(question, bridged_candidates)
