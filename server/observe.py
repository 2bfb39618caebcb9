"""What happens after each reply: an id for it, metrics always, a row in the reply log (for feedback and
content gaps), and a trace when tracing is configured."""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from fastapi import Request

from pipelines.adapters.reply_log import ReplyLog, ReplyRecord

log = structlog.get_logger(__name__)


def observe_reply(request: Request, reply: dict[str, Any], question: str, route: str) -> None:
    """Give the reply its `reply_id` (set in `reply` itself, so the caller sends it), then feed metrics, the
    reply log and the tracer; none of them may fail or delay the request."""
    state = request.app.state
    reply["reply_id"] = uuid.uuid4().hex
    state.metrics.observe_reply(reply)
    principal = getattr(request.state, "principal", None)
    replies: ReplyLog | None = getattr(state, "reply_log", None)
    if replies is not None:
        try:
            replies.record(reply_record(reply, question, route, principal.name if principal else None))
        except Exception as exc:  # a malformed reply must not fail the request that carries it
            log.warning("reply_log_failed", error=repr(exc)[:200])
    tracer = getattr(state, "tracer", None)
    if tracer is not None:
        tracer.trace_reply(reply, question=question, route=route, user=principal.name if principal else None)


def reply_record(reply: dict[str, Any], question: str, route: str, token_name: str | None) -> ReplyRecord:
    pages = list(dict.fromkeys(str(r.get("document_id")) for r in reply.get("retrieved") or [] if r.get("document_id")))
    citations = [
        {k: c.get(k) for k in ("chunk_id", "document_id", "anchor", "title")} for c in reply.get("citations") or []
    ]
    index = reply.get("index") or {}
    guardrail = reply.get("guardrail") or {}
    return ReplyRecord(
        reply_id=reply["reply_id"],
        route=route,
        token_name=token_name,
        question=question,
        standalone_question=str(reply.get("standalone_question") or question),
        status=str(reply.get("status", "")),
        answer=str(reply.get("answer", "")),
        citations=citations,
        pages=pages,
        index_version=index.get("content_version"),
        language=guardrail.get("language") if isinstance(guardrail, dict) else None,
        grade=crag.get("grade") if isinstance(crag := reply.get("crag"), dict) else None,
    )
