"""The litellm generator through the whole query graph, against a real OpenAI-compatible server on
loopback (tests/llm_loopback.py: real HTTP and SSE; completions from a deterministic procedure, not a
model). Marker-bearing and marker-less answers, fallback, clarify, no_answer, forged markers, outages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.answering.litellm_generator import Passage, attach_citation, classify, sentences_as_they_complete
from query_graph.service import QueryFailed
from tests.llm_loopback import closed_port, loopback_llm
from tests.query_graph.harbor import Harbor, harbor_index

PORT_Q = "Which port does the harbor dashboard listen on?"
LITELLM = {"generator": "litellm"}


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("harbor"), request) as index:
        yield index


def llm_settings(api_base: str, **extra: object) -> dict[str, object]:
    return {"llm_model": "openai/loopback", "llm_api_base": api_base, "llm_backoff_seconds": 0.01, **extra}


def test_sentences_are_released_as_they_complete() -> None:
    tokens = list("The port is 7420. [C:ab-1] Set HARBOR_PORT to change it [C:ab-1]. Logs last 14 days.")
    assert list(sentences_as_they_complete(tokens)) == [
        "The port is 7420. [C:ab-1]",
        "Set HARBOR_PORT to change it [C:ab-1].",
        "Logs last 14 days.",
    ]
    assert classify("NO_ANSWER") == "no_answer" and classify("CLARIFY: which one?") == "clarify"


def test_a_sentence_without_a_marker_gets_the_passage_that_supports_it() -> None:
    passages = [
        Passage("aa-0", "Install", "Harbor runs on Linux and macOS."),
        Passage("bb-1", "Ports", "The dashboard listens on port 7420 by default."),
    ]
    assert attach_citation("The dashboard listens on port 7420.", passages, 0.6) == (
        "The dashboard listens on port 7420 [C:bb-1]."
    )
    assert attach_citation("Harbor is written in Rust.", passages, 0.6) is None


def test_litellm_answer_with_markers_is_validated_and_cited(harbor: Harbor) -> None:
    with loopback_llm() as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["generator"] == "litellm" and reply["provider"]["role"] == "primary"
    assert not reply["provider"]["fallback_used"]
    assert reply["citations"][0]["document_id"] == "guide/config.md"
    assert reply["verification"]["attached_citations"] == 0 and reply["verification"]["mode"] == "lexical"


def test_marker_less_model_output_still_yields_cited_sentences(harbor: Harbor) -> None:
    with loopback_llm(mode="plain") as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["verification"]["attached_citations"] == 1
    # "Harbor is a tool." is supported by no passage: it is not released.
    assert "Harbor is a tool" not in reply["answer"] and reply["verification"]["dropped_sentences"] == 1
    assert reply["citations"] and f"[C:{reply['citations'][0]['chunk_id']}]" in reply["answer"]


def test_fallback_provider_is_reported_in_the_reply(harbor: Harbor) -> None:
    with loopback_llm() as backup:
        settings = llm_settings(
            f"http://127.0.0.1:{closed_port()}/v1",
            llm_fallback_model="openai/backup",
            llm_fallback_api_base=backup.api_base,
        )
        reply = harbor.service(**settings).answer(PORT_Q, variants=LITELLM)
    assert reply["status"] == "answered"
    assert reply["provider"]["role"] == "fallback" and reply["provider"]["fallback_used"]
    assert reply["provider"]["model"] == "openai/backup"


def test_generator_down_after_retries_is_503(harbor: Harbor) -> None:
    settings = llm_settings(f"http://127.0.0.1:{closed_port()}/v1", llm_retries=1)
    with pytest.raises(QueryFailed) as info:
        harbor.service(**settings).answer(PORT_Q, variants=LITELLM)
    assert info.value.status == 503 and info.value.code == "generation_unavailable"


def test_forged_marker_from_the_model_is_502(harbor: Harbor) -> None:
    with loopback_llm(mode="forged") as llm, pytest.raises(QueryFailed) as info:
        harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert info.value.status == 502 and info.value.code == "invalid_citation"


def test_model_clarify_and_no_answer_replies(harbor: Harbor) -> None:
    with loopback_llm(mode="clarify") as llm:
        clarify = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert clarify["status"] == "clarify" and clarify["answer"].startswith("Which part of harbor")
    assert clarify["citations"] == []
    with loopback_llm(mode="no_answer") as llm:
        none = harbor.service(**llm_settings(llm.api_base)).answer(PORT_Q, variants=LITELLM)
    assert none["status"] == "no_answer" and none["citations"] == []


def test_crag_rewrites_through_the_llm_when_it_generates(harbor: Harbor) -> None:
    with loopback_llm() as llm:
        reply = harbor.service(**llm_settings(llm.api_base)).answer(
            "What is the boiling point of mercury in kelvin?", variants=LITELLM
        )
    assert reply["crag"]["rewrite"] == "llm" and reply["crag"]["rewritten_query"] == "boiling kelvin mercury point"
    assert reply["status"] == "no_answer"
