"""Refuse an oversized upload from its Content-Length, before a byte of its body is read.

FastAPI parses a multipart body completely before the route runs, so a size check inside the route
would first spool the whole upload; this middleware answers 413 up front instead. (A body without a
Content-Length is still capped by the route, which reads at most the limit plus one byte.)
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

# Room for the multipart envelope (boundaries, part headers) around the audio itself.
MULTIPART_SLACK = 64 * 1024


class UploadLimitMiddleware:
    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int | None]) -> None:
        self.app, self.limit_for = app, limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (limit := self.limit_for(scope["path"])) is not None:
            declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
            if declared is not None and declared.isdigit() and int(declared) > limit + MULTIPART_SLACK:
                message = f"upload of {int(declared)} bytes exceeds the limit of {limit} bytes"
                body = json.dumps({"error": {"code": "audio_too_large", "message": message}}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 413,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
