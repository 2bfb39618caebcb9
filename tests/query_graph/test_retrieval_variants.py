"""Retrieval variants on a real index: dense, BM25 (Qdrant sparse and rank-bm25 in memory), hybrid with
RRF / weighted RRF / DBSF, filters, per-request top_k and variants, and a corrupted shard."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.bench.query import plan_for
from pipelines.documents import chunk_key
from pipelines.profiles import Stores
from pipelines.retrieval.retriever import Candidate
from pipelines.settings import Settings
from query_graph.service import QueryFailed, QueryService
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"


@pytest.mark.parametrize("retrieval", ["dense", "bm25", "hybrid"])
def test_each_retrieval_variant_answers_from_the_right_page(harbor: Harbor, retrieval: str) -> None:
    reply = harbor.service().answer(PORT_Q, variants={"retrieval": retrieval})
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["citations"][0]["document_id"] == "guide/config.md"
    assert reply["variants"]["retrieval"] == retrieval
    ran = set(reply["timings_ms"])
    retrieved = reply["retrieved"]
    if retrieval == "dense":
        assert "bm25_hits" not in ran and all(r["bm25_rank"] is None for r in retrieved)
    if retrieval == "bm25":
        assert "dense_hits" not in ran and all(r["dense_rank"] is None for r in retrieved)
    if retrieval == "hybrid":  # BM25 feedback is off by default: BM25 searches with the question's own terms
        assert {"dense_hits", "bm25_hits", "fused_candidates"} <= ran


def test_memory_bm25_engine_matches_the_sparse_vectors_on_an_identifier(harbor: Harbor) -> None:
    service = harbor.service()
    question = "What does retention_days do?"
    tops = {}
    for engine in ("qdrant", "memory"):
        reply = service.answer(question, variants={"retrieval": "bm25", "bm25_engine": engine})
        tops[engine] = reply["retrieved"][0]["document_id"]
        assert reply["retrieved"][0]["bm25_score"] > 0
    assert tops == {"qdrant": "guide/config.md", "memory": "guide/config.md"}
    service.answer("How long are build logs kept?", variants={"retrieval": "bm25", "bm25_engine": "memory"})
    assert len(service.back.bm25_memory._engines) == 1, "the in-memory corpus is built once per index version"


@pytest.mark.parametrize("fusion", ["rrf", "weighted_rrf", "dbsf", "convex"])
def test_fusion_variants(harbor: Harbor, fusion: str) -> None:
    reply = harbor.service(fusion_weights=[2.0, 1.0]).answer(PORT_Q, variants={"fusion": fusion})
    assert reply["status"] == "answered" and reply["retrieved"][0]["document_id"] == "guide/config.md"
    scores = [r["fused_score"] for r in reply["retrieved"]]
    assert scores == sorted(scores, reverse=True)
    if fusion in ("dbsf", "convex"):
        assert scores[0] > 0.1  # scaled scores, not 1/(k + rank)


def test_unknown_variant_is_a_400_listing_the_valid_ones(harbor: Harbor) -> None:
    service = harbor.service()
    with pytest.raises(QueryFailed) as info:
        service.answer(PORT_Q, variants={"retrieval": "colbert"})
    assert info.value.status == 400 and info.value.code == "unknown_variant"
    assert "hybrid, dense, bm25" in info.value.message
    with pytest.raises(QueryFailed) as info:
        service.answer(PORT_Q, variants={"reranker": "none"})
    assert "valid nodes" in info.value.message and "rerank" in info.value.message
    assert set(service.variant_options()) >= {"retrieval", "rerank", "crag", "generator", "verify"}


def test_one_driver_per_variant_combination_not_per_request(harbor: Harbor) -> None:
    service = harbor.service()
    for _ in range(2):
        service.answer(PORT_Q)
        service.answer(PORT_Q, variants={"retrieval": "dense"})
        service.answer(PORT_Q, variants={"retrieval": "hybrid"})  # the same combination as the defaults
    assert len(service.back.drivers) == 2


def test_language_filter_and_per_request_top_k(harbor: Harbor) -> None:
    assert harbor.service(language_filter="en").answer(PORT_Q)["status"] == "answered"
    german_only = harbor.service(language_filter="de").answer(PORT_Q)
    assert german_only["status"] == "no_answer" and german_only["retrieved"] == []
    assert len(harbor.service().answer(PORT_Q, top_k=2)["retrieved"]) == 2


def test_corrupted_shard_is_503_not_no_answer(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    shard = Path(built.summary["location"])
    for path in [shard / "edge_config.json", *shard.glob("segments/*/segment.json")]:
        path.write_bytes(b"\x00garbage\xff" * 64)
    with pytest.raises(QueryFailed) as info:
        QueryService(settings, stores).answer(PORT_Q)
    assert info.value.status == 503 and info.value.code == "retrieval_unavailable"


@pytest.mark.parametrize("engine", ["qdrant", "memory"])
def test_bm25_feedback_searches_again_and_is_a_variant(harbor: Harbor, engine: str) -> None:
    service = harbor.service()
    on = service.answer(PORT_Q, variants={"bm25_engine": engine, "bm25_feedback": "on"})
    assert on["status"] == "answered" and on["retrieved"][0]["document_id"] == "guide/config.md"
    assert on["variants"]["bm25_feedback"] == "on" and "feedback_bm25_hits" in on["timings_ms"]
    assert "bm25_hits" not in on["timings_ms"]  # one BM25 search: the expanded one
    # The feedback read the index's term statistics, built once for this version.
    assert len(service.back.bm25_memory._engines) == 1
    off = service.answer(PORT_Q, variants={"bm25_engine": engine, "bm25_feedback": "off"})
    assert off["status"] == "answered" and off["variants"]["bm25_feedback"] == "off"
    assert "bm25_hits" in off["timings_ms"]
    # The expanded query scores the chunks with more terms: the BM25 scores differ from the plain query's.
    bm25_on = {r["chunk_id"]: r["bm25_score"] for r in on["retrieved"] if r["bm25_score"] is not None}
    bm25_off = {r["chunk_id"]: r["bm25_score"] for r in off["retrieved"] if r["bm25_score"] is not None}
    shared = set(bm25_on) & set(bm25_off)
    assert shared and any(bm25_on[c] != pytest.approx(bm25_off[c]) for c in shared)


def test_warm_builds_the_feedback_statistics_before_the_first_question(harbor: Harbor) -> None:
    service = harbor.service(bm25_feedback="on")
    service.warm()
    assert len(service.back.bm25_memory._engines) == 1
    untouched = harbor.service()  # the defaults: no feedback, no bridge hop
    untouched.warm()  # nothing reads the statistics: nothing is built
    assert len(untouched.back.bm25_memory._engines) == 0
    hop_only = harbor.service(bridge_hop="on")
    hop_only.warm()  # the bridge hop searches the in-memory engine too
    assert len(hop_only.back.bm25_memory._engines) == 1


def test_kept_chunks_come_from_the_feedback_statistics_without_a_store_call(harbor: Harbor) -> None:
    service = harbor.service()
    with_feedback, without = plan_for(service, 5, feedback=True), plan_for(service, 5, feedback=False)
    fed = with_feedback.run(PORT_Q)
    plain = without.run(PORT_Q)
    lane = with_feedback.lanes[0]
    engine = service.back.bm25_memory.engine(
        with_feedback.index_version, with_feedback.vector_index, with_feedback.strategy, lane.language
    )
    keys = [chunk_key(c.chunk.chunk_id) for c in fed]
    # The very objects the lane's in-memory engine holds: no store call read them.
    assert fed and all(c.chunk is engine.chunks[engine.positions[key]] for c, key in zip(fed, keys, strict=True))
    # Without feedback no engine is in play: the kept chunks are read from the store, fresh objects.
    assert not any(c.chunk is engine.chunks[engine.positions[chunk_key(c.chunk.chunk_id)]] for c in plain)
    # The same payloads as the store's.
    stored = with_feedback.vector_index.chunks_by_key(keys)
    assert [c.chunk for c in fed] == [stored[key] for key in keys]
    assert plain[0].chunk.document_id == fed[0].chunk.document_id == "guide/config.md"


def _copies(candidates: list[Candidate]) -> list[str]:
    """Hits whose passage (what the generator reads) lies inside a better hit's passage of the same page."""
    return [
        later.chunk.chunk_id
        for j, later in enumerate(candidates)
        for better in candidates[:j]
        if later.chunk.document_id == better.chunk.document_id
        and later.chunk.generation_text in better.chunk.generation_text
    ]


