"""Every error leaves the API in one shape: {"error": {"code": "...", "message": "..."}}.

A client protocol with an error shape of its own (OpenAI's, server/openai_compat.py) registers it for
its paths with `add_error_shape`: the same errors (auth, rate limit, validation, the query graph's)
then leave those paths in that shape, with the status it chooses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from query_graph.service import QueryFailed

log = structlog.get_logger(__name__)


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers, self.param = status, code, message, headers, param


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


# (status, code, message, param: the request field at fault or None) -> (status, body)
ErrorShape = Callable[[int, str, str, str | None], tuple[int, dict[str, Any]]]


def add_error_shape(app: FastAPI, prefixes: tuple[str, ...], shape: ErrorShape) -> None:
    """Errors of requests whose path starts with one of `prefixes` leave in `shape`."""
    shapes: list[tuple[tuple[str, ...], ErrorShape]] = app.state.error_shapes
    shapes.append((prefixes, shape))


def error_response(
    request: Request,
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    for prefixes, shape in getattr(request.app.state, "error_shapes", ()):
        if request.url.path.startswith(prefixes):
            status, body = shape(status, code, message, param)
            return JSONResponse(body, status_code=status, headers=headers)
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


_METHODS = frozenset({"get", "put", "post", "delete", "patch", "options", "head", "trace"})


def _allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method the API documents for `path` (its OpenAPI paths, read once), HEAD beside GET as Starlette
    answers it; empty for a path the schema does not hold."""
    table = getattr(app.state, "allowed_methods", None)
    if table is None:
        table = [
            (
                re.compile("^" + re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)) + "$"),
                {m.upper() for m in ops if m in _METHODS},
            )
            for template, ops in app.openapi().get("paths", {}).items()
        ]
        app.state.allowed_methods = table
    methods = {m for pattern, ops in table if pattern.match(path) for m in ops}
    return sorted(methods | ({"HEAD"} if "GET" in methods else set()))


def install_error_handlers(app: FastAPI) -> None:
    app.state.error_shapes = []

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(request, exc.status, exc.code, exc.message, exc.headers, exc.param)

    @app.exception_handler(QueryFailed)
    async def query_failed(request: Request, exc: QueryFailed) -> JSONResponse:
        return error_response(request, exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors)
        where = [str(p) for p in errors[0].get("loc", ()) if p != "body"] if errors else []
        return error_response(request, 422, "invalid_request", problems, param=".".join(where) or None)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        # Starlette's own headers go out too: a 405 names the methods the path allows (`Allow`, RFC 9110). Starlette
        # names those of the first route of the path only; a path of several routes (GET and POST on
        # /v1/admin/tokens) gets all of theirs.
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            methods = _allowed_methods(request.app, request.url.path)
            if methods:
                headers["Allow"] = ", ".join(methods)
        return error_response(request, exc.status_code, code, str(exc.detail), headers or None)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # A bug, not a user error: log it whole, answer in the one error shape without internals.
        log.error("unhandled_error", path=request.url.path, error=repr(exc), exc_info=exc)
        return error_response(request, 500, "internal_error", "unexpected server error; see the server log")
