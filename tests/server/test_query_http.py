"""POST /v1/query over HTTP (the real app, real stores, real index)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from pipelines.profiles import Stores
from pipelines.settings import Settings
from server.app import create_app

AUTH = {"Authorization": "Bearer test-token"}


@pytest.fixture
def client(settings: Settings, stores: Stores, built) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(create_app(settings, stores)) as test_client:
        yield test_client


def test_cited_answer_over_http(client: TestClient) -> None:
    response = client.post(
        "/v1/query", json={"question": "Which port does the harbor dashboard listen on?"}, headers=AUTH
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "answered" and "7420" in body["answer"]
    citation = body["citations"][0]
    assert set(citation) == {"chunk_id", "document_id", "title", "anchor", "source_uri", "score"}
    assert f"[C:{citation['chunk_id']}]" in body["answer"]
    assert {"dense_rank", "dense_score", "bm25_rank", "bm25_score", "fused_rank", "fused_score"} <= set(
        body["retrieved"][0]
    )
    assert body["timings_ms"]["total"] > 0 and "dense_hits" in body["timings_ms"]
    assert set(body["index"]) == {"content_version", "embedding_fingerprint"}


def test_missing_token_is_401(client: TestClient) -> None:
    response = client.post("/v1/query", json={"question": "Which port?"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


def test_wrong_token_is_401(client: TestClient) -> None:
    response = client.post("/v1/query", json={"question": "Which port?"}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert "not valid" in response.json()["error"]["message"]


def test_bad_input_gets_clear_errors(client: TestClient, settings: Settings) -> None:
    too_long = client.post("/v1/query", json={"question": "x" * (settings.max_question_chars + 1)}, headers=AUTH)
    assert too_long.status_code == 413 and str(settings.max_question_chars) in too_long.json()["error"]["message"]
    malformed = client.post("/v1/query", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"})
    assert malformed.status_code == 422 and malformed.json()["error"]["code"] == "invalid_request"
    blank = client.post("/v1/query", json={"question": "   "}, headers=AUTH)
    assert blank.status_code == 422


def test_health_readiness_and_index(client: TestClient, built) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["index"]["content_version"] == built.version
    index = client.get("/v1/index", headers=AUTH).json()
    assert index["content_version"] == built.version and index["state"] == "active"


def test_openapi_documents_the_query_route(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    operation = schema["paths"]["/v1/query"]["post"]
    assert {"200", "401", "413", "422", "503"} <= set(operation["responses"])


def test_unexpected_errors_keep_the_error_shape(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    app = create_app(settings, stores)

    def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/v1/broken", broken)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        response = test_client.get("/v1/broken")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "internal_error", "message": "unexpected server error; see the server log"}
    }


def test_server_refuses_to_start_on_an_index_of_another_model(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    stores.registry.update(built.version, fingerprint="0000000000000000")
    with pytest.raises(RuntimeError, match="refusing to start"), TestClient(create_app(settings, stores)):
        pass


def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(settings: Settings, stores: Stores, built) -> None:  # type: ignore[no-untyped-def]
    with TestClient(create_app(settings.model_copy(update={"max_body_bytes": 4096}), stores)) as client:
        big = {"question": "Which port does the dashboard use?", "padding": "x" * 5000}
        declared = client.post("/v1/query", json=big, headers=AUTH)
        assert declared.status_code == 413 and declared.json()["error"]["code"] == "body_too_large"
        assert "4096 bytes" in declared.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"question": "Which port does the dashboard use?", "padding": "'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        streamed = client.post("/v1/query", content=chunks(), headers={**AUTH, "content-type": "application/json"})
        assert streamed.status_code == 413 and streamed.json()["error"]["code"] == "body_too_large"
        small = client.post("/v1/query", json={"question": "Which port does the dashboard use?"}, headers=AUTH)
        assert small.status_code == 200