def test_a_passage_is_read_once_and_the_next_hit_takes_the_place_of_its_copies(harbor: Harbor) -> None:
    """The fixture's pages are a few short sections each, so every chunk of a page has the whole page as
    its passage (`RAGLINE_CHUNK_CONTEXT_TOKENS`): without `distinct_passages` the top hits repeat it."""
    question = "How long does harbor keep build logs, and where does it write them?"
    depth = 4
    plain = plan_for(harbor.service(distinct_passages="off"), depth).run(question)
    distinct = plan_for(harbor.service(distinct_passages="on"), depth).run(question)
    assert _copies(plain), "the fixture should give copies of one passage among the top hits"
    assert not _copies(distinct)
    # The same order, with each copy replaced by the next hit that brings a passage of its own: here each
    # of the three pages is one passage, so the list runs out at three, one hit a page.
    kept = [c.chunk.chunk_id for c in plain if c.chunk.chunk_id not in _copies(plain)]
    assert [c.chunk.chunk_id for c in distinct][: len(kept)] == kept
    assert sorted(c.chunk.document_id for c in distinct) == ["guide/config.md", "guide/install.md", "reference/cli.md"]
    # Through the graph: a variant like any other, and the reply lists what the generator was given.
    reply = harbor.service().answer(question, variants={"distinct_passages": "off"})
    assert reply["variants"]["distinct_passages"] == "off"
    on = harbor.service().answer(question)
    assert on["variants"]["distinct_passages"] == "on"
    assert len({r["chunk_id"] for r in on["retrieved"]}) == len(on["retrieved"])
