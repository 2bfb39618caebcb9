"""Incremental embedding: after one page changes, only that page's chunks are embedded again."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.caching.embeddings import CachedVectors, EmbeddingCache
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


class Counted:
    """The packaged embedder, recording what it is asked to embed."""

    def __init__(self) -> None:
        self.inner = load_embedder(Settings().embedding_model)
        self.fingerprint, self.dimension = self.inner.fingerprint, self.inner.dimension
        self.embedded: list[str] = []

    def embed_passages(self, texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.embedded.extend(texts)
        return self.inner.embed_passages(texts, *args, **kwargs)


def test_a_query_reads_stored_vectors_and_embeds_only_the_rest(tmp_path: Path) -> None:
    embedder = Counted()
    path = tmp_path / "cache.sqlite"
    stored = ["Guide: The dashboard listens on port 7420.", "Guide: Logs are kept for 14 days."]
    cache = EmbeddingCache(path, embedder.fingerprint.digest, embedder.dimension)
    cache.store(stored, embedder.inner.embed_passages(stored))
    cache.close()
    texts = [stored[1], "Guide: Images are pushed with harbor push.", stored[0]]
    vectors = CachedVectors(path).vectors(embedder, texts)  # type: ignore[arg-type]
    assert embedder.embedded == ["Guide: Images are pushed with harbor push."]
    reread = EmbeddingCache(path, embedder.fingerprint.digest, embedder.dimension).lookup(stored)
    assert np.array_equal(vectors[0], reread[1]) and np.array_equal(vectors[2], reread[0])
    assert np.isclose(float(np.linalg.norm(vectors[1])), 1.0, atol=1e-3)
    # Another embedding model's vectors are not this one's: keyed by fingerprint, they are embedded afresh.
    assert EmbeddingCache(path, "another-model", embedder.dimension).lookup(stored) == {}


def test_a_missing_or_broken_cache_costs_time_never_the_query(tmp_path: Path) -> None:
    embedder = Counted()
    missing = tmp_path / "none" / "cache.sqlite"
    vectors = CachedVectors(missing).vectors(embedder, ["Guide: a sentence."])  # type: ignore[arg-type]
    assert vectors.shape == (1, embedder.dimension) and embedder.embedded == ["Guide: a sentence."]
    assert not missing.parent.exists()  # a query never creates the build's cache
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"not a database at all" * 100)
    again = CachedVectors(broken).vectors(embedder, ["Guide: a sentence."])  # type: ignore[arg-type]
    assert np.allclose(again, vectors, atol=1e-2)
