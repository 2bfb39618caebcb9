"""Langfuse tracing over OTLP: one trace per request, one span per query-graph node.

Traces carry hashes, ids, scores, model ids, token counts and timings. Raw questions, answers and
passage text go only when `trace_raw_content` is on. Export happens on a background thread with a
short timeout, so a slow or absent Langfuse never delays a reply (tracing fails open).

Node timings arrive as durations after the request (the timing adapter records milliseconds per
node), so node spans are laid end to end from the request's start in execution order.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import structlog
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span

from pipelines.settings import Settings

log = structlog.get_logger(__name__)

_TYPE = "langfuse.observation.type"
_META = "langfuse.observation.metadata"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class RequestTracer:
    def __init__(self, settings: Settings) -> None:
        from langfuse import Langfuse

        assert settings.langfuse_host and settings.langfuse_public_key and settings.langfuse_secret_key
        self.raw = settings.trace_raw_content
        # A provider of our own: never the process-global one, so several apps (tests) stay apart.
        self.provider = TracerProvider()
        self.client = Langfuse(
            public_key=settings.langfuse_public_key,
            secret_key=settings.langfuse_secret_key,
            host=settings.langfuse_host,
            timeout=max(1, round(settings.trace_timeout_seconds)),
            flush_interval=1.0,
            tracer_provider=self.provider,
            should_export_span=lambda span: True,  # our spans come from the "ragline" scope, not the SDK's
        )
        self.tracer = self.provider.get_tracer("ragline")

    @classmethod
    def from_settings(cls, settings: Settings) -> RequestTracer | None:
        if not (settings.langfuse_host and settings.langfuse_public_key and settings.langfuse_secret_key):
            return None
        try:
            return cls(settings)
        except Exception as exc:  # tracing fails open: a broken set-up costs the traces, not the service
            log.warning("tracing_disabled", error=str(exc))
            return None

    def trace_reply(self, reply: dict[str, Any], question: str, route: str, user: str | None = None) -> None:
        try:
            self._trace(reply, question, route, user)
        except Exception as exc:
            log.warning("trace_failed", error=str(exc))

    def _trace(self, reply: dict[str, Any], question: str, route: str, user: str | None) -> None:
        end_ns = time.time_ns()
        timings: dict[str, float] = dict(reply.get("timings_ms") or {})
        total_ms = float(timings.pop("total", sum(timings.values())))
        start_ns = end_ns - int(total_ms * 1e6)
        index = reply.get("index") or {}
        root = self.tracer.start_span("ragline.query", start_time=start_ns)
        attributes: dict[str, Any] = {
            _TYPE: "span",
            "langfuse.trace.name": f"ragline {route}",
            "ragline.route": route,
            "ragline.question.sha256": sha256_text(question),
            "ragline.question.chars": len(question),
            "ragline.status": str(reply.get("status")),
            "ragline.cache": str(reply.get("cache")),
            "ragline.generator": str(reply.get("generator")),
            "ragline.index.content_version": str(index.get("content_version")),
            "ragline.index.embedding_fingerprint": str(index.get("embedding_fingerprint")),
            "ragline.citations.chunk_ids": [str(c["chunk_id"]) for c in reply.get("citations", [])],
            "ragline.citations.scores": [float(c.get("score", 0.0)) for c in reply.get("citations", [])],
            "ragline.retrieved.chunk_ids": [str(r["chunk_id"]) for r in reply.get("retrieved", [])],
            "ragline.retrieved.fused_scores": [float(r.get("fused_score", 0.0)) for r in reply.get("retrieved", [])],
            "ragline.total_ms": total_ms,
            f"{_META}.variants": json.dumps(reply.get("variants") or {}, sort_keys=True),
        }
        if user:
            attributes["user.id"] = user
        usage = reply.get("usage") or (reply.get("provider") or {}).get("usage")
        if isinstance(usage, dict):
            attributes["langfuse.observation.usage_details"] = json.dumps(usage)
        if isinstance(reply.get("provider"), dict) and reply["provider"].get("model"):
            attributes["langfuse.observation.model.name"] = str(reply["provider"]["model"])
        if self.raw:
            attributes["langfuse.trace.input"] = question
            attributes["langfuse.observation.input"] = question
            attributes["langfuse.observation.output"] = str(reply.get("answer", ""))
            if reply.get("transcript"):
                attributes[f"{_META}.transcript"] = str(reply["transcript"].get("text", ""))
        _set(root, attributes)
        cursor = start_ns
        for node, ms in timings.items():
            if not isinstance(ms, int | float):
                continue
            span = self.tracer.start_span(
                f"node.{node}",
                context=_context_of(root),
                start_time=cursor,
                attributes={_TYPE: "span", "ragline.node": node, "ragline.node.ms": float(ms)},
            )
            cursor += int(ms * 1e6)
            span.end(end_time=cursor)
        root.end(end_time=end_ns)

    def flush(self) -> None:
        self.provider.force_flush(timeout_millis=2000)

    def shutdown(self) -> None:
        try:
            self.provider.force_flush(timeout_millis=2000)
            self.provider.shutdown()
        except Exception as exc:
            log.warning("tracer_shutdown_failed", error=str(exc))


def _context_of(span: Span) -> Any:
    from opentelemetry import trace

    return trace.set_span_in_context(span)


def _set(span: Span, attributes: dict[str, Any]) -> None:
    for key, value in attributes.items():
        span.set_attribute(key, value)
