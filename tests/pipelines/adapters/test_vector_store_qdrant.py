"""The services-profile vector store (Qdrant collections + alias), exercised through a full build with
qdrant-client's local mode standing in for a server (RAGLINE_QDRANT_URL=local:<path>)."""

from __future__ import annotations

from pathlib import Path

from assets.build import build_index
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.qdrant_server import ACTIVE_ALIAS
from pipelines.documents import chunk_key
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from pipelines.text import analysis


def aliases(client) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {a.alias_name: a.collection_name for a in client.get_aliases().aliases}


def test_build_activates_by_alias_swap_and_retention_drops_collections(
    settings: Settings, tmp_path: Path, corpus: Path
) -> None:
    settings = settings.model_copy(update={"qdrant_url": f"local:{tmp_path / 'qdrant'}", "index_retention": 1})
    stores = open_stores(settings)
    try:
        first = build_index(settings, stores, BuildRequest.from_settings(settings, strategies=["heading", "fixed"]))
        client = stores.qdrant()
        location = first.summary["location"]
        assert location.startswith("ragline_v_") and aliases(client) == {ACTIVE_ALIAS: location}
        index = stores.open_index(location)
        query = load_embedder(settings.embedding_model).embed_query("Which port does the dashboard listen on?")
        hits = index.dense_search(query, 3, strategy="heading")
        assert hits[0].chunk.document_id == "guide/config.md" and hits[0].chunk.strategy == "heading"
        # The payload-free searches the query graph uses find the same chunks in the same order.
        ranked = index.dense_ranked(query, 3, strategy="heading")
        assert [r.key for r in ranked] == [chunk_key(h.chunk.chunk_id) for h in hits]
        assert index.chunks_by_key([r.key for r in ranked])[ranked[0].key] == hits[0].chunk
        sparse = index.sparse_ranked(analysis.query_vector("dashboard port"), 3, strategy="heading")
        assert sparse and sparse[0].key in {r.key for r in ranked}
        assert index.count() == first.summary["chunks"]

        (corpus / "guide" / "extra.md").write_text("# Webhooks\n\nHarbor calls a webhook after every sync.\n")
        second = build_index(settings, stores, BuildRequest.from_settings(settings))
        assert aliases(client) == {ACTIVE_ALIAS: second.summary["location"]}
        assert not client.collection_exists(location)  # retention 1: the first version's collection is dropped
        assert stores.registry.get(first.version).state == "deleted"  # type: ignore[union-attr]
    finally:
        stores.close()


def test_a_forced_rebuild_writes_a_fresh_collection_and_swaps_the_alias(settings: Settings, tmp_path: Path) -> None:
    """Forcing a rebuild of the active version writes a new collection (servers keep reading the old one until
    they poll the registry), swaps the alias to it, and the next activation drops the replaced collection."""
    settings = settings.model_copy(update={"qdrant_url": f"local:{tmp_path / 'qdrant'}"})
    stores = open_stores(settings)
    try:
        first = build_index(settings, stores, BuildRequest.from_settings(settings))
        client = stores.qdrant()
        old = first.summary["location"]
        forced = build_index(settings, stores, BuildRequest.from_settings(settings), force=True)
        new = forced.summary["location"]
        assert forced.built and forced.version == first.version
        assert new.startswith(old + "_") and aliases(client) == {ACTIVE_ALIAS: new}
        active = stores.registry.active()
        assert active is not None and active.location == new
        assert stores.open_index(new).count() == forced.summary["chunks"] == first.summary["chunks"]
        # Another server may still be reading the replaced collection: it stays until the next activation.
        assert client.collection_exists(old) and stores.registry.superseded() == [old]
        again = build_index(settings, stores, BuildRequest.from_settings(settings), force=True)
        assert not client.collection_exists(old) and stores.registry.superseded() == [new]
        assert aliases(client) == {ACTIVE_ALIAS: again.summary["location"]}
    finally:
        stores.close()
