"""POST /v1/query: one question through the query graph."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from pipelines.settings import Settings
from server.deps import QueryScope, ServiceDep, SettingsDep
from server.errors import ApiError
from server.observe import observe_reply
from server.schemas import ERROR_RESPONSES, QueryReply, QueryRequest
from server.variants import answer_kwargs

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[QueryScope])


def check_question(question: str, settings: Settings) -> None:
    if not question.strip():
        raise ApiError(422, "invalid_request", "question is empty")
    if len(question) > settings.max_question_chars:
        raise ApiError(
            413, "question_too_long", f"question exceeds the limit of {settings.max_question_chars} characters"
        )


@router.post("/query", response_model=QueryReply, responses=ERROR_RESPONSES)
async def query(body: QueryRequest, request: Request, service: ServiceDep, settings: SettingsDep) -> JSONResponse:
    """Answer a question with cited sentences, or say the documents do not cover it."""
    check_question(body.question, settings)
    kwargs = answer_kwargs(service, body.variants)
    reply = await run_in_threadpool(service.answer, body.question, top_k=body.top_k, **kwargs)
    observe_reply(request, reply, body.question, "/v1/query")
    # The reply is already in the documented shape; re-validating it through the response model
    # costs more than the whole cache-hit path, so it is serialised as it is.
    return JSONResponse(reply)
