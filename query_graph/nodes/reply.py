"""The reply node: status, answer, citations, candidates and the traces of CRAG and verification."""

from __future__ import annotations

from typing import Any

from pipelines.answering.breadth import Breadth
from pipelines.answering.breadth import clarifying_question as breadth_question
from pipelines.answering.citations import strip_markers
from pipelines.answering.coverage import Coverage
from pipelines.answering.extractive import question_terms
from pipelines.retrieval.language_lanes import Lane
from pipelines.text.analysis import Analyzer
from query_graph.nodes.crag import CragOutcome
from query_graph.nodes.generation import Draft
from query_graph.nodes.retrieval import Candidate
from query_graph.nodes.verification import VerifiedAnswer

NO_ANSWER_TEXT = "I don't know: the documents do not cover this question."


def _retrieved_entry(candidate: Candidate, quoted: str | None, question: str, words: Analyzer) -> dict[str, object]:
    """A candidate as `retrieved` lists it, linked to the section it was used for: a cited chunk to the
    section of its first cited sentence (as its citation), an uncited `heading_packed` chunk to its
    section sharing the most content words with the question (the first on a tie), with that section's
    heading path. A chunk's own anchor, URI and heading path are its first section's, which says nothing
    about which packed section answered. Words are read as the extractive answer reads them (`words`),
    question and sections alike in the chunk's language."""
    out = candidate.as_dict()
    chunk = candidate.chunk
    if quoted is not None:
        anchor = chunk.anchor_for(quoted)
    elif chunk.extra and chunk.extra.get("sections"):
        sections = chunk.own_sections()
        terms = set(question_terms(question, words, chunk.language))
        shared = [len(terms & set(words(text, chunk.language))) for _, text in sections]
        anchor = sections[shared.index(max(shared))][0]  # the first on a tie
    else:
        return out
    if anchor != chunk.anchor:  # the chunk's own section: its entry exactly as before
        out["anchor"], out["source_uri"] = anchor, chunk.uri_at(anchor)
        # The section's own heading path where the chunk records it (a packed chunk's own sections; not a
        # neighbour's, nor in an index built before the chunk carried them): else the chunk's, as before.
        paths = chunk.extra.get("section_paths") if chunk.extra else None
        if paths and anchor in paths:
            out["heading_path"] = list(paths[anchor])
    return out


def reply(
    question: str,
    verified_answer: VerifiedAnswer,
    draft_answer: Draft,
    context_candidates: list[Candidate],
    crag_outcome: CragOutcome,
    question_coverage: Coverage,
    question_breadth: Breadth,
    retrieval_lanes: tuple[Lane, ...],
    answer_words: Analyzer,
) -> dict[str, Any]:
    by_id = {c.chunk.chunk_id: c for c in context_candidates}
    # Sentences the citation check withheld (none of their citations supported): counted and listed with why.
    withheld_by_check = [p for p in verified_answer.report.get("unsupported", []) if p.get("action") == "withheld"]
    checked_out = len({p["sentence"] for p in withheld_by_check})
    # Each cited chunk with the first sentence that cites it: that sentence's section is where the link goes.
    quoted = {cid: strip_markers(s.text) for s in reversed(verified_answer.sentences) for cid in s.chunk_ids}
    cited = list(dict.fromkeys(cid for s in verified_answer.sentences for cid in s.chunk_ids))
    citations = [
        {
            "chunk_id": cid,
            "document_id": by_id[cid].chunk.document_id,
            "title": by_id[cid].chunk.title,
            "anchor": by_id[cid].chunk.anchor_for(quoted[cid]),
            "source_uri": by_id[cid].chunk.source_uri_for(quoted[cid]),
            "score": round(by_id[cid].fused_score, 6),
        }
        for cid in cited
    ]
    if question_breadth.broad:
        status, answer = "clarify", breadth_question(question_breadth)
    elif draft_answer.kind == "clarify":
        status, answer = "clarify", draft_answer.text
    elif verified_answer.sentences:
        status, answer = "answered", verified_answer.text
    else:
        status, answer = "no_answer", NO_ANSWER_TEXT
        if question_coverage.uncovered_names:  # say what is missing: the user can check it
            answer += " The documents never mention: " + ", ".join(question_coverage.uncovered_names) + "."
    shown = context_candidates if context_candidates else crag_outcome.candidates
    return {
        "status": status,
        "answer": answer,
        "citations": citations if status == "answered" else [],
        "retrieved": [_retrieved_entry(c, quoted.get(c.chunk.chunk_id), question, answer_words) for c in shown],
        "generator": draft_answer.generator,
        "sentence_ranker": draft_answer.sentence_ranker,
        "answer_gate": draft_answer.gate.as_reply() if draft_answer.gate else None,
        "provider": draft_answer.provider,
        "crag": crag_outcome.trace,
        "lanes": [lane.as_dict() for lane in retrieval_lanes],
        "coverage": question_coverage.as_reply(),
        "breadth": question_breadth.as_reply(),
        "verification": {
            **verified_answer.report,
            "attached_citations": draft_answer.attached,
            "dropped_sentences": len(draft_answer.dropped),
            "withheld_sentences": len(draft_answer.withheld) + checked_out,
            "withheld": list(draft_answer.withheld) + withheld_by_check,
        },
        "fallback": {"generator": "extractive", "reason": draft_answer.fallback} if draft_answer.fallback else None,
        "note": generation_note(draft_answer, checked_out),
    }


def _withheld_line(count: int, whose: str) -> str:
    return (
        f"{count} sentence{'s' if count > 1 else ''} of {whose} withheld: "
        + "no passage {} cites supports {}.".format(*(("they", "them") if count > 1 else ("it", "it")))
    )


def generation_note(draft: Draft, checked_out: int = 0) -> str | None:
    """A short line for the user on what became of the reply: sentences withheld (by the generator's own
    check or by the citation check), the extractive answer given instead, a reply that broke off; None when
    there is nothing to say."""
    parts = []
    if draft.withheld:
        parts.append(_withheld_line(len(draft.withheld), "the model's answer"))
    if checked_out:
        parts.append(_withheld_line(checked_out, "the answer"))
    if draft.fallback:
        parts.append(f"The model's reply could not be used ({draft.fallback}): this is the extractive answer.")
    if draft.truncated:
        parts.append(f"The model's reply broke off ({draft.truncated}); the sentences before it are shown.")
    return " ".join(parts) or None
