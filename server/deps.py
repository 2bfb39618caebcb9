"""Request dependencies as `Annotated` aliases: the query service, settings, and scoped bearer auth.

They are all `async def` although none awaits anything: FastAPI runs a plain `def` dependency in the
thread pool, ~70 us of CPU and a wait for the GIL per hop, four hops a request (they only read app
state, hash a token and take a lock held for microseconds, so the event loop never waits on them).
Each dependency FastAPI resolves costs ~20 us a request, so the scope check authenticates itself
(one dependency on the bearer scheme, not a chain of two).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pipelines.access import Access
from pipelines.ports import StoreUnavailable
from pipelines.settings import Settings
from query_graph.service import QueryService
from server.errors import ApiError
from server.tokens import Principal, RateLimiter, TokenStore

_bearer = HTTPBearer(
    auto_error=False, description="The access token printed by `ragline serve`, or one made by `ragline tokens create`."
)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


async def get_service(request: Request) -> QueryService:
    return request.app.state.service


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    # Per client address first, before the token is even looked at: guessing tokens, or flooding with bad
    # ones, is limited as much as using a good one.
    address = request.client.host if request.client is not None else "unknown"
    by_address: RateLimiter = request.app.state.address_limiter
    wait = by_address.take(address, time.monotonic())
    if wait > 0:
        raise ApiError(
            429,
            "rate_limited",
            f"too many requests from this address (limit {by_address.rate:g}/s, burst {by_address.burst}); "
            f"retry in {wait:.2f} s",
            {"Retry-After": str(max(1, math.ceil(wait)))},
        )
    if credentials is None:
        raise ApiError(401, "unauthorized", "missing bearer token: send 'Authorization: Bearer <token>'", _CHALLENGE)
    tokens: TokenStore = request.app.state.tokens
    try:
        principal = tokens.identify(credentials.credentials)
    except StoreUnavailable as exc:  # never let a token in unchecked
        raise ApiError(503, "token_store_unavailable", f"access tokens cannot be checked: {exc}") from exc
    if principal is None:
        raise ApiError(401, "unauthorized", "the bearer token is not valid (unknown, revoked or expired)", _CHALLENGE)
    limiter: RateLimiter = request.app.state.rate_limiter
    rate = limiter.rate if principal.rate_per_second is None else principal.rate_per_second
    burst = limiter.burst if principal.burst is None else principal.burst
    wait = limiter.take(principal.digest, time.monotonic(), rate, burst)
    if wait > 0:
        raise ApiError(
            429,
            "rate_limited",
            f"too many requests for this token (limit {rate:g}/s, burst {burst}); retry in {wait:.2f} s",
            {"Retry-After": str(max(1, math.ceil(wait)))},
        )
    request.state.principal = principal
    return principal


def caller_access(request: Request) -> Access:
    """The access groups of the request's token (set by `authenticate`): what retrieval may show it."""
    principal: Principal = request.state.principal
    return principal.access


def authorize(request: Request, credentials: HTTPAuthorizationCredentials | None, scope: str) -> Principal:
    """The request's principal, if its token is valid, within its rate limit and has `scope`; else an ApiError."""
    principal = authenticate(request, credentials)
    if scope not in principal.scopes:
        raise ApiError(
            403,
            "forbidden",
            f"this token (name {principal.name!r}) lacks the {scope!r} scope; it has {sorted(principal.scopes)}",
        )
    return principal


def require_scope(scope: str) -> Callable[..., Any]:
    async def check(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
    ) -> Principal:
        return authorize(request, credentials, scope)

    return check


ServiceDep = Annotated[QueryService, Depends(get_service)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
QueryScope = Depends(require_scope("query"))
AdminScope = Depends(require_scope("admin"))
FeedbackScope = Depends(require_scope("feedback"))
# The foundation's name for "any valid token with the query scope".
Authorized = QueryScope
