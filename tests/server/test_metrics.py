"""GET /metrics: HTTP series by route and status, per-node latency from the reply's timings."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from server.metrics import Metrics
from tests.server.conftest import ROOT, fresh_question


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = client.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_count_requests_nodes_and_cache(client: TestClient) -> None:
    question = fresh_question("How long does harbor keep build logs?")
    for _ in range(2):  # a miss, then an exact-cache hit
        assert client.post("/v1/query", json={"question": question}, headers=ROOT).status_code == 200
    client.post("/v1/query", json={"question": "x"}, headers={"Authorization": "Bearer wrong"})
    found = samples(client)
    ok = found[("ragline_http_requests_total", (("method", "POST"), ("route", "/v1/query"), ("status", "200")))]
    assert ok >= 2
    assert found[("ragline_http_failures_total", (("route", "/v1/query"), ("status", "401")))] >= 1
    assert found[("ragline_http_request_seconds_count", (("route", "/v1/query"),))] >= 3
    assert found[("ragline_cache_hits_total", (("kind", "exact"),))] >= 1
    node_counts = {dict(labels)["node"] for (name, labels) in found if name == "ragline_node_seconds_count"}
    assert "exact_cache_lookup" in node_counts and len(node_counts) >= 3
    assert any(dict(labels).get("variant") for (name, labels) in found if name == "ragline_node_seconds_count")


def test_each_app_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.replies.labels("answered").inc()
    assert second.registry.get_sample_value("ragline_replies_total", {"status": "answered"}) is None


def test_reply_fields_feed_guardrail_crag_and_provider_series() -> None:
    metrics = Metrics()
    metrics.observe_reply(
        {
            "status": "refused",
            "cache": "semantic_hit",
            "timings_ms": {"guardrails": 1.5, "total": 2.0},
            "variants": {"guardrails": "strict"},
            "guardrail": {"decision": "refused", "rule": "prompt_injection"},
            "crag": {"action": "rewrite", "actions": [{"action": "web_search"}]},
            "provider": {
                "model": "openai/small",
                "role": "fallback",
                "fallback_used": True,
                "attempts": [
                    {"provider": "openai", "role": "primary", "outcome": "timeout"},
                    {"provider": "openai", "role": "primary", "outcome": "timeout"},
                    {"provider": "openai", "role": "primary", "outcome": "timeout"},
                    {"provider": "openai", "role": "primary", "outcome": "circuit_open"},
                    {"provider": "local", "role": "fallback", "outcome": "ok"},
                ],
            },
        }
    )
    value = metrics.registry.get_sample_value
    assert value("ragline_guardrail_blocks_total", {"rule": "prompt_injection"}) == 1
    assert value("ragline_cache_hits_total", {"kind": "semantic"}) == 1
    assert value("ragline_crag_actions_total", {"action": "rewrite"}) == 1
    assert value("ragline_crag_actions_total", {"action": "web_search"}) == 1
    assert value("ragline_provider_retries_total", {"provider": "openai"}) == 2
    assert value("ragline_breaker_trips_total", {"provider": "openai"}) == 1
    assert value("ragline_fallbacks_total", {"provider": "openai"}) == 1
    assert value("ragline_node_seconds_count", {"node": "guardrails", "variant": "strict"}) == 1
