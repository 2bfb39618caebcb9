"""Prometheus metrics, in a registry of the app's own (so two apps, e.g. in tests, never collide).

HTTP series come from an ASGI middleware; the query-graph series are read from each reply: node
timings (`timings_ms`), the variants used, cache status, guardrail decision, CRAG actions and
provider events. Fields a reply does not carry leave their series untouched.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_MAX_CHILDREN = 4096
NODE_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "ragline_http_requests", "HTTP requests by route and status.", ["route", "method", "status"], registry=r
        )
        self.failures = Counter(
            "ragline_http_failures",
            "HTTP requests answered with 4xx/5xx, by route and status.",
            ["route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "ragline_http_request_seconds",
            "End-to-end request latency.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.node_latency = Histogram(
            "ragline_node_seconds", "Query-graph node latency.", ["node", "variant"], buckets=NODE_BUCKETS, registry=r
        )
        self.first_sentence = Histogram(
            "ragline_first_sentence_seconds",
            "Time from request to the first validated sentence on the stream.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.replies = Counter("ragline_replies", "Replies by outcome status.", ["status"], registry=r)
        self.feedback = Counter("ragline_feedback", "Ratings readers gave replies, by rating.", ["rating"], registry=r)
        self.cache_lookups = Counter("ragline_cache_lookups", "Answer-cache lookups by result.", ["result"], registry=r)
        self.cache_hits = Counter(
            "ragline_cache_hits", "Answer-cache hits by kind (exact, semantic).", ["kind"], registry=r
        )
        self.guardrail_blocks = Counter(
            "ragline_guardrail_blocks", "Requests blocked, by guardrail rule.", ["rule"], registry=r
        )
        self.crag_actions = Counter("ragline_crag_actions", "CRAG decisions, by action.", ["action"], registry=r)
        self.provider_retries = Counter(
            "ragline_provider_retries", "Generator retries, by provider.", ["provider"], registry=r
        )
        self.breaker_trips = Counter(
            "ragline_breaker_trips", "Circuit-breaker trips, by provider.", ["provider"], registry=r
        )
        self.fallbacks = Counter(
            "ragline_fallbacks", "Fallbacks to another provider, by provider left.", ["provider"], registry=r
        )
        # Labelled children, memoised: `labels()` validates and locks on every call, which was a tenth of
        # the CPU of an exact-cache hit. Keys are bounded (nodes x variant combinations, statuses, rules).
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            if len(self._children) > _MAX_CHILDREN:  # a runaway label set must not grow memory without end
                self._children.clear()
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_reply(self, reply: dict[str, Any]) -> None:
        given = reply.get("variants")
        variants: dict[str, Any] = given if isinstance(given, dict) else {}
        chosen = tuple(variants.items())
        for node, ms in (reply.get("timings_ms") or {}).items():
            if node != "total" and isinstance(ms, int | float):
                self._node_child(node, variants, chosen).observe(ms / 1000)
        self._child(self.replies, str(reply.get("status", "unknown"))).inc()
        cache = str(reply.get("cache", "unknown"))
        self._child(self.cache_lookups, "hit" if "hit" in cache else cache).inc()
        if "hit" in cache:
            kind = reply.get("cache_kind") or ("exact" if cache == "hit" else cache.removesuffix("_hit"))
            self._child(self.cache_hits, str(kind)).inc()
        guardrail = reply.get("guardrail")
        if isinstance(guardrail, dict) and _blocked(guardrail):
            self._child(self.guardrail_blocks, str(guardrail.get("rule") or "unnamed")).inc()
        for action in _crag_actions(reply.get("crag")):
            self._child(self.crag_actions, action).inc()
        provider = reply.get("provider")
        if isinstance(provider, dict):
            self._observe_provider(provider, str(provider.get("model") or reply.get("generator") or "unknown"))

    def _node_child(self, node: str, variants: dict[str, Any], chosen: tuple[Any, ...]) -> Any:
        """The node's latency series under the variants it ran as (worked out once per node and variants)."""
        key = (id(self.node_latency), node, chosen)
        try:
            child = self._children.get(key)
        except TypeError:  # a variant value that is not hashable: no memo for it
            return self.node_latency.labels(node, variant_of(node, variants))
        if child is None:
            child = self._children[key] = self._child(self.node_latency, node, variant_of(node, variants))
        return child

    def _observe_provider(self, provider: dict[str, Any], model: str) -> None:
        """The harness reports every attempt ({provider, role, outcome}); counts are derived from them."""
        attempts = [a for a in _as_list(provider.get("attempts")) if isinstance(a, dict)]
        tried: dict[str, int] = {}
        for attempt in attempts:
            name = str(attempt.get("provider") or model)
            if attempt.get("outcome") == "circuit_open":
                self.breaker_trips.labels(name).inc()  # a call turned away by an open breaker
            else:
                tried[name] = tried.get(name, 0) + 1
        for name, count in tried.items():
            if count > 1:
                self.provider_retries.labels(name).inc(count - 1)
        if provider.get("fallback_used"):
            for name in {str(a.get("provider")) for a in attempts if a.get("role") == "primary"} or {"primary"}:
                self.fallbacks.labels(name).inc()

    def snapshot(self) -> dict[str, Any]:
        """Totals the operator console shows (it reads these rather than parsing the text format)."""
        out: dict[str, Any] = {"nodes": {}, "cache": {}, "cache_hits": {}, "guardrail_blocks": {}, "crag_actions": {}}
        for metric in self.registry.collect():
            for sample in metric.samples:
                labels = sample.labels
                if sample.name == "ragline_node_seconds_sum":
                    out["nodes"].setdefault(f"{labels['node']}|{labels['variant']}", {})["sum_s"] = sample.value
                elif sample.name == "ragline_node_seconds_count":
                    out["nodes"].setdefault(f"{labels['node']}|{labels['variant']}", {})["count"] = sample.value
                elif sample.name == "ragline_cache_lookups_total":
                    out["cache"][labels["result"]] = sample.value
                elif sample.name == "ragline_cache_hits_total":
                    out["cache_hits"][labels["kind"]] = sample.value
                elif sample.name == "ragline_guardrail_blocks_total":
                    out["guardrail_blocks"][labels["rule"]] = sample.value
                elif sample.name == "ragline_crag_actions_total":
                    out["crag_actions"][labels["action"]] = sample.value
        nodes = []
        for key, v in sorted(out["nodes"].items()):
            node, variant = key.split("|", 1)
            count = v.get("count", 0)
            nodes.append(
                {"node": node, "variant": variant, "count": count, "mean_ms": 1000 * v.get("sum_s", 0) / (count or 1)}
            )
        out["nodes"] = nodes
        return out


