"""Refuse an oversized request body with 413 and the error shape, before the route reads it.

A body that declares its Content-Length over the limit is refused before a byte of it is read: FastAPI parses a
multipart body completely before the route runs, so a size check inside the route would first spool the whole
upload. A body without a Content-Length (chunked) is counted as it arrives, and refused as soon as it passes the
limit, so no request holds more than the limit in memory. Every path has a limit: the voice routes
`max_audio_bytes` (with room for the multipart envelope), every other route `max_body_bytes`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Room for the multipart envelope (boundaries, part headers) around the audio itself.
MULTIPART_SLACK = 64 * 1024


class BodyLimitMiddleware:
    """`limit_for(path)` gives (the limit a refusal names, the bytes of envelope allowed beyond it, the error
    code of a refusal)."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], tuple[int, int, str]]) -> None:
        self.app, self.limit_for = app, limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, slack, code = self.limit_for(scope["path"])
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > limit + slack:
            await _refuse(send, code, f"a request body of {int(declared)} bytes exceeds the limit of {limit} bytes")
            return
        seen = 0
        started = refused = False

        async def counted() -> Message:
            # Past the limit, the 413 goes out at once, and the route reads a disconnected client: what it
            # answers to that is dropped (`watched`), and it never holds more than the limit.
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                seen += len(message.get("body", b""))
                if seen > limit + slack and not started:
                    refused = True
                    await _refuse(send, code, f"the request body exceeds the limit of {limit} bytes")
                    return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted, watched)


async def _refuse(send: Send, code: str, message: str) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
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
