"""The MCP server (the official `mcp` SDK): tools `search_docs` (ranked passages with links and scores)
and `ask_docs` (a cited answer, or ragline's no-answer), over stdio (`ragline mcp`) and over streamable
HTTP at `/mcp` in the FastAPI app, where every request needs a bearer token with the `query` scope and
counts against its rate limit, as `/v1/query` does.

Both tools run the query service the HTTP API runs: `search_docs` is `/v1/search`, `ask_docs` is
`/v1/query` with the answer written as server/cited_text.py writes it (numbered references, then the
list of sources). A failure (no index, a store down, a question too long) is a tool error, its code and
message in the text; a refusal, a clarification or a no-answer is an ordinary result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.security import HTTPAuthorizationCredentials
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pipelines.access import PUBLIC_ONLY, Access
from pipelines.settings import Settings
from query_graph.service import QueryFailed, QueryService
from server.cited_text import cited_answer
from server.deps import authorize
from server.errors import ApiError, error_response
from server.routes.query import check_question

PATH = "/mcp"
INSTRUCTIONS = (
    "ragline answers questions about one body of documentation. Use search_docs to find the passages "
    "about a topic (each with its link), ask_docs for an answer whose every sentence cites its passage; "
    "ask_docs says when the documents do not cover a question."
)


class DocPassage(BaseModel):
    chunk_id: str
    document_id: str
    title: str
    heading_path: list[str]
    source_uri: str = Field(description="A link to the passage's section.")
    score: float = Field(description="What the passages are ranked by (higher is nearer).")
    text: str


class SearchDocsResult(BaseModel):
    status: Literal["ok", "refused"]
    message: str | None = Field(None, description="Why a refused query got no passages.")
    passages: list[DocPassage]


class DocCitation(BaseModel):
    number: int = Field(description="The [n] the answer cites it by.")
    chunk_id: str
    document_id: str
    title: str
    source_uri: str


class AskDocsResult(BaseModel):
    status: Literal["answered", "no_answer", "clarify", "refused"]
    answer: str = Field(description="The answer with numbered references and the list of sources at its end.")
    citations: list[DocCitation]


# The access groups of the token of the HTTP request a tool call arrived in (`BearerGate` sets it; the
# tool runs in a task started within that request's context). Unset: public pages only.
_caller: ContextVar[Access] = ContextVar("ragline_mcp_caller", default=PUBLIC_ONLY)


def build_mcp(
    service: Callable[[], QueryService],
    settings: Callable[[], Settings],
    access: Callable[[], Access] = _caller.get,
) -> MCPServer:
    """The MCP server over a query service (read when a tool is called: the app's, once it started); `access`
    gives the calling token's groups (over HTTP, the request's token; over stdio, the operator's: every group)."""
    mcp: MCPServer = MCPServer(name="ragline", instructions=INSTRUCTIONS, version="0.1.0")

    async def run(fn: Callable[[], dict[str, Any]], text: str) -> dict[str, Any]:
        try:
            check_question(text, settings())
            return await anyio.to_thread.run_sync(fn)
        except (ApiError, QueryFailed) as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc

    @mcp.tool(name="search_docs", title="Search the documentation")
    async def search_docs(query: str, top_k: int = 5) -> Annotated[CallToolResult, SearchDocsResult]:
        """Passages of the documentation that match a query, best first, each with its id, title, heading
        path, link (source_uri), score and text. No answer is written: read the passages yourself."""
        if not 1 <= top_k <= 50:
            raise ToolError("invalid_request: top_k must be between 1 and 50")
        caller = access()
        reply = await run(lambda: service().search(query, top_k=top_k, access=caller), query)
        fields = DocPassage.model_fields
        passages = [DocPassage(**{k: p[k] for k in fields}) for p in reply["passages"]]
        found = SearchDocsResult(status=reply["status"], message=reply.get("message"), passages=passages)
        if found.status == "refused":
            text = f"refused: {found.message}"
        else:
            text = "\n\n".join(
                f"[{i}] {p.title} ({' > '.join(p.heading_path)}) score {p.score:.3f}\n{p.source_uri}\n{p.text}"
                for i, p in enumerate(passages, start=1)
            )
        return _result(text or "no passages", found)

    @mcp.tool(name="ask_docs", title="Ask the documentation")
    async def ask_docs(question: str) -> Annotated[CallToolResult, AskDocsResult]:
        """An answer to a question from the documentation, every sentence citing its passage as [n], with
        the list of sources (links) at the end; or ragline's statement that the documents do not cover it
        (status no_answer), a clarifying question (clarify) or a refusal (refused)."""
        caller = access()
        reply = await run(lambda: service().answer(question, access=caller), question)
        text, references = cited_answer(reply)
        fields = DocCitation.model_fields
        citations = [DocCitation(**{k: r[k] for k in fields}) for r in references]
        return _result(text, AskDocsResult(status=reply["status"], answer=text, citations=citations))

    return mcp


def _result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=json.loads(structured.model_dump_json())
    )


class BearerGate:
    """The MCP endpoint behind ragline's bearer tokens: a valid token with the `query` scope, within its
    rate limit; else the API's 401, 403 or 429 in its error shape."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope)
            kind, _, token = request.headers.get("authorization", "").partition(" ")
            credentials = None
            if kind.lower() == "bearer" and token.strip():
                credentials = HTTPAuthorizationCredentials(scheme="Bearer", credentials=token.strip())
            try:
                principal = authorize(request, credentials, "query")
            except ApiError as exc:
                await error_response(request, exc.status, exc.code, exc.message, exc.headers)(scope, receive, send)
                return
            calling = _caller.set(principal.access)
            try:
                await self.app(scope, receive, send)
            finally:
                _caller.reset(calling)
            return
        await self.app(scope, receive, send)


def install(app: FastAPI) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Serve the MCP server at `/mcp` (streamable HTTP, stateless: any server process can answer any
    request); returns what the app's lifespan must run around serving."""
    mcp = build_mcp(lambda: app.state.service, lambda: app.state.settings)
    # Every request carries a bearer token, which a page of another origin cannot send on a rebinding
    # attack, so the SDK's Host check (which would refuse any name but localhost) is off.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    mcp.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
    endpoint = BearerGate(StreamableHTTPASGIApp(mcp.session_manager))
    app.router.routes.append(Route(PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))
    return mcp.session_manager.run
