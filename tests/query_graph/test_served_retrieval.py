"""One retrieval engine: the smoke check before activation ranks, for a question, exactly the chunks the
served query path ranks on the same index version, with the default settings and with other ones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pipelines.answering.sentence_vectors import own_shown_texts
from pipelines.ingestion.build import BuildRequest
from pipelines.retrieval.smoke_check import served_search
from tests.query_graph.harbor import Harbor, harbor_index
from tests.query_graph.test_bridge_hop import PAGES, QUESTION

HARBOR_QUESTIONS = (
    "Which port does the harbor dashboard listen on?",
    "How long are build logs kept?",
    "What does retention_days do?",
    "What does harbor sync do?",
)
SETTINGS: list[dict[str, Any]] = [
    {},  # the defaults: convex_heads fusion, distinct passages, no BM25 feedback, no bridge hop
    {"fusion": "rrf", "bm25_feedback": "on", "bridge_hop": "on", "distinct_passages": "off", "top_k": 4},
    {"retrieval": "bm25", "bm25_engine": "memory"},
    {"retrieval": "dense", "candidates": 5},
    {"retrieval": "dense", "dense_sentences": "off"},
]


@pytest.fixture(scope="module")
def agent_docs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("agent"), request, PAGES) as index:
        yield index


def ranked_alike(index: Harbor, questions: tuple[str, ...], **updates: Any) -> list[list[dict[str, Any]]]:
    """Each question's retrieved chunks as the served path lists them, after checking that the smoke check's
    search lists the same. CRAG is off: a rewrite would retrieve for another question (the answer's
    business, not retrieval's), and with it off `retrieved` is the graph's `reranked_candidates`."""
    service = index.service(crag="off", **updates)
    version, opened = service.active()  # the service's own handle: a Qdrant Edge shard has one reader
    settings = service.settings
    request = BuildRequest.from_settings(settings)
    search = served_search(opened, version, settings, request, settings.chunk_strategy, own_shown_texts)
    served = []
    for question in questions:
        reply = service.answer(question)
        assert reply["status"] == "answered", question
        ids = [r["chunk_id"] for r in reply["retrieved"]]
        assert [c.chunk_id for c in search(question)] == ids, (question, updates)
        served.append(reply["retrieved"])
    return served


@pytest.mark.parametrize("updates", SETTINGS, ids=lambda u: ",".join(f"{k}={v}" for k, v in u.items()) or "defaults")
def test_smoke_check_ranks_what_the_served_path_ranks(harbor: Harbor, updates: dict[str, Any]) -> None:
    served = ranked_alike(harbor, HARBOR_QUESTIONS, **updates)
    assert all(0 < len(rows) <= updates.get("top_k", 8) for rows in served), served


def test_smoke_check_takes_the_served_second_hop(agent_docs: Harbor) -> None:
    (rows,) = ranked_alike(agent_docs, (QUESTION,), top_k=3, bridge_hop="on")
    assert any(r.get("bridge") and r["document_id"] == "install/docker.md" for r in rows), rows
