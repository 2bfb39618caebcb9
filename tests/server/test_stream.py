"""POST /v1/query/stream: validated sentences as Server-Sent Events, then a final event."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from fastapi.testclient import TestClient

from tests.llm_loopback import loopback_llm
from tests.server.conftest import ROOT, ServerEnv, fresh_question, live_server


def read_events(client: TestClient, body: dict[str, Any]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    with client.stream("POST", "/v1/query/stream", json=body, headers=ROOT) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, [("http_error", response.json())]
        assert response.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                assert kind is not None
                events.append((kind, json.loads(line.removeprefix("data: "))))
    return 200, events


def test_sentences_then_final_with_citations_and_timings(client: TestClient) -> None:
    status, events = read_events(
        client, {"question": fresh_question("Which port does the harbor dashboard listen on?")}
    )
    assert status == 200
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "final" and kinds.count("final") == 1 and kinds[0] == "sentence"
    final = events[-1][1]
    assert final["status"] == "answered" and final["citations"] and final["timings_ms"]["total"] > 0
    sentences = [data for kind, data in events if kind == "sentence"]
    assert any("7420" in s["text"] for s in sentences)
    cited = {c["chunk_id"] for c in final["citations"]}
    for sentence in sentences:  # every streamed sentence is validated: it cites a chunk the final lists
        assert sentence["chunk_ids"] and set(sentence["chunk_ids"]) <= cited
        assert f"[C:{sentence['chunk_ids'][0]}]" in sentence["text"]
    metrics = client.get("/metrics").text
    assert "ragline_first_sentence_seconds_count 1.0" in metrics


def test_no_answer_streams_only_the_final_event(client: TestClient) -> None:
    status, events = read_events(client, {"question": fresh_question("What is the airspeed of an unladen swallow?")})
    assert status == 200
    assert [kind for kind, _ in events] == ["final"] and events[0][1]["status"] == "no_answer"


def test_stream_errors_before_the_first_event_are_plain_http_errors(client: TestClient) -> None:
    status, events = read_events(client, {"question": "x" * 5000})
    assert status == 413 and events[0][1]["error"]["code"] == "question_too_long"
    status, events = read_events(client, {"question": "Which port?", "variants": {"rerank": "psychic"}})
    assert status == 400 and events[0][1]["error"]["code"] == "unknown_variant"


def test_a_client_that_hangs_up_stops_the_generation(server_env: ServerEnv) -> None:
    """Over a real socket: read the first sentence, hang up; the model's stream is closed soon after."""
    with loopback_llm(mode="long", token_delay=0.05) as llm:
        settings = server_env.settings.model_copy(update={"llm_model": "openai/loopback", "llm_api_base": llm.api_base})
        with live_server(settings, server_env.stores) as url:
            body = {
                "question": fresh_question("Which port does the harbor dashboard listen on?"),
                "variants": {"generator": "litellm"},
            }
            with httpx.stream("POST", f"{url}/v1/query/stream", json=body, headers=ROOT, timeout=60) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith("event: sentence"):
                        break
            # the response is closed here: the client went away after its first sentence
            assert llm.disconnected.wait(15), "the generation kept going after the client left"
            stopped_at = llm.tokens_sent
            time.sleep(0.5)
            assert llm.tokens_sent == stopped_at < 12 * 9
