"""The MCP server through the SDK's own client, in both transports: `ragline mcp` over stdio (a child
process on the server suite's index of the harbor fixture corpus) and streamable HTTP at /mcp in the
real app on a loopback port, behind the bearer tokens."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from tests.server.conftest import ROOT, ServerEnv, fresh_question, live_server

RAGLINE = str(Path(sys.executable).parent / "ragline")
QUESTION = "Which port does the harbor dashboard listen on?"


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def exercise(client: Client) -> dict[str, Any]:
    """List the tools and call each of them the ways a model would."""
    tools = await client.list_tools()
    found = await client.call_tool("search_docs", {"query": "dashboard port", "top_k": 3})
    asked = await client.call_tool("ask_docs", {"question": fresh_question(QUESTION)})
    uncovered = await client.call_tool(
        "ask_docs", {"question": fresh_question("What does the harbor billing page charge per seat?")}
    )
    too_long = await client.call_tool("ask_docs", {"question": "x" * 5000})
    return {"tools": tools.tools, "found": found, "asked": asked, "uncovered": uncovered, "too_long": too_long}


def check(calls: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in calls["tools"]}
    assert set(tools) == {"search_docs", "ask_docs"}
    assert tools["search_docs"].output_schema and "passages" in tools["search_docs"].output_schema["properties"]

    found: CallToolResult = calls["found"]
    assert not found.is_error and found.structured_content is not None
    passages = found.structured_content["passages"]
    assert len(passages) <= 3 and passages[0]["document_id"] == "guide/config.md"
    assert passages[0]["source_uri"].endswith("#ports") and "7420" in passages[0]["text"]
    assert {"chunk_id", "title", "heading_path", "score"} <= set(passages[0])
    assert passages[0]["source_uri"] in text_of(found)

    asked: CallToolResult = calls["asked"]
    assert not asked.is_error and asked.structured_content is not None
    answer = text_of(asked)
    assert asked.structured_content["status"] == "answered" and asked.structured_content["answer"] == answer
    assert "7420" in answer and "[1]" in answer and "[C:" not in answer
    citation = asked.structured_content["citations"][0]
    assert citation["number"] == 1 and f"[1] {citation['title']}: {citation['source_uri']}" in answer

    uncovered: CallToolResult = calls["uncovered"]
    assert not uncovered.is_error and uncovered.structured_content is not None
    assert uncovered.structured_content["status"] in {"no_answer", "clarify"}
    assert uncovered.structured_content["citations"] == [] and text_of(uncovered)

    too_long: CallToolResult = calls["too_long"]
    assert too_long.is_error and "question_too_long" in text_of(too_long)


def test_stdio(server_env: ServerEnv) -> None:
    """`ragline mcp` as a desktop assistant starts it (before the HTTP tests: the child opens the index)."""
    s = server_env.settings
    env = {
        "RAGLINE_PROFILE": s.profile,
        "RAGLINE_HOME": str(s.home),
        "RAGLINE_POSTGRES_DSN": str(s.postgres_dsn),
        "RAGLINE_POSTGRES_SCHEMA": s.postgres_schema,
        "RAGLINE_REDIS_URL": str(s.redis_url),
        "RAGLINE_CACHE_PREFIX": s.cache_prefix,
        "HF_HUB_OFFLINE": "1",
        "PATH": os.environ.get("PATH", ""),
    }

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=RAGLINE, args=["mcp"], env=env)
        async with Client(params, read_timeout_seconds=300) as client:
            return await exercise(client)

    check(anyio.run(run))


@pytest.fixture(scope="module")
def url(server_env: ServerEnv) -> Iterator[str]:
    settings = server_env.settings.model_copy(update={"rate_limit_per_second": 0.0})
    with live_server(settings, server_env.stores) as base:
        yield base


def over_http(url: str, headers: dict[str, str]) -> Client:
    transport = streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=300))
    return Client(transport, read_timeout_seconds=300)


def test_streamable_http(url: str, server_env: ServerEnv) -> None:
    async def run() -> dict[str, Any]:
        async with over_http(url, server_env.headers(server_env.query_token)) as client:
            return await exercise(client)

    check(anyio.run(run))


def test_streamable_http_needs_a_token_with_the_query_scope(url: str, server_env: ServerEnv) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    missing = httpx.post(f"{url}/mcp", json=initialize, headers=accept)
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = httpx.post(f"{url}/mcp", json=initialize, headers={**accept, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "not valid" in wrong.json()["error"]["message"]
    admin = httpx.post(f"{url}/mcp", json=initialize, headers={**accept, **server_env.headers(server_env.admin_token)})
    assert admin.status_code == 403 and admin.json()["error"]["code"] == "forbidden"
    allowed = httpx.post(f"{url}/mcp", json=initialize, headers={**accept, **ROOT})
    assert allowed.status_code == 200, allowed.text

    async def without_token() -> None:
        async with over_http(url, {}) as client:
            await client.list_tools()

    # The SDK's client cannot even connect (it reports the 401 as an error response).
    with pytest.raises(BaseExceptionGroup) as refused:
        anyio.run(without_token)
    assert refused.group_contains(MCPError, match="error response", depth=None)


def test_streamable_http_counts_against_the_tokens_rate_limit(server_env: ServerEnv) -> None:
    settings = server_env.settings.model_copy(update={"rate_limit_per_second": 0.5, "rate_limit_burst": 1})
    headers = {"Accept": "application/json, text/event-stream", **server_env.headers(server_env.query_token)}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with live_server(settings, server_env.stores) as base:
        httpx.post(f"{base}/mcp", json=ping, headers=headers)
        limited = httpx.post(f"{base}/mcp", json=ping, headers=headers)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
    assert limited.headers["retry-after"]
