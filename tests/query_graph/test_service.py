"""The query DAG on a real index: hybrid retrieval, cited extractive answers, caching, failures."""

from __future__ import annotations

import shutil

import pytest

from pipelines.profiles import Stores
from pipelines.settings import Settings
from query_graph.nodes.generation import Draft
from query_graph.service import QueryFailed, QueryService

# BM25 runs as `feedback_bm25_hits` by default (its query widened by the dense hits' terms).
RETRIEVAL_NODES = {"query_embedding", "dense_hits", "feedback_bm25_hits", "fused_candidates", "draft_answer"}


def test_answer_is_cited_from_the_right_page(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    reply = QueryService(settings, stores).answer("Which port does the harbor dashboard listen on?")
    assert reply["status"] == "answered"
    assert "7420" in reply["answer"]
    assert reply["citations"] and reply["citations"][0]["document_id"] == "guide/config.md"
    assert reply["citations"][0]["anchor"] == "ports"
    top = reply["retrieved"][0]
    assert top["fused_rank"] == 1 and top["dense_rank"] is not None and top["bm25_rank"] is not None
    assert set(reply["timings_ms"]) >= RETRIEVAL_NODES
    assert reply["index"] == {
        "content_version": built.version,
        "embedding_fingerprint": built.summary["embedding_fingerprint"],
    }


def test_identifier_question_is_found_by_bm25(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    reply = QueryService(settings, stores).answer("What does retention_days do?")
    assert reply["status"] == "answered"
    assert any(r["bm25_rank"] == 1 and r["document_id"] == "guide/config.md" for r in reply["retrieved"])


def test_off_topic_question_gets_no_answer(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    reply = QueryService(settings, stores).answer("What is the boiling point of mercury in kelvin?")
    assert reply["status"] == "no_answer" and reply["citations"] == []


def test_cache_hit_skips_retrieval_and_generation(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    service = QueryService(settings, stores)
    first = service.answer("How long does harbor keep build logs?")
    second = service.answer("how long does   harbor keep build logs?")
    assert first["cache"] == "miss" and second["cache"] == "hit"
    assert second["answer"] == first["answer"]
    assert not RETRIEVAL_NODES & set(second["timings_ms"])


def test_redis_down_bypasses_the_cache(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    from pipelines.adapters.redis_cache import RedisCache

    stores.cache = RedisCache("redis://127.0.0.1:1/0")  # a closed port: Redis is down
    reply = QueryService(settings, stores).answer("Which port does the harbor dashboard listen on?")
    assert reply["status"] == "answered" and reply["cache"] == "bypass"


def test_forged_citation_is_rejected(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    service = QueryService(settings, stores)
    forged = Draft(text="The dashboard listens on port 7420 [C:not-a-chunk-0].", generator="forged")
    with pytest.raises(QueryFailed) as info:
        service.answer("Which port does the dashboard use?", overrides={"draft_answer": forged})
    assert info.value.status == 502 and info.value.code == "invalid_citation"


def test_missing_shard_is_503_not_no_answer(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    shutil.rmtree(built.summary["location"])
    with pytest.raises(QueryFailed) as info:
        QueryService(settings, stores).answer("Which port?")
    assert info.value.status == 503 and info.value.code == "retrieval_unavailable"


def test_no_active_index_is_503(settings: Settings, stores: Stores) -> None:
    with pytest.raises(QueryFailed) as info:
        QueryService(settings, stores).answer("Which port?")
    assert info.value.status == 503 and info.value.code == "no_active_index"


def test_index_with_another_fingerprint_is_refused(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    stores.registry.update(built.version, fingerprint="0000000000000000")
    with pytest.raises(QueryFailed) as info:
        QueryService(settings, stores).check_ready()
    assert info.value.code == "index_fingerprint_mismatch"
