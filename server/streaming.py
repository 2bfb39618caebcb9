"""Server-Sent Events for /v1/query/stream: one `sentence` event per validated sentence, then `final`.

The events come from `query_graph.streaming.stream_answer`, a synchronous iterator; each item is
pulled in a worker thread, and when the client goes away the iterator is closed, which cancels the
generation behind it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from query_graph.service import QueryFailed

Event = dict[str, Any]
_END = object()


def sse(event: Event) -> bytes:
    kind = event.get("type", "message")
    return f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False, default=str)}\n\n".encode()


def _pull(events: Iterator[Event]) -> Any:
    return next(events, _END)


async def first_event(events: Iterator[Event]) -> Event:
    """Pull the first event before the response starts, so a failure still gets its HTTP status."""
    item = await run_in_threadpool(_pull, events)
    if item is _END:
        raise QueryFailed(500, "empty_stream", "the query graph produced no events")
    return item  # type: ignore[no-any-return]


async def event_stream(
    request: Request,
    events: Iterator[Event],
    first: Event,
    started: float,
    on_first_sentence: Callable[[float], None],
    on_final: Callable[[Event], None],
) -> AsyncIterator[bytes]:
    item: Any = first
    seen_sentence = False
    try:
        while item is not _END:
            if item.get("type") == "sentence" and not seen_sentence:
                seen_sentence = True
                on_first_sentence(time.perf_counter() - started)
            if item.get("type") == "final":
                on_final(item)
            yield sse(item)
            if await request.is_disconnected():
                return
            try:
                item = await run_in_threadpool(_pull, events)
            except QueryFailed as exc:
                yield sse({"type": "error", "error": {"code": exc.code, "message": exc.message}, "status": exc.status})
                return
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # GeneratorExit inside the graph's generator: generation stops here
