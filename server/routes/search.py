"""POST /v1/search: ranked passages with links, no answer (the query graph's guardrails and retrieval)."""

from __future__ import annotations

import asyncio
import contextvars
import functools

from fastapi import APIRouter, Request

from server.deps import QueryScope, ServiceDep, SettingsDep, caller_access
from server.responses import FastJSONResponse
from server.routes.query import check_question
from server.schemas import ERROR_RESPONSES, SearchReply, SearchRequest
from server.variants import answer_kwargs

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope])


@router.post("/search", response_model=SearchReply, responses=ERROR_RESPONSES)
async def search(body: SearchRequest, request: Request, service: ServiceDep, settings: SettingsDep) -> FastJSONResponse:
    """The passages retrieval ranks highest for a query, each with its section link, text and score."""
    check_question(body.query, settings)
    kwargs = answer_kwargs(service, body.variants)
    run = functools.partial(
        service.search, body.query, top_k=body.top_k, language=body.language, access=caller_access(request), **kwargs
    )
    loop = asyncio.get_running_loop()
    reply = await loop.run_in_executor(request.app.state.query_threads, contextvars.copy_context().run, run)
    return FastJSONResponse(reply)