# Which variant choice (a key of the reply's `variants`) decides how a timed graph node runs.
_NODE_FAMILIES = {
    "retrieval": ("dense", "bm25_hits", "hits", "retriev"),
    "bm25_engine": ("bm25",),
    "fusion": ("fus",),
    "rerank": ("rerank",),
    "crag": ("crag", "grade"),
    "generator": ("draft", "generat"),
    "verify": ("verif",),
}


def variant_of(node: str, variants: dict[str, Any]) -> str:
    """The variant a node ran as: its own entry, else the entry of the family it belongs to, else `-`."""
    if node in variants:
        return str(variants[node])
    for family, stems in _NODE_FAMILIES.items():
        if family in variants and any(stem in node for stem in stems):
            return str(variants[family])
    return "-"


def _blocked(guardrail: dict[str, Any]) -> bool:
    decision = str(guardrail.get("decision") or guardrail.get("action") or "").lower()
    return bool(guardrail.get("blocked")) or decision in ("block", "blocked", "refuse", "refused")


def _crag_actions(crag: Any) -> Iterable[str]:
    if isinstance(crag, dict):
        if "action" in crag:
            yield str(crag["action"])
        for step in _as_list(crag.get("actions") or crag.get("steps")):
            if isinstance(step, dict) and "action" in step:
                yield str(step["action"])
            elif isinstance(step, str):
                yield step
    elif isinstance(crag, list):
        for step in crag:
            yield from _crag_actions(step if isinstance(step, dict) else {"action": step})


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


class MetricsMiddleware:
    """Counts every HTTP request by route template and status and times it end to end (streams included)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            if route != "/metrics":
                self.metrics.requests.labels(route, scope["method"], str(status)).inc()
                if status >= 400:
                    self.metrics.failures.labels(route, str(status)).inc()
                self.metrics.latency.labels(route).observe(time.perf_counter() - started)
