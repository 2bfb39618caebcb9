"""Citation validation: every released sentence carries a marker naming a supplied chunk."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.answering.citations import ValidatedSentence, join_sentences, validate
from pipelines.retrieval.retriever import Candidate
from query_graph.nodes.generation import Draft


@dataclass(frozen=True)
class ValidatedAnswer:
    sentences: list[ValidatedSentence]
    dropped: list[str]

    @property
    def text(self) -> str:
        return join_sentences(s.text for s in self.sentences)


def validated_answer(draft_answer: Draft, context_candidates: list[Candidate]) -> ValidatedAnswer:
    """Raises `CitationError` when a marker names a chunk that was not supplied to the generator."""
    if draft_answer.kind != "answer":
        return ValidatedAnswer([], [])
    if draft_answer.checked is not None:  # validated sentence by sentence while streaming
        return ValidatedAnswer(list(draft_answer.checked), list(draft_answer.dropped))
    released, dropped = validate(draft_answer.text, [c.chunk.chunk_id for c in context_candidates])
    return ValidatedAnswer(released, dropped)
