"""POST /v1/query: one question through the query graph."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from server.deps import Authorized, ServiceDep, SettingsDep
from server.errors import ApiError
from server.schemas import ERROR_RESPONSES, QueryReply, QueryRequest

router = APIRouter(prefix="/v1", tags=["query"], dependencies=[Authorized])


@router.post("/query", response_model=QueryReply, responses=ERROR_RESPONSES)
def query(body: QueryRequest, service: ServiceDep, settings: SettingsDep) -> dict[str, Any]:
    """Answer a question with cited sentences, or say the documents do not cover it."""
    if not body.question.strip():
        raise ApiError(422, "invalid_request", "question is empty")
    if len(body.question) > settings.max_question_chars:
        raise ApiError(413, "question_too_long", f"question exceeds {settings.max_question_chars} characters")
    return service.answer(body.question, top_k=body.top_k)
