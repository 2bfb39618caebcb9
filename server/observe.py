"""What happens after each answered request: metrics always, a trace when tracing is configured."""

from __future__ import annotations

from typing import Any

from fastapi import Request


def observe_reply(request: Request, reply: dict[str, Any], question: str, route: str) -> None:
    """Feed metrics and the tracer from a reply; neither may fail or delay the request."""
    state = request.app.state
    state.metrics.observe_reply(reply)
    tracer = getattr(state, "tracer", None)
    if tracer is not None:
        principal = getattr(request.state, "principal", None)
        tracer.trace_reply(reply, question=question, route=route, user=principal.name if principal else None)
