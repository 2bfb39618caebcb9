"""Rerank nodes: `none` keeps the fused order; `cross_encoder` rescores the top candidates.

Then optional neighbour expansion: each hit's adjacent chunks (same document, position ±1) join the
context, so a list or a procedure split across chunks reaches the generator whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hamilton.function_modifiers import config

from pipelines.documents import make_chunk_id
from pipelines.ports import VectorIndex
from pipelines.retrieval.rerank import CrossEncoderReranker
from query_graph.nodes.retrieval import Candidate


@dataclass(frozen=True)
class RerankPlan:
    """The rerank step as an object, so CRAG's second retrieval is reranked the same way."""

    reranker: CrossEncoderReranker | None
    top_k: int

    def apply(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        if self.reranker is None:
            return candidates[: self.top_k]
        logits = self.reranker.scores(question, [c.chunk.generation_text for c in candidates])
        rescored = [replace(c, rerank_score=s) for c, s in zip(candidates, logits, strict=True)]
        return sorted(rescored, key=lambda c: (-(c.rerank_score or 0.0), c.fused_rank))[: self.top_k]


@config.when(rerank="none")
def rerank_plan__none(top_k: int) -> RerankPlan:
    return RerankPlan(None, top_k)


@config.when(rerank="cross_encoder")
def rerank_plan__cross_encoder(reranker: CrossEncoderReranker, top_k: int) -> RerankPlan:
    return RerankPlan(reranker, top_k)


def reranked_candidates(question: str, bridged_candidates: list[Candidate], rerank_plan: RerankPlan) -> list[Candidate]:
    """The top_k candidates in the reranker's order (the fused order when rerank is `none`)."""
    return rerank_plan.apply(question, bridged_candidates)


def _neighbours_of(candidates: list[Candidate], vector_index: VectorIndex) -> list[Candidate]:
    """Each candidate followed by its adjacent chunks that are not already candidates."""
    present = {c.chunk.chunk_id for c in candidates}
    wanted: dict[str, str] = {}
    for c in candidates:
        for position in (c.chunk.position - 1, c.chunk.position + 1):
            if position < 0:
                continue
            cid = make_chunk_id(c.chunk.document_id, c.chunk.strategy, position)
            if cid not in present and cid not in wanted:
                wanted[cid] = c.chunk.chunk_id
    found = {ch.chunk_id: ch for ch in vector_index.get_chunks(list(wanted))}
    out: list[Candidate] = []
    for c in candidates:
        out.append(c)
        for cid, parent in wanted.items():
            if parent == c.chunk.chunk_id and cid in found:
                out.append(
                    Candidate(found[cid], c.fused_rank, c.fused_score, None, None, None, None, None, c.chunk.chunk_id)
                )
    return out
