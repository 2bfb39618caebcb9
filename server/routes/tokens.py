"""Operator routes for access tokens (scope `admin`): create, list and revoke, as `ragline tokens` does."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from pipelines.adapters.token_table import TokenTable
from pipelines.ports import StoreUnavailable
from server.deps import AdminScope
from server.errors import ApiError
from server.schemas import ERROR_RESPONSES, NOT_FOUND

router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[AdminScope], responses=ERROR_RESPONSES)


class TokenBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Unique among live tokens: letters, digits and '_.@-', at most 64.")
    scopes: list[Literal["query", "feedback", "admin"]] = Field(["query", "feedback"])
    groups: list[str] = Field(default_factory=list, description='Access groups besides `public`; `["*"]`: every group.')
    expires_at: datetime | None = Field(None, description="When it stops working (ISO 8601 with a zone).")
    rate_per_second: float | None = Field(None, gt=0, description="Its own rate limit (default: the server's).")
    burst: int | None = Field(None, ge=1, description="Its own burst (default: the server's).")


def _table(request: Request) -> TokenTable:
    return request.app.state.token_table


async def _call(fn: Any, *args: Any) -> Any:
    try:
        return await run_in_threadpool(fn, *args)
    except StoreUnavailable as exc:
        raise ApiError(503, "token_store_unavailable", str(exc)) from exc


@router.get("/tokens")
async def list_tokens(request: Request) -> dict[str, Any]:
    """Live tokens: name, scopes, groups, expiry, rate limit and digest prefix (never the token)."""
    return {"tokens": [r.as_dict() for r in await _call(_table(request).list)]}


@router.post("/tokens", status_code=201)
async def create_token(body: TokenBody, request: Request) -> dict[str, Any]:
    """A new token, returned once in `token`; only its digest is kept."""

    def create() -> tuple[str, Any]:
        try:
            return _table(request).create(
                body.name, list(body.scopes), body.groups, body.expires_at, body.rate_per_second, body.burst
            )
        except ValueError as exc:
            raise ApiError(422, "invalid_token", str(exc)) from exc

    token, record = await _call(create)
    return {"token": token, **record.as_dict()}


@router.delete("/tokens/{name}", responses=NOT_FOUND)
async def revoke_token(name: str, request: Request) -> dict[str, Any]:
    """Revoke the live token of this name: every server refuses it within `token_cache_seconds`."""

    def revoke() -> int:
        try:
            return _table(request).revoke(name)
        except ValueError as exc:
            raise ApiError(404, "not_found", str(exc)) from exc

    await _call(revoke)
    return {"name": name, "revoked": True}
