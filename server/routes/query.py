"""POST /v1/query: one question through the query graph."""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Request

from pipelines.settings import Settings
from query_graph.service import QueryService
from server.conversations import RequestConversation
from server.deps import QueryScope, caller_access
from server.errors import ApiError
from server.observe import observe_reply
from server.responses import FastJSONResponse
from server.schemas import CONVERSATION_NOT_FOUND, ERROR_RESPONSES, QueryReply, QueryRequest
from server.variants import answer_kwargs

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope])

# As many threads as FastAPI's own pool would lend (anyio's default limiter): misses hold one for the
# whole graph, model calls included.
QUERY_THREADS = 40


def query_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=QUERY_THREADS, thread_name_prefix="ragline-query")


def check_question(question: str, settings: Settings) -> None:
    if not question.strip():
        raise ApiError(422, "invalid_request", "question is empty")
    if len(question) > settings.max_question_chars:
        raise ApiError(
            413, "question_too_long", f"question exceeds the limit of {settings.max_question_chars} characters"
        )


@router.post("/query", response_model=QueryReply, responses={**ERROR_RESPONSES, **CONVERSATION_NOT_FOUND})
async def query(body: QueryRequest, request: Request) -> FastJSONResponse:
    """Answer a question with cited sentences, or say the documents do not cover it."""
    # The service and settings are read from the app state rather than through `ServiceDep` and
    # `SettingsDep`: each dependency FastAPI resolves costs ~20 us, a few percent of a cache hit.
    state = request.app.state
    service: QueryService = state.service
    settings: Settings = state.settings
    check_question(body.question, settings)
    kwargs = answer_kwargs(service, body.variants)
    # The graph is synchronous (Redis, models, stores): it runs on a thread of the app's query pool,
    # handed over with asyncio's executor (~25 us of CPU) rather than `run_in_threadpool` (~70 us).
    if body.language:  # stated by the client: the language gate takes it as certain (no probability)
        kwargs["language"] = body.language
    conversation = RequestConversation(request, body.conversation_id)
    access = caller_access(request)

    def answer() -> dict[str, Any]:
        history = conversation.load()  # 404 for an id this token has no conversation under
        reply = service.answer(body.question, top_k=body.top_k, history=history, access=access, **kwargs)
        conversation.record(body.question, reply)
        return reply

    loop = asyncio.get_running_loop()
    reply = await loop.run_in_executor(state.query_threads, contextvars.copy_context().run, answer)
    observe_reply(request, reply, body.question, "/v1/query")
    # The reply is already in the documented shape; re-validating it through the response model
    # costs more than the whole cache-hit path, so it is serialised as it is.
    return FastJSONResponse(reply)
