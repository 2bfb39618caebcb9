"""The ingestion graph through Dagster, on the fixture corpus, against real PostgreSQL and Qdrant Edge."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from assets.build import BuildFailed, build_index, dagster_instance
from pipelines.ingestion import build
from pipelines.ingestion.build import BuildRequest
from pipelines.ports import BuildCancelled, StoreUnavailable
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from query_graph.service import QueryService


def test_build_registers_and_activates_a_checked_index(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    assert built.built and built.run_id
    active = stores.registry.active()
    assert active is not None and active.version == built.version
    assert active.state == "active" and active.checks["point_count_equals_chunks"]["passed"]
    assert active.document_count == 3  # notes/** excluded
    index = stores.open_index(active.location)
    assert index.count() == active.chunk_count > 0
    documents = {h.chunk.document_id for h in index.dense_search(_vector(settings, "port"), 20)}
    assert documents == {"guide/install.md", "guide/config.md", "reference/cli.md"}
    # Dagster recorded the run, its asset materialisations and the blocking checks.
    with dagster_instance(settings) as instance:
        run = instance.get_run_by_id(built.run_id)
        assert run is not None and run.is_success
        assert instance.get_latest_materialization_event(_key("active_index")) is not None


def test_unchanged_source_is_not_rebuilt_and_a_change_makes_a_new_version(
    settings: Settings,
    stores: Stores,
    built,
    corpus: Path,  # type: ignore[no-untyped-def]
) -> None:
    again = build_index(settings, stores, BuildRequest.from_settings(settings))
    assert not again.built and again.version == built.version
    (corpus / "guide" / "config.md").write_text("# Configuration\n\nThe dashboard now listens on port 9000.\n")
    changed = build_index(settings, stores, BuildRequest.from_settings(settings))
    assert changed.built and changed.version != built.version
    states = {v.version: v.state for v in stores.registry.versions()}
    assert states == {built.version: "retired", changed.version: "active"}


def test_an_upgrade_that_cleans_or_chunks_otherwise_makes_a_new_version(
    settings: Settings, stores: Stores, built, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    # The same source, processed by newer rules: reusing the old version would keep the old chunks.
    monkeypatch.setattr(build, "PROCESSING_VERSION", build.PROCESSING_VERSION + 1)
    upgraded = build_index(settings, stores, BuildRequest.from_settings(settings))
    assert upgraded.built and upgraded.version != built.version
    assert stores.registry.active().version == upgraded.version  # type: ignore[union-attr]


def test_a_failing_check_leaves_the_active_index_alone(settings: Settings, stores: Stores, built, corpus: Path) -> None:  # type: ignore[no-untyped-def]
    # A page in a language outside the configured set: a blocking check must stop activation. (A chunk over the token
    # limit no longer comes from any input, since the chunker cuts even a word of 2,000 tokens; that check's own
    # failure is tested in tests/pipelines/ingestion/test_index_checks.py.)
    (corpus / "guide" / "webhooks.md").write_text("# Webhooks\n\nHarbor calls a webhook after every sync.\n")
    german_only = settings.model_copy(update={"languages": ["de"]})
    # The message names the sub-check, so the operator need not open Dagster to learn why.
    with pytest.raises(BuildFailed, match="languages_allowed failed: document_languages_allowed"):
        build_index(german_only, stores, BuildRequest.from_settings(german_only))
    assert stores.registry.active().version == built.version  # type: ignore[union-attr]


def test_a_build_cancelled_while_it_embeds_leaves_the_active_index_alone(
    settings: Settings, stores: Stores, built, corpus: Path
) -> None:  # type: ignore[no-untyped-def]
    """The cancel check is asked before each run and between embedding batches: a cancel that arrives while the
    build embeds stops it there (nothing written to a store), and the version is marked failed."""
    (corpus / "guide" / "new.md").write_text("# New\n\nA new page about harbor webhooks.\n")
    request = BuildRequest.from_settings(settings)
    runs = 2 + len(request.strategies)  # documents, one per strategy, then embeddings to activation
    asked: list[bool] = []

    def cancelled() -> bool:  # asked once before each run, then from the embedding batches
        asked.append(len(asked) >= runs)
        return asked[-1]

    with pytest.raises(BuildCancelled, match="cancelled"):
        build_index(settings, stores, request, cancelled=cancelled)
    assert asked.count(False) == runs  # every run started; the first check inside the embedding run stopped it
    states = {v.version: v.state for v in stores.registry.versions()}
    assert states[built.version] == "active" and sorted(states.values()) == ["active", "failed"]
    assert stores.registry.active().version == built.version  # type: ignore[union-attr]
    # Cancelled before anything ran: the same.
    (corpus / "guide" / "other.md").write_text("# Other\n\nAnother page.\n")
    with pytest.raises(BuildCancelled):
        build_index(settings, stores, BuildRequest.from_settings(settings), cancelled=lambda: True)
    assert stores.registry.active().version == built.version  # type: ignore[union-attr]


def test_the_embedding_fans_out_into_steps_and_finds_the_same_chunks(
    settings: Settings, stores: Stores, built, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`RAGLINE_EMBEDDING_FANOUT=3`: the new texts are embedded in three steps (in-process, one after the other),
    and the version is the same as one step builds, its search finding the same chunks."""
    from dagster import AssetKey

    # A data dir of its own (an empty embedding cache): validated afresh, not copied, so that no path derived from
    # the first one's home is kept.
    fanned = Settings.model_validate(
        {
            **settings.model_dump(exclude_unset=True),
            "home": tmp_path / "fanned",
            "embedding_fanout": 3,
            "postgres_schema": settings.postgres_schema + "_f",
        }
    )
    other = open_stores(fanned)
    try:
        outcome = build_index(fanned, other, BuildRequest.from_settings(fanned))
        assert outcome.built and outcome.version == built.version
        with dagster_instance(fanned) as instance:  # this build's last run (the instance may be shared)
            logs = instance.all_logs(str(outcome.run_id))
        materialized = [
            e.asset_materialization
            for e in logs
            if e.asset_materialization is not None and e.asset_materialization.asset_key == AssetKey("embeddings")
        ]
        assert len(materialized) == 1
        metadata = materialized[0].metadata
        assert metadata["embedding_steps"].value == 3 and metadata["computed"].value > 0
        batch_steps = {e.step_key for e in logs if e.step_key and "embed_batch[" in e.step_key}
        assert len(batch_steps) == 3, batch_steps
        contents = []
        for opened in (stores, other):
            index = opened.open_index(opened.registry.active().location)  # type: ignore[union-attr]
            contents.append({(c.chunk_id, c.text) for c in index.scroll_chunks()})
            index.close()
        assert contents[0] == contents[1]
        # The vectors of texts embedded in other batches differ in the last digits (padding), so the ranking below
        # the first place may too; the answer does not.
        question = "Which port does the harbor dashboard listen on?"
        one = QueryService(settings, stores).answer(question)
        three = QueryService(fanned, other).answer(question)
        assert three["retrieved"][0]["chunk_id"] == one["retrieved"][0]["chunk_id"] and "7420" in three["answer"]
    finally:
        other.close()
        with psycopg.connect(str(settings.postgres_dsn), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {fanned.postgres_schema} CASCADE")


def test_a_failing_store_write_marks_the_version_failed(
    settings: Settings, stores: Stores, built, corpus: Path
) -> None:  # type: ignore[no-untyped-def]
    (corpus / "guide" / "new.md").write_text("# New\n\nA new page about harbor webhooks.\n")
    shutil.rmtree(settings.shards_dir)
    settings.shards_dir.write_text("not a directory")  # the shard cannot be created
    with pytest.raises(BuildFailed):
        build_index(settings, stores, BuildRequest.from_settings(settings))
    states = {v.version: v.state for v in stores.registry.versions()}
    assert states[built.version] == "active" and sorted(states.values()) == ["active", "failed"]


def test_a_forced_rebuild_of_the_served_version_switches_to_a_fresh_shard(
    settings: Settings, stores: Stores, built
) -> None:  # type: ignore[no-untyped-def]
    """A QueryService holds the active version's Qdrant Edge shard open, and a shard admits one handle. A forced
    rebuild of the same content writes a fresh shard, activation switches the version's row to it, the service
    reopens on its next registry poll and answers from it, and the old shard goes once the service let go."""
    service = QueryService(settings, stores)
    assert service.answer("Which port does the harbor dashboard listen on?")["status"] == "answered"
    old = stores.registry.active()
    assert old is not None and old.location == stores.location_for(built.version)
    with pytest.raises(StoreUnavailable, match="WouldBlock"):  # the service holds it: a second handle fails
        stores.open_index(old.location)

    forced = build_index(settings, stores, BuildRequest.from_settings(settings), force=True)
    assert forced.built and forced.version == built.version
    new = stores.registry.active()
    assert new is not None and new.version == built.version and new.state == "active"
    assert new.location != old.location and forced.summary["location"] == new.location
    assert Path(new.location).parent == settings.shards_dir
    assert new.chunk_count == old.chunk_count and new.checks["point_count_equals_chunks"]["passed"]
    assert Path(old.location).is_dir()  # still open in the service: not removed under it
    assert stores.registry.superseded() == [old.location]

    reply = service.answer("What does retention_days do?")  # registry_poll_seconds=0: the service reopens
    assert reply["status"] == "answered" and reply["cache"] == "miss"
    assert reply["retrieved"] and reply["index"]["content_version"] == built.version
    assert service.indexes.current()[0].location == new.location
    assert not Path(old.location).exists() and stores.registry.superseded() == []  # released, then dropped
    assert [v.version for v in stores.registry.versions()] == [built.version]
    assert sorted(p.name for p in settings.shards_dir.iterdir()) == [Path(new.location).name]


def test_the_build_stores_every_sentence_vector_an_answer_reads(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    from dagster import DagsterEventType

    with dagster_instance(settings) as instance:
        events = instance.all_logs(built.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        evaluations = {
            e.dagster_event.event_specific_data.check_name: e.dagster_event.event_specific_data for e in events
        }  # type: ignore[union-attr]
    stored = evaluations["sentence_vectors_are_stored"]
    assert stored.passed and stored.metadata["results"].value["sentence_vectors_stored"]["texts"] > 20
    # A question's sentence ranker then finds them all: the embedding model reads the question only.
    service = QueryService(settings, stores)
    asked: list[str] = []
    embedded: list[str] = []
    vectors, embed_passages = service.back.passage_vectors.vectors, service.embedder.embed_passages

    def looked_up(embedder, texts):  # type: ignore[no-untyped-def]
        asked.extend(texts)
        return vectors(embedder, texts)

    def counted(texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        embedded.extend(texts)
        return embed_passages(texts, *args, **kwargs)

    service.back.passage_vectors.vectors = looked_up  # type: ignore[method-assign]
    service.embedder.embed_passages = counted  # type: ignore[method-assign]
    reply = service.answer("How long does harbor keep build logs, and how do I change that?")
    assert reply["status"] == "answered" and "14 days" in reply["answer"]
    assert len(asked) >= 3 and embedded == []


def test_bad_source_is_a_clear_error(settings: Settings, stores: Stores, tmp_path: Path) -> None:
    from pipelines.ingestion.loaders import SourceError

    with pytest.raises(SourceError, match="does not exist"):
        build_index(settings, stores, BuildRequest.from_settings(settings, source=str(tmp_path / "missing")))
    with pytest.raises(SourceError, match="no documents"):
        build_index(settings, stores, BuildRequest.from_settings(settings, include=["**/*.rst"]))


def _vector(settings: Settings, text: str):  # type: ignore[no-untyped-def]
    from pipelines.adapters.embedders import load_embedder

    return load_embedder(settings.embedding_model).embed_query(text)


def _key(name: str):  # type: ignore[no-untyped-def]
    from dagster import AssetKey

    return AssetKey(name)
