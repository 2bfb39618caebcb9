"""Access groups: how a page gets them, that a build stores them in every chunk and in the content version, and
that a caller's view of an index (Qdrant Edge and a Qdrant collection alike) holds only what it may read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assets.build import build_index
from pipelines.access import EVERYTHING, PUBLIC_ONLY, Access, AccessError, AccessRules, front_matter_access
from pipelines.adapters.embedders import load_embedder
from pipelines.caching.embeddings import EmbeddingCache
from pipelines.guardrails.topic_gate import Centroids, centroid_of
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.dense_units import embedding_text
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from pipelines.text import analysis
from query_graph.service import visible_index


def test_front_matter_wins_then_the_first_matching_rule_then_the_default() -> None:
    rules = AccessRules.of(["public"], {"internal/**": ["staff"], "internal/legal/*.md": ["legal"], "*.rst": ["eng"]})
    assert rules.for_page("internal/legal/nda.md", "# NDA\n") == ("staff",)  # the first match wins
    assert rules.for_page("internal/legal/nda.md", "---\naccess: [legal, Staff]\n---\n# NDA") == ("legal", "staff")
    assert rules.for_page("setup.rst", "Setup\n=====\n") == ("eng",)
    assert rules.for_page("guide/setup.md", "---\ntitle: Setup\n---\n") == ("public",)
    assert rules.for_page("guide/setup.md", "---\naccess: staff\n---\n") == ("staff",)
    internal = AccessRules.of(["staff"], {})
    assert internal.for_page("any.md", "# Any") == ("staff",)


def test_html_and_restructuredtext_pages_declare_their_groups_too() -> None:
    rules = AccessRules.of(["public"], {"internal/**": ["staff"]})
    html = '<html><head><meta charset="utf-8"><meta name="access" content="legal, staff"><title>NDA</title>'
    assert rules.for_page("internal/nda.html", html) == ("legal", "staff")
    assert rules.for_page("internal/faq.html", '<html><head><meta name="description" content="x">') == ("staff",)
    assert rules.for_page("guide/setup.rst", ":orphan:\n:access: eng\n\nSetup\n=====\n") == ("eng",)
    # Only a field at the top is the page's metadata, as Sphinx reads it; further down it is text.
    assert rules.for_page("guide/setup.rst", "Setup\n=====\n\n:access: eng\n") == ("public",)
    with pytest.raises(AccessError, match=r"bad\.html"):
        rules.for_page("bad.html", '<meta name="access" content="Not Valid!">')


@pytest.mark.parametrize(
    "front", ["---\naccess: []\n---\n", "---\naccess: {a: 1}\n---\n", "---\naccess: [Bad Name]\n---\n"]
)
def test_a_bad_access_declaration_is_a_clear_error(front: str) -> None:
    with pytest.raises(AccessError, match=r"page\.md"):
        AccessRules().for_page("page.md", front + "# Page")
    assert front_matter_access("# No front matter", "page.md") is None


def test_a_callers_groups() -> None:
    staff = Access.of(["staff"])
    assert staff.groups == {"public", "staff"} and staff.key == "public,staff"
    assert staff.allows(["staff", "legal"]) and staff.allows(["public"]) and not staff.allows(["legal"])
    assert PUBLIC_ONLY.allows(None)  # a chunk indexed before groups existed is public
    assert Access.of(["*"]) is EVERYTHING and EVERYTHING.allows(["legal"]) and EVERYTHING.key == "*"
    with pytest.raises(AccessError):
        Access.of(["no spaces"])


@pytest.fixture(params=["edge", "qdrant_collection"])
def grouped_settings(request: pytest.FixtureRequest, settings: Settings, corpus: Path, tmp_path: Path) -> Settings:
    """The fixture corpus with `reference/**` for `eng` by rule, the install page for `staff` by front matter and an
    HTML page for `legal` by its meta tag."""
    install = corpus / "guide" / "install.md"
    install.write_text("---\naccess: [staff]\n---\n\n" + install.read_text())
    (corpus / "guide" / "faq.html").write_text(
        '<html><head><meta name="access" content="legal"><title>FAQ</title></head>'
        "<body><h1>FAQ</h1><p>Harbor answers support requests within two days.</p></body></html>"
    )
    update: dict[str, object] = {"access_rules": {"reference/**": ["eng"]}}
    if request.param == "qdrant_collection":
        update["qdrant_url"] = f"local:{tmp_path / 'qdrant'}"
    return settings.model_copy(update=update)


GROUPS = {
    "guide/install.md": ["staff"],
    "guide/config.md": ["public"],
    "reference/cli.md": ["eng"],
    "guide/faq.html": ["legal"],
}


def test_a_build_stores_each_pages_groups_and_a_callers_view_holds_only_its_pages(grouped_settings: Settings) -> None:
    stores = open_stores(grouped_settings)
    try:
        outcome = build_index(grouped_settings, stores, BuildRequest.from_settings(grouped_settings))
        version = stores.registry.get(outcome.version)
        assert version is not None and version.chunk_settings["access"]["rules"] == {"reference/**": ["eng"]}
        index = stores.open_index(version.location)
        chunks = index.scroll_chunks()
        assert {c.document_id: c.access for c in chunks} == GROUPS
        # The version records the groups its pages hold: a caller in all of them reads the index unfiltered.
        assert version.chunk_settings["access"]["groups"] == ["eng", "legal", "public", "staff"]
        assert visible_index(version, index, Access.of(["eng", "legal", "staff"])) is index
        assert visible_index(version, index, Access.of(["staff"])) is not index
        embedder = load_embedder(grouped_settings.embedding_model)
        query = embedder.embed_query("How do I install harbor and upload artefacts?")
        words = analysis.query_vector("harbor install sync registry upload port")
        for access, readable in (
            (PUBLIC_ONLY, {"guide/config.md"}),
            (Access.of(["staff"]), {"guide/config.md", "guide/install.md"}),
            (Access.of(["eng", "staff"]), set(GROUPS) - {"guide/faq.html"}),
            (Access.of(["eng", "legal", "staff"]), set(GROUPS)),
            (EVERYTHING, set(GROUPS)),
        ):
            view = index.restricted(access)
            assert view.access_key == access.key
            found = {h.chunk.document_id for h in view.dense_search(query, 50)}
            found |= {h.chunk.document_id for h in view.sparse_search(words, 50)}
            assert found == readable, access
            ranked = [r.key for r in view.dense_ranked(query, 50)] + [r.key for r in view.sparse_ranked(words, 50)]
            assert {c.document_id for c in view.chunks_by_key(ranked).values()} == readable
            assert {c.document_id for c in view.scroll_chunks()} == readable
            # Reading by id is filtered too: the ids of every chunk give back only the readable ones.
            assert {c.document_id for c in view.get_chunks([c.chunk_id for c in chunks])} == readable
            assert view.count() == sum(1 for c in chunks if c.document_id in readable)
        index.close()
    finally:
        stores.close()


def test_changing_a_pages_groups_is_a_new_version_that_embeds_nothing_again(grouped_settings: Settings) -> None:
    stores = open_stores(grouped_settings)
    try:
        first = build_index(grouped_settings, stores, BuildRequest.from_settings(grouped_settings))
        page = Path(str(grouped_settings.source)) / "guide" / "config.md"
        page.write_text(
            page.read_text().replace("title: Configuring harbor", "title: Configuring harbor\naccess: [ops]")
        )
        second = build_index(grouped_settings, stores, BuildRequest.from_settings(grouped_settings))
        assert second.version != first.version
        row = stores.registry.get(second.version)
        assert row is not None and row.timings["embedded"] == 0 and row.timings["reused"] > 0
        index = stores.open_index(row.location)
        assert {c.access[0] for c in index.scroll_chunks() if c.document_id == "guide/config.md"} == {"ops"}
        index.close()
    finally:
        stores.close()


def test_the_topic_gate_of_a_group_set_is_the_centroid_of_its_pages_only(grouped_settings: Settings) -> None:
    stores = open_stores(grouped_settings)
    try:
        outcome = build_index(grouped_settings, stores, BuildRequest.from_settings(grouped_settings))
        version = stores.registry.get(outcome.version)
        assert version is not None
        index = stores.open_index(version.location)
        embedder = load_embedder(grouped_settings.embedding_model)
        centroids = Centroids(grouped_settings.data_dir)
        strategy = grouped_settings.chunk_strategy
        whole = centroids.get(version.version, strategy, index, embedder)
        public = centroids.get(version.version, strategy, index.restricted(PUBLIC_ONLY), embedder)
        assert whole is not None and public is not None and not np.allclose(whole, public)
        visible = [c for c in index.scroll_chunks(strategy) if c.access == ["public"]]
        # The vectors the build left in the embedding cache, of the public chunks only.
        cache = EmbeddingCache(grouped_settings.data_dir / "embedding_cache.sqlite", embedder.fingerprint.digest, 384)
        found = cache.lookup([embedding_text(c) for c in visible])
        cache.close()
        assert len(found) == len(visible)
        assert np.allclose(public, centroid_of(np.stack([found[i] for i in sorted(found)])), atol=1e-6)
        index.close()
    finally:
        stores.close()
