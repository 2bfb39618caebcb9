"""The chunk suite of the build's blocking checks, on real chunks: each check can fail."""

from __future__ import annotations

from pipelines.adapters.embedders import load_embedder
from pipelines.documents import Document
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.ingestion.index_checks import chunk_suite_checks

COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens
PAGE = "# Sync\n\n" + " ".join(f"Harbor syncs repository number {i} every hour." for i in range(40)) + "\n"


def chunks(limit: int) -> list:
    clean, title = clean_markdown(PAGE)
    page = Document("sync.md", "file:///sync.md", clean, "h", "now", title=title or "Sync")
    return chunk_document(page, "heading", COUNT, target=limit, limit=limit, overlap=0)


def test_chunks_within_the_limit_pass_and_one_over_it_fails() -> None:
    within = chunk_suite_checks(chunks(100), max_tokens=100, languages=["en"])
    assert all(result["passed"] for result in within.values()), within
    over = chunk_suite_checks(chunks(400), max_tokens=100, languages=["en"])  # a chunker that ignored its limit
    assert not over["chunks_within_token_limit"]["passed"]
    assert over["chunk_ids_unique"]["passed"] and over["chunks_not_empty"]["passed"]


def test_a_chunk_outside_the_configured_languages_fails() -> None:
    assert not chunk_suite_checks(chunks(100), max_tokens=100, languages=["de"])["chunk_languages_allowed"]["passed"]
    assert not chunk_suite_checks([], max_tokens=100, languages=[])["chunks_present"]["passed"]
