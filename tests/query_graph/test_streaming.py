"""stream_answer: validated sentences as they are released, then the final reply; closing stops generation.
The litellm cases run against the loopback OpenAI-compatible server (tests/llm_loopback.py)."""

from __future__ import annotations

import time

import pytest

from query_graph.service import QueryFailed
from query_graph.streaming import stream_answer
from tests.llm_loopback import closed_port, loopback_llm
from tests.query_graph.harbor import Harbor

PORT_Q = "Which port does the harbor dashboard listen on?"


def test_extractive_stream_releases_sentences_then_the_final_reply(harbor: Harbor) -> None:
    service = harbor.service()
    events = list(stream_answer(service, "How long does harbor keep build logs?"))
    sentences, final = events[:-1], events[-1]
    assert final["type"] == "final" and final["status"] == "answered"
    assert sentences and all(e["type"] == "sentence" and e["chunk_ids"] for e in sentences)
    assert " ".join(e["text"] for e in sentences) == final["answer"]
    assert {c for e in sentences for c in e["chunk_ids"]} == {c["chunk_id"] for c in final["citations"]}
    again = list(stream_answer(service, "How long does harbor keep build logs?"))  # a cache hit
    assert again[-1]["cache"] == "hit" and [e["text"] for e in again[:-1]] == [e["text"] for e in sentences]


def test_no_answer_streams_only_the_final_event(harbor: Harbor) -> None:
    events = list(stream_answer(harbor.service(), "What is the boiling point of mercury in kelvin?"))
    assert [e["type"] for e in events] == ["final"] and events[0]["status"] == "no_answer"


def test_litellm_sentences_arrive_while_the_model_is_still_writing(harbor: Harbor) -> None:
    with loopback_llm(mode="long", token_delay=0.02) as llm:
        service = harbor.service(llm_model="openai/loopback", llm_api_base=llm.api_base)
        events = stream_answer(service, PORT_Q, {"generator": "litellm"})
        first = next(events)
        sent_at_first = llm.tokens_sent
        rest = list(events)
    total = llm.tokens_sent
    assert first["type"] == "sentence" and "7420" in first["text"]
    assert sent_at_first < total / 2, "the first sentence came out long before the model finished"
    assert rest[-1]["type"] == "final" and len(rest) == 12  # 11 more sentences and the final reply


def test_closing_the_stream_stops_the_generator(harbor: Harbor) -> None:
    with loopback_llm(mode="long", token_delay=0.05) as llm:
        service = harbor.service(llm_model="openai/loopback", llm_api_base=llm.api_base)
        events = stream_answer(service, PORT_Q, {"generator": "litellm"})
        assert next(events)["type"] == "sentence"
        events.close()  # the client went away
        assert llm.disconnected.wait(10), "the provider's response was closed"
        stopped_at = llm.tokens_sent
        time.sleep(0.5)
        assert llm.tokens_sent == stopped_at and stopped_at < 12 * 9


def test_a_failure_is_raised_from_the_stream(harbor: Harbor) -> None:
    service = harbor.service(llm_api_base=f"http://127.0.0.1:{closed_port()}/v1", llm_retries=0)
    with pytest.raises(QueryFailed) as info:
        list(stream_answer(service, PORT_Q, {"generator": "litellm"}))
    assert info.value.code == "generation_unavailable"
