"""`language` on POST /v1/query and /v1/query/stream: the client states the question's language (ISO
639-1), the language gate judges it instead of the words, and a code that is not ISO 639-1 is a 422."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import ROOT, fresh_question
from tests.server.test_stream import read_events

QUESTION = "Which port does the harbor dashboard listen on?"


def test_a_stated_language_outside_the_index_is_refused(client: TestClient) -> None:
    question = fresh_question(QUESTION)
    stated = client.post("/v1/query", json={"question": question, "language": "es"}, headers=ROOT)
    assert stated.status_code == 200, stated.text
    body = stated.json()
    assert body["status"] == "refused" and body["guardrail"]["rule"] == "language.unsupported"
    assert body["guardrail"]["language"] == "es" and body["guardrail"]["language_source"] == "request"
    assert body["guardrail"]["confidence"] == 1.0 and "Questions in 'es' are not supported" in body["answer"]
    assert "dense_hits" not in body["timings_ms"]

    # Too short for the words to tell ("What port?"): the stated language still decides.
    short = client.post("/v1/query", json={"question": "What port?", "language": "pt-BR"}, headers=ROOT).json()
    assert short["status"] == "refused" and short["guardrail"]["language"] == "pt"

    typed = client.post("/v1/query", json={"question": question}, headers=ROOT).json()
    assert typed["status"] == "answered" and typed["guardrail"]["language_source"] == "text"
    assert typed["cache"] == "miss"  # the refusal was not cached


def test_a_stated_language_the_words_confirm_shares_the_typed_answer(client: TestClient) -> None:
    question = fresh_question(QUESTION)
    typed = client.post("/v1/query", json={"question": question}, headers=ROOT).json()
    assert typed["status"] == "answered" and typed["cache"] == "miss"
    stated = client.post("/v1/query", json={"question": question, "language": "EN"}, headers=ROOT).json()
    assert stated["cache"] == "hit" and stated["answer"] == typed["answer"]
    assert stated["guardrail"]["language"] == "en" and stated["guardrail"]["language_source"] == "request"


@pytest.mark.parametrize("language", ["xx", "english", "e", "en-", "de-DE-x-long-tail", ""])
def test_a_code_that_is_not_iso_639_1_is_a_422(client: TestClient, language: str) -> None:
    response = client.post("/v1/query", json={"question": QUESTION, "language": language}, headers=ROOT)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and "language" in error["message"]
    status, events = read_events(client, {"question": QUESTION, "language": language})
    assert status == 422 and events[0][1]["error"]["code"] == "invalid_request"


def test_the_stream_route_passes_the_stated_language(client: TestClient) -> None:
    status, events = read_events(client, {"question": fresh_question(QUESTION), "language": "de"})
    assert status == 200 and [kind for kind, _ in events] == ["final"]
    final = events[0][1]
    assert final["status"] == "refused" and final["guardrail"]["language"] == "de"
    assert final["guardrail"]["language_source"] == "request"


def test_openapi_documents_the_language_field(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    field = schema["components"]["schemas"]["QueryRequest"]["properties"]["language"]
    assert "ISO 639-1" in field["description"] and field["examples"] == ["de"]
    examples = schema["components"]["schemas"]["QueryRequest"]["examples"]
    assert {"question": "Welchen Port nutzt der Server?", "language": "de"} in examples
