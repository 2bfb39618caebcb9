"""The OpenAI-compatible API: `POST /v1/chat/completions` (streaming and not) and `GET /v1/models`, so an
OpenAI SDK or chat front end can use ragline as a model.

The last user message is the question; earlier messages are ignored (every question stands alone until
ragline keeps conversations). The assistant message is ragline's answer with its citations as numbered
references and their links at the end (server/cited_text.py); the citations are also structured, in
`citations` on the completion (on the last chunk when streaming). A no_answer, clarify or refusal is an
ordinary assistant message; the reply's `ragline.status` tells them apart. Errors leave these routes in
OpenAI's shape, `{"error": {"message", "type", "code", "param"}}`. Auth, scopes and rate limits are the
`/v1/query` ones (the SDK sends its api_key as `Authorization: Bearer <api_key>`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
import uuid
from typing import Any, Literal

import orjson
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from pipelines.answering.citations import join_sentences
from pipelines.text.followups import Turn
from query_graph.service import QueryFailed
from query_graph.streaming import stream_answer
from server.cited_text import Numbering, cited_answer, sources
from server.deps import QueryScope, ServiceDep, SettingsDep, caller_access
from server.errors import ApiError, add_error_shape
from server.observe import observe_reply
from server.responses import FastJSONResponse
from server.routes.query import check_question
from server.streaming import Event, HeldStream, event_stream, first_event, open_stream

MODEL_ID = "ragline"
PATHS = ("/v1/chat/", "/v1/models")
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
}
_TYPES[429] = "rate_limit_error"


def openai_error(status: int, code: str, message: str, param: str | None) -> tuple[int, dict[str, Any]]:
    """ragline's error as OpenAI shapes one: a malformed or too long request is a 400, as OpenAI's is."""
    if status in (413, 422):
        status = 400
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return status, {"error": {"message": message, "type": kind, "code": code, "param": param}}


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, ...: accepted, not read

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    # temperature, max_tokens, user, ...: accepted and ignored (ragline's answer does not depend on them).
    model_config = ConfigDict(extra="allow")

    model: str = Field(description=f"The model id `GET /v1/models` lists: `{MODEL_ID}`.", examples=[MODEL_ID])
    messages: list[ChatMessage] = Field(min_length=1, description="The last `user` message is the question.")
    stream: bool = Field(False, description="Server-Sent Events in OpenAI's chunk format, ended by `[DONE]`.")
    n: int = Field(1, ge=1, le=1, description="One choice only.")


def question_of(body: ChatCompletionRequest) -> str:
    """The text of the last user message (a list of content parts: its text parts joined)."""
    for i in range(len(body.messages) - 1, -1, -1):
        message = body.messages[i]
        if message.role != "user":
            continue
        content = message.content
        if isinstance(content, list):
            if any(part.get("type") != "text" for part in content):
                raise ApiError(
                    400, "invalid_request", "only text content parts are supported", param=f"messages.{i}.content"
                )
            content = "\n".join(str(part.get("text", "")) for part in content)
        if not content or not content.strip():
            raise ApiError(400, "invalid_request", "the last user message is empty", param=f"messages.{i}.content")
        return content
    raise ApiError(400, "invalid_request", "messages hold no user message: it is the question", param="messages")


def history_of(body: ChatCompletionRequest) -> list[Turn]:
    """The conversation before the last user message: each earlier user message with the assistant's reply
    after it, so a follow-up is answered as the standalone question it asks (node `standalone_question`)."""
    last = max((i for i, m in enumerate(body.messages) if m.role == "user"), default=-1)
    turns: list[Turn] = []
    for i, message in enumerate(body.messages[:last]):
        if message.role != "user" or not isinstance(message.content, str) or not message.content.strip():
            continue
        reply = next((m for m in body.messages[i + 1 : last] if m.role in ("user", "assistant")), None)
        answer = reply.content if reply is not None and reply.role == "assistant" else ""
        text = message.content.strip()
        turns.append(Turn(text, text, answer if isinstance(answer, str) else ""))
    return turns


def check_model(model: str) -> None:
    if model != MODEL_ID:
        raise ApiError(
            404,
            "model_not_found",
            f"the model {model!r} does not exist; this server serves {MODEL_ID!r}",
            param="model",
        )


def ragline_part(reply: dict[str, Any]) -> dict[str, Any]:
    """What ragline adds beyond OpenAI's fields: the reply's id (for `POST /v1/feedback`), status, index, cache
    and timings."""
    return {key: reply.get(key) for key in ("reply_id", "status", "index", "cache", "generator", "timings_ms")}


class ChunkStream:
    """ragline's stream events as OpenAI's `chat.completion.chunk`s: the role, each validated sentence's
    text (markers numbered), then the list of sources, a last chunk with `finish_reason` and the
    structured `citations`, and `[DONE]`."""

    def __init__(self, completion_id: str, created: int) -> None:
        self.id, self.created = completion_id, created
        self.numbering = Numbering()
        self.sentences: list[str] = []
        self.role_sent = False

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": MODEL_ID}
        return b"data: " + orjson.dumps({**body, "choices": [choice], **extra}) + b"\n\n"

    def _content(self, text: str) -> bytes:
        head = b""
        if not self.role_sent:
            self.role_sent = True
            head = self._chunk({"role": "assistant", "content": ""})
        return head + (self._chunk({"content": text}) if text else b"")

    def event(self, event: Event) -> bytes:
        if event.get("type") == "sentence":
            before = join_sentences(self.sentences)
            self.sentences.append(self.numbering.sentence(event["text"]))
            return self._content(join_sentences(self.sentences)[len(before) :])
        if event.get("type") != "final":
            return b""
        answered = event.get("status") == "answered"
        out = b"" if self.sentences else self._content(event["answer"])
        references = self.numbering.references(event.get("citations", [])) if answered else []
        out += self._content(sources(references))
        out += self._chunk({}, "stop", citations=references, ragline=ragline_part(event))
        return out + b"data: [DONE]\n\n"

    def error(self, failure: QueryFailed) -> bytes:
        _, body = openai_error(failure.status, failure.code, failure.message, None)
        return b"data: " + orjson.dumps(body) + b"\n\n"


class OpenAIErrorBody(BaseModel):
    message: str
    type: str
    code: str
    param: str | None = None


class OpenAIError(BaseModel):
    error: OpenAIErrorBody


OPENAI_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": OpenAIError, "description": description}
    for status, description in {
        400: "Malformed or too long request, in OpenAI's error shape (a 413 or 422 elsewhere in the API).",
        401: "Missing or invalid bearer token.",
        403: "The token lacks the `query` scope.",
        404: "No such model (`model_not_found`).",
        429: "Rate limit exceeded or too many streams open; see `Retry-After`.",
        502: "The generator cited a chunk it was not given.",
        503: "A store is unavailable or no index is active.",
        504: "The work ran past RAGLINE_REQUEST_TIMEOUT_SECONDS.",
    }.items()
}

router = APIRouter(prefix="/v1", tags=["openai"], dependencies=[QueryScope], responses=OPENAI_ERRORS)


@router.get("/models")
async def list_models(request: Request) -> dict[str, Any]:
    """The one model this server serves, as OpenAI lists models."""
    return {"object": "list", "data": [_model(request)]}


@router.get("/models/{model}")
async def get_model(model: str, request: Request) -> dict[str, Any]:
    check_model(model)
    return _model(request)


def _model(request: Request) -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": request.app.state.started, "owned_by": "ragline"}


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    body: ChatCompletionRequest, request: Request, service: ServiceDep, settings: SettingsDep
) -> FastJSONResponse | StreamingResponse:
    """ragline's answer to the last user message, as a chat completion (or its chunks)."""
    started = time.perf_counter()
    check_model(body.model)
    question = question_of(body)
    check_question(question, settings)
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    route = "/v1/chat/completions"
    if body.stream:
        release = open_stream(request)  # 429 past the stream caps
        try:
            events = stream_answer(service, question, history=history_of(body), access=caller_access(request))
            first = await first_event(events)
        except BaseException:
            release()
            raise
        metrics = request.app.state.metrics

        def on_final(final: dict[str, object]) -> None:
            observe_reply(request, final, question, route)

        chunks = ChunkStream(completion_id, created)
        stream = event_stream(request, events, first, started, metrics.first_sentence.observe, on_final, chunks)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return HeldStream(stream, release, media_type="text/event-stream", headers=headers)
    answer = functools.partial(service.answer, question, history=history_of(body), access=caller_access(request))
    loop = asyncio.get_running_loop()
    reply = await loop.run_in_executor(request.app.state.query_threads, contextvars.copy_context().run, answer)
    observe_reply(request, reply, question, route)
    text, references = cited_answer(reply)
    message = {"role": "assistant", "content": text, "refusal": None}
    return FastJSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": None,
            "citations": references,
            "ragline": ragline_part(reply),
        }
    )


def install(app: FastAPI) -> None:
    """The routes, and OpenAI's error shape for their paths."""
    app.state.started = int(time.time())
    add_error_shape(app, PATHS, openai_error)
    app.include_router(router)
