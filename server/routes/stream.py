"""POST /v1/query/stream: the answer as Server-Sent Events, sentence by sentence."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from query_graph.streaming import stream_answer
from server.conversations import RequestConversation
from server.deps import QueryScope, ServiceDep, SettingsDep, caller_access
from server.observe import observe_reply
from server.routes.query import check_question
from server.schemas import CONVERSATION_NOT_FOUND, ERROR_RESPONSES, QueryRequest
from server.streaming import HeldStream, event_stream, first_event, open_stream
from server.variants import answer_kwargs

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope])

STREAM_DOC = {
    200: {
        "content": {
            "text/event-stream": {
                "example": 'event: sentence\ndata: {"type": "sentence", "text": "The dashboard listens on port 7420 '
                '[C:abc123].", "chunk_ids": ["abc123"]}\n\nevent: final\ndata: {"type": "final", "status": '
                '"answered", "citations": [...], "timings_ms": {...}}\n\n'
            }
        },
        "description": "`sentence` events as each validated sentence is released, then one `final` event "
        "(status, citations, timings, cache, index) or one `error` event.",
    },
    **ERROR_RESPONSES,
    **CONVERSATION_NOT_FOUND,
}


@router.post("/query/stream", response_class=StreamingResponse, responses=STREAM_DOC)
async def query_stream(
    body: QueryRequest, request: Request, service: ServiceDep, settings: SettingsDep
) -> StreamingResponse:
    """Stream the answer: a client that disconnects stops the generation."""
    started = time.perf_counter()
    check_question(body.question, settings)
    kwargs = answer_kwargs(service, body.variants)
    conversation = RequestConversation(request, body.conversation_id)
    history = await run_in_threadpool(conversation.load)  # 404 for an id this token has no conversation under
    release = open_stream(request)  # 429 past the stream caps
    try:
        events = stream_answer(
            service,
            body.question,
            kwargs.get("variants"),
            top_k=body.top_k,
            language=body.language,
            history=history,
            access=caller_access(request),
            on_reply=lambda reply: conversation.record(body.question, reply),
        )
        first = await first_event(events)
    except BaseException:
        release()
        raise
    metrics = request.app.state.metrics

    def on_final(final: dict[str, object]) -> None:
        observe_reply(request, final, body.question, "/v1/query/stream")  # sets the event's reply_id

    stream = event_stream(request, events, first, started, metrics.first_sentence.observe, on_final)
    return HeldStream(
        stream,
        release,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
