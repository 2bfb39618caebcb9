"""Generation nodes. `extractive` (the default) takes cited sentences from the passages."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.extractive import extract_answer
from query_graph.retrieval import Candidate


@dataclass(frozen=True)
class Draft:
    """What a generator produced, before validation: text with `[C:<chunk_id>]` markers."""

    text: str
    generator: str


def draft_answer(
    question: str, fused_candidates: list[Candidate], answer_sentences: int, min_answer_score: float
) -> Draft:
    text, _ = extract_answer(
        question, [c.chunk for c in fused_candidates], max_sentences=answer_sentences, min_score=min_answer_score
    )
    return Draft(text=text, generator="extractive")
