"""The reply node's links: citations and `retrieved` entries point at the section a chunk was used for.

Real chunks from the real chunkers, run through the real generation, validation and verification nodes;
only the graph around them is left out (no index, no retrieval: the candidates are the page's chunks)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipelines.adapters.embedders import load_embedder
from pipelines.answering.breadth import Breadth
from pipelines.answering.coverage import Coverage
from pipelines.documents import Chunk, Document
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.retrieval.retriever import Candidate
from pipelines.text.language import LanguageGuess
from query_graph.nodes.crag import CragOutcome
from query_graph.nodes.generation import answer_words__snowball, draft_answer__extractive
from query_graph.nodes.reply import reply
from query_graph.nodes.validation import validated_answer
from query_graph.nodes.verification import sentence_checker__lexical, verified_answer

COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens

PAGE = """# Operations { #operations }

## Install { #install }

Run the installer once on every host.

## Ports { #ports }

The dashboard listens on port 7420 by default.

## Logs { #logs }

Logs rotate every night at midnight.

## Backups { #backups }

Backups are kept for fourteen days on the archive disk.
"""


def page_chunks(strategy: str, context: int = 0) -> list[Chunk]:
    clean, title = clean_markdown(PAGE)
    page = Document("ops.md", "file:///docs/ops.md", clean, "h", "now", title=title)
    return chunk_document(page, strategy, COUNT, context=context, target=30, limit=60, overlap=0)


def answer(question: str, chunks: list[Chunk], min_score: float = 0.15) -> dict[str, Any]:
    candidates = [Candidate(c, rank, 1 / (60 + rank), rank, 0.5, None, None) for rank, c in enumerate(chunks, 1)]
    draft = draft_answer__extractive(
        question, candidates, 3, min_score, None, None, answer_words__snowball(), LanguageGuess("en", 0.99)
    )
    checker = sentence_checker__lexical(candidates, 0.5, "remove")
    verified = verified_answer(validated_answer(draft, candidates), checker)
    crag = CragOutcome("generate", candidates, {"action": "generate"})
    return reply(
        question, verified, draft, candidates, crag, Coverage(True, None), Breadth(False), (), answer_words__snowball()
    )


def entry(out: dict[str, Any], chunk: Chunk) -> dict[str, Any]:
    return next(r for r in out["retrieved"] if r["chunk_id"] == chunk.chunk_id)


def test_a_cited_packed_chunk_is_listed_at_the_section_it_was_quoted_from() -> None:
    packed = page_chunks("heading_packed")
    hit = next(c for c in packed if "7420" in c.text)
    assert hit.anchor != "ports" and "sections" in hit.extra  # Ports is a later section of the chunk

    out = answer("Which port does the dashboard listen on?", [hit])

    assert out["status"] == "answered" and "7420" in out["answer"]
    assert [(c["chunk_id"], c["anchor"]) for c in out["citations"]] == [(hit.chunk_id, "ports")]
    listed = entry(out, hit)
    assert listed["anchor"] == "ports" and listed["source_uri"] == "file:///docs/ops.md#ports"
    assert listed["heading_path"] == ["Operations", "Ports"] != hit.heading_path  # the section's, not the chunk's
    assert listed["fused_rank"] == 1 and listed["title"] == hit.title  # the rest as before
    # An index built before chunks recorded their sections' paths: the chunk's own path, as before.
    older = replace(hit, extra={k: v for k, v in hit.extra.items() if k != "section_paths"})
    assert entry(answer("Which port does the dashboard listen on?", [older]), older)["heading_path"] == hit.heading_path


def test_a_chunk_cited_for_its_neighbours_sentence_is_listed_at_that_section() -> None:
    hit = next(c for c in page_chunks("heading", context=200) if "7420" in c.text)
    assert hit.anchor == "ports" and "fourteen days" in (hit.context_text or "")

    out = answer("How long are backups kept?", [hit])

    assert out["status"] == "answered" and "fourteen days" in out["answer"]
    assert out["citations"][0]["anchor"] == "backups"
    assert entry(out, hit)["anchor"] == "backups"
    assert entry(out, hit)["source_uri"] == "file:///docs/ops.md#backups"


def test_an_uncited_packed_chunk_is_listed_at_the_section_sharing_most_question_words() -> None:
    packed = page_chunks("heading_packed")
    hit = next(c for c in packed if "7420" in c.text)
    other = next(c for c in page_chunks("heading") if "Backups" in c.text)
    # Nothing reaches the score: no sentence cited, every candidate still listed.
    out = answer("Which port does the dashboard listen on?", [other, hit], min_score=2.0)

    assert out["status"] == "no_answer" and not out["citations"]
    assert entry(out, hit)["anchor"] == "ports" and entry(out, hit)["heading_path"] == ["Operations", "Ports"]
    assert entry(out, hit)["source_uri"] == "file:///docs/ops.md#ports"
    # A chunk of one section is listed as it is.
    assert entry(out, other) == Candidate(other, 1, 1 / 61, 1, 0.5, None, None).as_dict()
    # No question word in any section: the first section, the chunk's own anchor.
    tie = answer("What about the weather?", [hit], min_score=2.0)
    assert entry(tie, hit)["anchor"] == hit.anchor and entry(tie, hit)["source_uri"] == hit.source_uri
