"""`convex_kept_heads`: each list's first hits that retrieval keeps lead the fused list (a changelog hit that waits,
or a copy of a better passage, is not counted among them), and `release_notes=defer_but_first`: the fused first hit
never waits; on a real index of the fixture corpus."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from assets.build import build_index
from pipelines.documents import chunk_key
from pipelines.ingestion.build import BuildRequest
from pipelines.ports import VectorIndex
from pipelines.profiles import Stores
from pipelines.retrieval.bm25 import MemoryBM25Cache
from pipelines.retrieval.language_lanes import Lane
from pipelines.retrieval.retriever import RetrievalPlan
from pipelines.settings import Settings

CHANGELOG = "# Changelog\n\n## 2.0\n\nThe `harbor sync` command now retries a failed upload three times.\n"


def plan(index: VectorIndex, version: str, distinct: bool, first: bool = False) -> RetrievalPlan:
    return RetrievalPlan(
        retrieval="hybrid", bm25_engine="qdrant", fusion="convex_kept_heads", embedder=None,
        vector_index=index, bm25_memory=MemoryBM25Cache(), index_version=version,
        strategy=None, lanes=(Lane("en", True, "en"),), candidates=20, keep=5, rrf_k=60, fusion_weights=(1.0, 1.0),
        distinct=distinct, release_notes=True, release_notes_first=first,
    )  # fmt: skip


@contextmanager
def indexed(settings: Settings, stores: Stores) -> Iterator[tuple[VectorIndex, str]]:
    """The fixture corpus as it stands, built and opened; closed afterwards."""
    version = build_index(settings, stores, BuildRequest.from_settings(settings)).version
    active = stores.registry.get(version)
    assert active is not None
    index = stores.open_index(active.location)
    try:
        yield index, version
    finally:
        index.close()


def test_a_waiting_changelog_hit_does_not_take_a_head(settings: Settings, stores: Stores, corpus: Path) -> None:
    (corpus / "changes.md").write_text(CHANGELOG)
    with indexed(settings, stores) as (index, version):
        check(index, version)


def check(index: VectorIndex, version: str) -> None:
    retrieval = plan(index, version, distinct=True)
    chunks = index.scroll_chunks()
    first = {c.document_id: chunk_key(c.chunk_id) for c in sorted(chunks, key=lambda c: -c.position)}
    changelog, cli, config = first["changes.md"], first["reference/cli.md"], first["guide/config.md"]
    ranked = [(changelog, 9.0), (cli, 8.0), (config, 7.0)]
    # Release notes wait for this question: the list's two heads are the two pages retrieval will keep.
    assert retrieval.kept_first(ranked, defer_release_notes=True) == [(cli, 8.0), (config, 7.0), (changelog, 9.0)]
    # A question about releases reads the changelog first: nothing moves.
    assert retrieval.kept_first(ranked, defer_release_notes=False) == ranked
    # A hit whose passage is a better hit's (the same chunk listed twice stands in for a copy) is not a head either.
    assert retrieval.kept_first([(cli, 8.0), (cli, 7.5), (config, 7.0)], False) == [
        (cli, 8.0), (config, 7.0), (cli, 7.5),
    ]  # fmt: skip
    assert plan(index, version, distinct=False).kept_first([(cli, 8.0), (cli, 7.5), (config, 7.0)], False)[1] == (
        cli,
        7.5,
    )


def test_with_defer_but_first_the_fused_first_changelog_hit_keeps_its_place(
    settings: Settings, stores: Stores, corpus: Path
) -> None:
    (corpus / "changes.md").write_text(CHANGELOG)
    (corpus / "release-notes.md").write_text(CHANGELOG.replace("2.0", "1.9"))
    with indexed(settings, stores) as (index, version):
        first = {c.document_id: chunk_key(c.chunk_id) for c in index.scroll_chunks()}
        changes, notes = first["changes.md"], first["release-notes.md"]
        cli, config = first["reference/cli.md"], first["guide/config.md"]
        fused = [(changes, 9.0), (cli, 8.0), (notes, 7.5), (config, 7.0)]
        kept = [key for key, _ in plan(index, version, distinct=False, first=True).kept_hits(fused, True)[0]]
        assert kept == [changes, cli, config, notes]  # the first stays; the other changelog hit waits
        waited = [key for key, _ in plan(index, version, distinct=False).kept_hits(fused, True)[0]]
        assert waited == [cli, config, changes, notes]  # `defer`: every changelog hit waits
        # A question about releases: nothing waits, with either.
        assert plan(index, version, distinct=False, first=True).kept_hits(fused, False)[0] == fused
