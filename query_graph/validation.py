"""Citation validation: every released sentence carries a marker naming a supplied chunk."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.citations import ValidatedSentence, validate
from query_graph.generation import Draft
from query_graph.retrieval import Candidate


@dataclass(frozen=True)
class ValidatedAnswer:
    sentences: list[ValidatedSentence]
    dropped: list[str]

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)


def validated_answer(draft_answer: Draft, fused_candidates: list[Candidate]) -> ValidatedAnswer:
    """Raises `CitationError` when a marker names a chunk that was not among the candidates."""
    released, dropped = validate(draft_answer.text, [c.chunk.chunk_id for c in fused_candidates])
    return ValidatedAnswer(released, dropped)
