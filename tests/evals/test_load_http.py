"""The load generator: its raw HTTP/1.1 client against the real app on a loopback port (its replies
must read exactly as httpx reads them; a non-200 or a malformed reply is an error with its status),
a small end-to-end run, and the recorded command without the access token."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from evals.bench.load_http import HttpError, RawClient, Target, _masked, measure, run_load
from tests.server.conftest import ROOT, ServerEnv, fresh_question, live_server, server_env  # noqa: F401

QUESTION = "Which port does the harbor dashboard listen on?"
TOKEN = "test-token"  # the root token of the server suite's settings


@pytest.fixture(scope="module")
def url(server_env: ServerEnv) -> Iterator[str]:  # noqa: F811
    settings = server_env.settings.model_copy(update={"rate_limit_per_second": 0.0})
    with live_server(settings, server_env.stores) as served:
        yield served


def without_timings(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply without what differs between two answers of the same cached question."""
    # Each reply has an id and a conversation of its own, cache hits too.
    per_reply = ("timings_ms", "request_id", "trace_id", "reply_id", "conversation_id")
    return {k: v for k, v in reply.items() if k not in per_reply}


def test_raw_client_reads_the_replies_as_httpx_does(url: str) -> None:
    question = fresh_question(QUESTION)

    async def run() -> tuple[list[dict[str, Any]], int]:
        target = Target(url, TOKEN)
        try:
            replies = [(await target.ask(question, repeat=True))[1] for _ in range(3)]
            connections = len(target.raw.idle)
            return replies, connections
        finally:
            await target.aclose()

    (first, second, third), connections = asyncio.run(run())
    assert first["cache"] != "hit" and second["cache"] == third["cache"] == "hit"
    assert connections == 1, "three requests in a row should reuse one keep-alive connection"
    by_httpx = httpx.post(f"{url}/v1/query", json={"question": question}, headers=ROOT, timeout=60)
    assert by_httpx.status_code == 200 and by_httpx.json()["cache"] == "hit"
    assert without_timings(by_httpx.json()) == without_timings(second) == without_timings(third)
    assert second["answer"], "the cached reply should carry the answer"


def test_a_non_200_is_an_error_with_its_status_and_the_connection_stays_usable(url: str) -> None:
    async def run() -> tuple[list[int], Any, Any]:
        client = RawClient(url, "not-a-token")
        good = RawClient(url, TOKEN)
        statuses = []
        try:
            for raw, body in ((client, {"question": QUESTION}), (good, {"question": "  "})):
                try:
                    await raw.send(raw.request("/v1/query", body))
                except HttpError as exc:
                    statuses.append(exc.status)
            used = good.idle[-1]
            status, body = await good.send(good.request("/v1/query", {"question": QUESTION}))
            assert status == 200 and b'"answer"' in body
            reused = good.idle[-1] is used

            async def refused(_: int) -> float:
                await client.send(client.request("/v1/query", {"question": QUESTION}))
                return 0.0

            summary = await run_load(2, 6, refused, 30)
            return statuses, reused, summary
        finally:
            await client.aclose()
            await good.aclose()

    statuses, reused, summary = asyncio.run(run())
    assert statuses == [401, 422]
    assert reused, "a 422 reply keeps its connection alive"
    assert summary.errors == summary.requests == 6 and summary.error_kinds == {"401": 6}


def test_a_chunked_body_is_read_whole(url: str) -> None:
    """The stream route answers without a Content-Length: the raw client reads its chunks to the end."""

    async def run() -> bytes:
        client = RawClient(url, TOKEN)
        try:
            _, body = await client.send(client.request("/v1/query/stream", {"question": fresh_question(QUESTION)}))
            return body
        finally:
            await client.aclose()

    body = asyncio.run(run())
    by_httpx = httpx.post(
        f"{url}/v1/query/stream", json={"question": fresh_question(QUESTION)}, headers=ROOT, timeout=60
    )
    assert "content-length" not in by_httpx.headers
    events = [line for line in body.decode().splitlines() if line.startswith("event: ")]
    assert events[-1] == "event: final" and len(events) >= 2


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"garbage\r\n\r\n", "malformed status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "closed inside the body"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "malformed Content-Length"),
        (b"HTTP/1.1 200 OK\r\n\r\n{}", "neither Content-Length nor chunked"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "closed before a response"),
    ],
)
def test_a_malformed_reply_is_an_error(reply: bytes, message: str) -> None:
    """No server here sends these, so a socket peer on loopback does: it reads the request, then
    writes `reply` and hangs up."""

    async def run() -> HttpError:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(reply)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = RawClient(f"http://127.0.0.1:{port}", TOKEN)
        try:
            with pytest.raises(HttpError) as caught:
                await client.send(client.request("/v1/query", {"question": QUESTION}))
            return caught.value
        finally:
            await client.aclose()
            server.close()
            await server.wait_closed()

    error = asyncio.run(run())
    assert error.status == 0 and message in str(error)


def test_a_small_run_against_the_real_app_has_no_errors(url: str) -> None:
    async def run() -> dict[str, Any]:
        target = Target(url, TOKEN)
        try:
            return await measure(target, [1, 4], hits=40, misses=2, streams=2, budget=60)
        finally:
            await target.aclose()

    out = asyncio.run(run())
    for kind in ("cache_hit", "cache_miss", "first_sentence"):
        for c in (1, 4):
            assert out[kind][c]["errors"] == 0, (kind, c, out[kind][c])
    assert out["cache_hit"][4]["requests"] == 40 and out["cache_hit"][4]["p95_ms"] > 0


def test_token_is_left_out_of_the_recorded_command() -> None:
    argv = ["--url", "http://127.0.0.1:8000", "--token", "s3cret", "--concurrency", "1,8"]
    assert _masked(argv) == ["--url", "http://127.0.0.1:8000", "--token", "<token>", "--concurrency", "1,8"]
    assert _masked(["--token=s3cret", "--hits", "300"]) == ["--token=<token>", "--hits", "300"]
    assert "s3cret" not in " ".join(_masked(argv))
