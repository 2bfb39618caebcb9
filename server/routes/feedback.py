"""POST /v1/feedback: a reader's rating of a reply (up or down) and an optional comment, once per reply per token."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from pipelines.adapters.reply_log import AlreadyRated, ReplyLog, UnknownReply
from pipelines.ports import StoreUnavailable
from server.deps import FeedbackScope
from server.errors import ApiError
from server.schemas import ERROR_RESPONSES, NOT_FOUND, ErrorReply

router = APIRouter(prefix="/v1", tags=["feedback"], dependencies=[FeedbackScope])


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    reply_id: str = Field(
        pattern=r"^[0-9a-f]{32}$", description="The `reply_id` of the reply, as its JSON or final event carried it."
    )
    rating: Literal["up", "down"] = Field(description="`up`: the reply helped; `down`: it did not.")
    comment: str = Field("", max_length=2000, description="What was wrong or missing (optional).")


class FeedbackReply(BaseModel):
    reply_id: str
    rating: str
    kept: bool


@router.post(
    "/feedback",
    status_code=201,
    response_model=FeedbackReply,
    responses={
        **ERROR_RESPONSES,
        **NOT_FOUND,
        409: {"model": ErrorReply, "description": "This token has already rated this reply (`already_rated`)."},
    },
)
async def feedback(body: FeedbackRequest, request: Request) -> dict[str, Any]:
    """Keep a rating of a reply this server gave; `ragline feedback export` turns the down-rated and unanswered
    questions into golden-set candidates."""
    replies: ReplyLog = request.app.state.reply_log
    principal = request.state.principal
    try:
        await run_in_threadpool(
            replies.rate, body.reply_id, principal.digest, principal.name, body.rating, body.comment.strip()
        )
    except UnknownReply as exc:
        raise ApiError(404, "unknown_reply", str(exc)) from exc
    except AlreadyRated as exc:
        raise ApiError(409, "already_rated", str(exc)) from exc
    except StoreUnavailable as exc:
        raise ApiError(503, "feedback_unavailable", str(exc)) from exc
    request.app.state.metrics.feedback.labels(body.rating).inc()
    return {"reply_id": body.reply_id, "rating": body.rating, "kept": True}
