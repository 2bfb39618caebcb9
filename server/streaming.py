"""Server-Sent Events for /v1/query/stream: one `sentence` event per validated sentence, then `final`.

The events come from `query_graph.streaming.stream_answer`, a synchronous iterator; each item is
pulled in a worker thread, and when the client goes away the iterator is closed, which cancels the
generation behind it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from query_graph.service import QueryFailed
from server.errors import ApiError
from server.tokens import StreamSlots

Event = dict[str, Any]
_END = object()


def sse(event: Event) -> bytes:
    kind = event.get("type", "message")
    return f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False, default=str)}\n\n".encode()


class Renderer(Protocol):
    """How a stream's events go on the wire: ragline's own events (`RaglineEvents`), or another client
    protocol's (server/openai_compat.py renders OpenAI's chunks)."""

    def event(self, event: Event) -> bytes: ...

    def error(self, failure: QueryFailed) -> bytes: ...


class RaglineEvents:
    """`sentence` and `final` events as the query graph gives them; a failure as one `error` event."""

    def event(self, event: Event) -> bytes:
        return sse(event)

    def error(self, failure: QueryFailed) -> bytes:
        error = {"code": failure.code, "message": failure.message}
        return sse({"type": "error", "error": error, "status": failure.status})


def _pull(events: Iterator[Event]) -> Any:
    return next(events, _END)


async def first_event(events: Iterator[Event]) -> Event:
    """Pull the first event before the response starts, so a failure still gets its HTTP status."""
    item = await run_in_threadpool(_pull, events)
    if item is _END:
        raise QueryFailed(500, "empty_stream", "the query graph produced no events")
    return item


class _Pump:
    """Pulls the event iterator on a thread of its own and hands each event to the event loop.

    A generator may only be closed by the thread that runs it, and only between events: when the
    client leaves, `stop` is set and the pump closes the iterator right after the event in flight.
    """

    def __init__(self, events: Iterator[Event], loop: asyncio.AbstractEventLoop) -> None:
        self.events, self.loop = events, loop
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.stop = threading.Event()
        threading.Thread(target=self._run, name="ragline-sse-pump", daemon=True).start()

    def _put(self, kind: str, item: Any) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, item))

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                item = next(self.events, _END)
                if item is _END:
                    break
                self._put("event", item)
        except Exception as exc:  # handed to the response, which sends it as an `error` event
            self._put("error", exc)
        finally:
            close = getattr(self.events, "close", None)
            if close is not None:
                close()  # GeneratorExit inside the graph's generator: generation stops here
            self._put("end", None)


async def event_stream(
    request: Request,
    events: Iterator[Event],
    first: Event,
    started: float,
    on_first_sentence: Callable[[float], None],
    on_final: Callable[[Event], None],
    render: Renderer | None = None,
) -> AsyncIterator[bytes]:
    render = render or RaglineEvents()
    pump: _Pump | None = None
    kind, item = "event", first
    seen_sentence = False
    try:
        while kind != "end":
            if kind == "error":
                failure = item if isinstance(item, QueryFailed) else QueryFailed(500, "stream_failed", str(item))
                yield render.error(failure)
                return
            if item.get("type") == "sentence" and not seen_sentence:
                seen_sentence = True
                on_first_sentence(time.perf_counter() - started)
            if item.get("type") == "final":
                on_final(item)
            yield render.event(item)
            if pump is None:
                pump = _Pump(events, asyncio.get_running_loop())
            kind, item = await pump.queue.get()
    finally:
        # The client left (this generator was cancelled or closed) or the stream ended: stop pulling.
        if pump is not None:
            pump.stop.set()
        else:
            close = getattr(events, "close", None)
            if close is not None:
                close()


def open_stream(request: Request) -> Callable[[], None]:
    """Take one of the stream slots (`max_streams` in all, `max_streams_per_token` per token) for this request's
    token, or refuse with 429 `too_many_streams`. Returns the slot's release, which `HeldStream` calls when the
    stream ends; a caller that fails before building the response calls it itself."""
    slots: StreamSlots = request.app.state.stream_slots
    key = request.state.principal.digest
    refusal = slots.open(key)
    if refusal is not None:
        raise ApiError(429, "too_many_streams", f"{refusal}; retry when one ends", {"Retry-After": "1"})
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            slots.close(key)

    return release


class HeldStream(StreamingResponse):
    """A streaming response that holds a stream slot until it ends, however it ends (finished, failed, the
    client gone before or during the body)."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()
