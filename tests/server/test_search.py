"""POST /v1/search: ranked passages with section links and scores, from the query graph's guardrails and
retrieval only (the real app over the server suite's index of the harbor fixture corpus)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.server.conftest import ROOT, AppFactory, ServerEnv

FIELDS = {
    "rank",
    "chunk_id",
    "document_id",
    "title",
    "heading_path",
    "anchor",
    "source_uri",
    "language",
    "text",
    "score",
    "scores",
}


def test_ranked_passages_link_to_their_section(client: TestClient) -> None:
    response = client.post("/v1/search", json={"query": "which port does the dashboard listen on"}, headers=ROOT)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok" and "answer" not in body and "citations" not in body
    passages = body["passages"]
    assert passages and set(passages[0]) == FIELDS
    top = passages[0]
    assert top["document_id"] == "guide/config.md" and "7420" in top["text"]
    # The page holds several sections in one chunk: the link goes to the one the query is about.
    assert top["anchor"] == "ports" and top["source_uri"].endswith("#ports")
    assert top["heading_path"][-1] == "Ports"
    assert [p["rank"] for p in passages] == list(range(1, len(passages) + 1))
    scores = [p["score"] for p in passages]
    assert scores == sorted(scores, reverse=True) and scores[0] == top["scores"]["fused_score"]
    # Retrieval ran, and nothing after it.
    timings = body["timings_ms"]
    assert "dense_hits" in timings and "reranked_candidates" in timings
    assert not {"draft_answer", "crag_outcome", "exact_cache_lookup", "topic_gate"} & set(timings)
    assert set(body["index"]) == {"content_version", "embedding_fingerprint"}


def test_top_k_and_variants(client: TestClient) -> None:
    one = client.post("/v1/search", json={"query": "retention of build logs", "top_k": 1}, headers=ROOT).json()
    assert len(one["passages"]) == 1 and "14 days" in one["passages"][0]["text"]
    bm25 = client.post(
        "/v1/search", json={"query": "harbor sync registry", "variants": {"retrieval": "bm25"}}, headers=ROOT
    ).json()
    assert bm25["variants"]["retrieval"] == "bm25"
    assert bm25["passages"][0]["document_id"] == "reference/cli.md"
    assert all(p["scores"]["dense_score"] is None for p in bm25["passages"])


def test_a_refused_query_gets_no_passages(client: TestClient) -> None:
    body = client.post("/v1/search", json={"query": "dashboard port", "language": "es"}, headers=ROOT).json()
    assert body["status"] == "refused" and body["passages"] == []
    assert body["guardrail"]["rule"] == "language.unsupported" and "not supported" in body["message"]
    assert "dense_hits" not in body["timings_ms"]


def test_errors_share_the_query_routes_shape(client: TestClient, server_env: ServerEnv) -> None:
    missing = client.post("/v1/search", json={"query": "port"})
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"
    admin_only = client.post("/v1/search", json={"query": "port"}, headers=server_env.headers(server_env.admin_token))
    assert admin_only.status_code == 403 and admin_only.json()["error"]["code"] == "forbidden"
    reader = client.post("/v1/search", json={"query": "port"}, headers=server_env.headers(server_env.query_token))
    assert reader.status_code == 200
    blank = client.post("/v1/search", json={"query": "  "}, headers=ROOT)
    assert blank.status_code == 422 and blank.json()["error"]["code"] == "invalid_request"
    limit = server_env.settings.max_question_chars
    too_long = client.post("/v1/search", json={"query": "x" * (limit + 1)}, headers=ROOT)
    assert too_long.status_code == 413 and too_long.json()["error"]["code"] == "question_too_long"
    unknown = client.post("/v1/search", json={"query": "port", "variants": {"rerank": "magic"}}, headers=ROOT)
    assert unknown.status_code == 400 and "valid:" in unknown.json()["error"]["message"]
    bad_k = client.post("/v1/search", json={"query": "port", "top_k": 0}, headers=ROOT)
    assert bad_k.status_code == 422 and "top_k" in bad_k.json()["error"]["message"]


def test_rate_limit_is_the_tokens(make_client: AppFactory, server_env: ServerEnv) -> None:
    with make_client(rate_limit_per_second=0.5, rate_limit_burst=1) as limited:
        reader = server_env.headers(server_env.query_token)
        assert limited.post("/v1/search", json={"query": "port"}, headers=reader).status_code == 200
        last = limited.post("/v1/search", json={"query": "port"}, headers=reader)
        assert last.status_code == 429 and last.json()["error"]["code"] == "rate_limited"
        assert "retry-after" in last.headers
