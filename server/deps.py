"""Request dependencies as `Annotated` aliases: the query service and the bearer-token check."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pipelines.settings import Settings
from query_graph.service import QueryService
from server.errors import ApiError
from server.tokens import TokenStore

_bearer = HTTPBearer(auto_error=False, description="The access token printed by `ragline serve`.")


def get_service(request: Request) -> QueryService:
    return request.app.state.service  # type: ignore[no-any-return]


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def require_token(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None:
        raise ApiError(401, "unauthorized", "missing bearer token: send 'Authorization: Bearer <token>'", challenge)
    tokens: TokenStore = request.app.state.tokens
    if not tokens.accepts(credentials.credentials):
        raise ApiError(401, "unauthorized", "the bearer token is not valid", challenge)


ServiceDep = Annotated[QueryService, Depends(get_service)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Authorized = Depends(require_token)
