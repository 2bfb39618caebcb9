"""Incremental embedding: after one page changes, only that page's chunks are embedded again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.caching.embeddings import EmbeddingCache
from pipelines.ingestion import build
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.dense_units import unit_texts
from pipelines.settings import Settings
from tests.corpus import write_corpus


def chunks_of(source: Path, request: BuildRequest):  # type: ignore[no-untyped-def]
    documents = build.clean_documents(build.fetch_documents(request))
    return build.chunk_documents(documents, request, "heading")


def vectors_of(chunks, request: BuildRequest) -> int:  # type: ignore[no-untyped-def]
    """How many vectors the chunks need: one each, plus the units of their tables (pipelines/ingestion/dense_units.py)."""
    count = load_embedder(request.embedding_model).count_tokens
    units = [unit_texts(c, count, request.dense_unit_tokens, request.dense_unit_scope) for c in chunks]
    return len(chunks) + sum(len(u) for u in units)


def test_a_one_page_change_re_embeds_only_that_page(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "docs")
    # Table units on (off by default): the cache holds a chunk's unit vectors beside its own.
    request = BuildRequest.from_settings(Settings(source=source, exclude=["notes/**"], dense_unit_tokens=128))
    cache = tmp_path / "cache.sqlite"
    before = chunks_of(source, request)
    full = build.embed_chunks(before, request, cache)
    assert vectors_of(before, request) > len(before)  # the corpus has a settings table: units too
    assert full.computed == vectors_of(before, request) and full.reused == 0

    (source / "reference" / "cli.md").write_text("# Command line\n\nThe `harbor push` command uploads images.\n")
    after = chunks_of(source, request)
    changed = [c for c in after if c.document_id == "reference/cli.md"]
    again = build.embed_chunks(after, request, cache)
    assert again.computed == vectors_of(changed, request)
    assert again.reused == vectors_of(after, request) - vectors_of(changed, request)
    # Reused vectors are the stored ones, bit for bit.
    same = next(i for i, c in enumerate(after) if c.document_id == "guide/config.md")
    assert np.array_equal(again.dense[same], full.dense[[c.chunk_id for c in before].index(after[same].chunk_id)])


def test_the_cache_is_keyed_by_fingerprint(tmp_path: Path) -> None:
    vectors = np.eye(3, dtype=np.float32)
    one = EmbeddingCache(tmp_path / "c.sqlite", "fp-1", 3)
    one.store(["a", "b", "c"], vectors)
    assert sorted(one.lookup(["a", "c", "z"])) == [0, 1]
    one.close()
    other = EmbeddingCache(tmp_path / "c.sqlite", "fp-2", 3)
    assert other.lookup(["a"]) == {}
    other.close()
