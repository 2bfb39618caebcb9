"""The in-memory BM25 engine reads the same terms as the sparse vectors a build writes, so the two
engines differ only in how they score (pipelines/retrieval/bm25.py)."""

from __future__ import annotations

from collections import Counter

from pipelines.documents import Chunk, chunk_key
from pipelines.ingestion.dense_units import embedding_text
from pipelines.retrieval.bm25 import MemoryBM25
from pipelines.text.analysis import analyzer

# A BEIR abstract: its title is not a heading, and only the title says "retention".
ABSTRACT = Chunk(
    "a-0", "4983", "Log retention in build systems", [], "", "beir://4983", "beir", "en", 0,
    "Build outputs are deleted after thirty days unless a project keeps them.",
)  # fmt: skip
PAGE = Chunk(
    "p-0", "guide/ports.md", "Ports", ["Ports", "Defaults"], "defaults", "file:///guide/ports.md", "heading",
    "en", 0, "The dashboard listens on port 7420.",
)  # fmt: skip


# rank-bm25's IDF is 0 for a term in half of a two-chunk corpus: a few more pages make the corpus real.
OTHERS = [
    Chunk(f"o-{i}", f"guide/{i}.md", "Other", ["Other"], "", f"file:///guide/{i}.md", "heading", "en", 0, text)
    for i, text in enumerate(
        ["Runners pick jobs from a queue.", "Tokens expire after a day.", "Caches speed up builds."]
    )
]


def test_engine_terms_are_the_sparse_vectors_terms() -> None:
    engine = MemoryBM25.build([ABSTRACT, PAGE], "snowball")
    analyze = analyzer("snowball")
    for chunk in (ABSTRACT, PAGE):
        assert engine.term_counts(chunk_key(chunk.chunk_id)) == Counter(analyze(embedding_text(chunk), "en"))


def test_a_word_only_in_the_title_finds_its_chunk() -> None:
    engine = MemoryBM25.build([ABSTRACT, PAGE, *OTHERS], "snowball")
    hits = engine.search("retention", 5, "en")
    assert [h.chunk.chunk_id for h in hits] == ["a-0"]
