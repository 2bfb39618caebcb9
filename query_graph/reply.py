"""The reply node: status, answer, citations and every candidate, in the shape of the HTTP API."""

from __future__ import annotations

from typing import Any

from query_graph.generation import Draft
from query_graph.retrieval import Candidate
from query_graph.validation import ValidatedAnswer


def reply(validated_answer: ValidatedAnswer, draft_answer: Draft, fused_candidates: list[Candidate]) -> dict[str, Any]:
    by_id = {c.chunk.chunk_id: c for c in fused_candidates}
    cited = list(dict.fromkeys(cid for s in validated_answer.sentences for cid in s.chunk_ids))
    citations = [
        {
            "chunk_id": cid,
            "document_id": by_id[cid].chunk.document_id,
            "title": by_id[cid].chunk.title,
            "anchor": by_id[cid].chunk.anchor,
            "source_uri": by_id[cid].chunk.source_uri,
            "score": round(by_id[cid].fused_score, 6),
        }
        for cid in cited
    ]
    answered = bool(validated_answer.sentences)
    return {
        "status": "answered" if answered else "no_answer",
        "answer": validated_answer.text if answered else "I don't know: the documents do not cover this question.",
        "citations": citations,
        "retrieved": [c.as_dict() for c in fused_candidates],
        "generator": draft_answer.generator,
    }
