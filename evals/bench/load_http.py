"""HTTP load on loopback: throughput and p50/p95/p99 for cache hits and misses at several
concurrencies, time to first validated sentence on the stream, and whether misbehaving clients
(a slow reader, a disconnect mid-stream, an oversized upload) slow the others down.

Bounded in count and time; loopback only. By default it starts `ragline serve` on a fresh data dir
(rate limit off, the project's docs/ as the corpus) and stops it at the end:

    .venv/bin/python -m evals.bench.load_http --out load_http.json

or against a running server:  --url http://127.0.0.1:8000 --token <token with the query scope>
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from orjson import loads as json_loads  # the server's own JSON library: a fifth of json's cost

QUESTIONS = [
    "How do I build the index?",
    "Which port does the server listen on?",
    "How do I roll back to a previous index version?",
    "What does the exact cache key contain?",
    "How are access tokens stored?",
    "What happens when Redis is down?",
    "How do I start the Dagster UI?",
    "What does the readiness probe check?",
]


@dataclass
class Summary:
    requests: int
    errors: int
    seconds: float
    throughput_rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    # {"503": n, "malformed": n, "RuntimeError": n}: what the errors were, by HTTP status or kind.
    error_kinds: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, latencies: list[float], errors: int, seconds: float, kinds: dict[str, int] | None = None) -> Summary:
        ms = sorted(x * 1000 for x in latencies) or [0.0]

        def pct(p: float) -> float:
            return round(ms[min(len(ms) - 1, round(p / 100 * (len(ms) - 1)))], 2)

        return cls(
            len(latencies) + errors,
            errors,
            round(seconds, 2),
            round(len(latencies) / seconds, 1),
            pct(50),
            pct(95),
            pct(99),
            round(ms[-1], 2),
            dict(kinds or {}),
        )


async def run_load(
    concurrency: int, total: int, one: Callable[[int], Awaitable[float]], budget_seconds: float
) -> Summary:
    """`total` calls of `one(i)` with `concurrency` in flight, stopping early at the time budget."""
    latencies: list[float] = []
    errors = 0
    kinds: dict[str, int] = {}
    counter = iter(range(total))
    deadline = time.monotonic() + budget_seconds

    async def worker() -> None:
        nonlocal errors
        for i in counter:
            if time.monotonic() > deadline:
                return
            try:
                latencies.append(await one(i))
            except Exception as exc:
                errors += 1
                kind = error_kind(exc)
                kinds[kind] = kinds.get(kind, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Summary.of(latencies, errors, time.perf_counter() - started, kinds)


def error_kind(exc: Exception) -> str:
    """An error's key in `Summary.error_kinds`: the HTTP status, `malformed`, or the exception type."""
    if isinstance(exc, HttpError):
        return str(exc.status) if exc.status else "malformed"
    return type(exc).__name__


class HttpError(RuntimeError):
    """A reply that is not a 200, or not a well-formed HTTP/1.1 response (`status` 0)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status


class RawConnection:
    """One HTTP/1.1 keep-alive connection on bare asyncio streams: write the request bytes, read the
    status line, the headers and a Content-Length (or chunked) body. A tenth of httpx's CPU per
    request, so the load generator does not compete with the server it measures for the same cores."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int) -> RawConnection:
        reader, writer = await asyncio.open_connection(host, port)  # asyncio sets TCP_NODELAY
        return cls(reader, writer)

    async def exchange(self, request: bytes) -> tuple[int, dict[str, str], bytes, bool]:
        """(status, lower-cased headers, body, whether the connection may be reused) for one request."""
        self.writer.write(request)
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            raise HttpError(0, f"connection closed before a response ({len(exc.partial)} bytes)") from None
        except asyncio.LimitOverrunError:
            raise HttpError(0, "response head longer than 64 KiB") from None
        lines = head[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0") or not parts[1].isdigit():
            raise HttpError(0, f"malformed status line {lines[0][:80]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise HttpError(0, f"malformed header line {line[:80]!r}")
            headers[name.lower()] = value.strip()
        try:
            if "content-length" in headers:
                length = headers["content-length"]
                if not length.isdigit():
                    raise HttpError(0, f"malformed Content-Length {length!r}")
                body = await self.reader.readexactly(int(length))
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                body = await self._chunked()
            elif status in (204, 304) or 100 <= status < 200:
                body = b""
            else:
                raise HttpError(0, f"{status} reply with neither Content-Length nor chunked body")
        except asyncio.IncompleteReadError as exc:
            raise HttpError(0, f"connection closed inside the body ({len(exc.partial)} bytes)") from None
        reusable = parts[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return status, headers, body, reusable

    async def _chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            size_line = (await self.reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise HttpError(0, f"malformed chunk size {size_line[:20]!r}") from None
            if size == 0:
                while await self.reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(chunks)
            chunks.append(await self.reader.readexactly(size))
            if await self.reader.readexactly(2) != b"\r\n":
                raise HttpError(0, "chunk not followed by CRLF")

    def close(self) -> None:
        self.writer.close()


class RawClient:
    """POSTs of JSON over a pool of `RawConnection`s: a request takes an idle connection or opens one,
    so `concurrency` workers use `concurrency` connections, each kept alive between requests."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the raw client speaks plain http to a host, not {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.base = parts.path.rstrip("/")
        authority = parts.netloc.rpartition("@")[2]
        self.head = (
            f"Host: {authority}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
        ).encode("latin-1")
        self.idle: list[RawConnection] = []

    def request(self, path: str, body: Any) -> bytes:
        """The whole request, encoded once: a caller sending the same body again can reuse the bytes."""
        payload = json.dumps(body, ensure_ascii=False).encode()
        return (
            f"POST {self.base}{path} HTTP/1.1\r\n".encode("latin-1")
            + self.head
            + f"Content-Length: {len(payload)}\r\n\r\n".encode("latin-1")
            + payload
        )

    async def send(self, request: bytes) -> tuple[int, bytes]:
        """(status, body) of one request; a non-200 or a malformed reply raises `HttpError`."""
        connection = self.idle.pop() if self.idle else await RawConnection.open(self.host, self.port)
        try:
            status, _, body, reusable = await connection.exchange(request)
        except BaseException:
            connection.close()
            raise
        if reusable:
            self.idle.append(connection)
        else:
            connection.close()
        if status != 200:
            raise HttpError(status, body[:200].decode("utf-8", "replace"))
        return status, body

    async def aclose(self) -> None:
        while self.idle:
            connection = self.idle.pop()
            connection.close()
            with contextlib.suppress(Exception):
                await connection.writer.wait_closed()


class Target:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url.rstrip("/"), {"Authorization": f"Bearer {token}"}
        # Cache hits and misses go through the raw client (its CPU cost is what a closed-loop load
        # generator adds to every latency it times); streams and misbehaving clients through httpx.
        self.raw = RawClient(self.url, token)
        self.client = httpx.AsyncClient(
            timeout=120, limits=httpx.Limits(max_connections=64, max_keepalive_connections=64)
        )
        self._encoded: dict[str, bytes] = {}

    async def ask(self, question: str, repeat: bool = False) -> tuple[float, dict[str, Any]]:
        """Seconds and reply of one `/v1/query`; `repeat` keeps the encoded request for the next call."""
        request = self._encoded.get(question) if repeat else None
        if request is None:
            request = self.raw.request("/v1/query", {"question": question})
            if repeat:
                self._encoded[question] = request
        started = time.perf_counter()
        _, body = await self.raw.send(request)
        elapsed = time.perf_counter() - started
        try:
            reply = json_loads(body)
        except ValueError:
            raise HttpError(0, f"reply is not JSON: {body[:80]!r}") from None
        return elapsed, reply

    async def aclose(self) -> None:
        await self.raw.aclose()
        await self.client.aclose()

    async def first_sentence(self, question: str, hang_up: bool = False) -> float:
        """Seconds to the first `sentence` event (or to `final` when there is none); `hang_up` leaves then."""
        started = time.perf_counter()
        body = {"question": question}
        async with self.client.stream(
            "POST", f"{self.url}/v1/query/stream", json=body, headers=self.headers
        ) as response:
            if response.status_code != 200:
                raise RuntimeError(f"stream {response.status_code}")
            first = None
            async for line in response.aiter_lines():
                if line.startswith("event: ") and first is None:
                    first = time.perf_counter() - started
                    if hang_up:
                        return first
            if first is None:
                raise RuntimeError("stream ended without events")
            return first


def unique(question: str) -> str:
    return f"{question} (load {uuid.uuid4().hex[:8]})"


async def measure(
    target: Target, levels: list[int], hits: int, misses: int, streams: int, budget: float
) -> dict[str, Any]:
    out: dict[str, Any] = {"cache_hit": {}, "cache_miss": {}, "first_sentence": {}}
    warm = QUESTIONS[1]
    _, reply = await target.ask(warm)
    _, reply = await target.ask(warm)
    assert reply["cache"] == "hit", f"the warm question should hit the exact cache, got {reply['cache']}"
    for c in levels:

        async def hit(_: int) -> float:
            elapsed, body = await target.ask(warm, repeat=True)
            if body["cache"] != "hit":
                raise RuntimeError("expected a cache hit")
            return elapsed

        async def miss(i: int) -> float:
            elapsed, body = await target.ask(unique(QUESTIONS[i % len(QUESTIONS)]))
            if body["cache"] == "hit":
                raise RuntimeError("expected a miss")
            return elapsed

        async def stream(i: int) -> float:
            return await target.first_sentence(unique(QUESTIONS[i % len(QUESTIONS)]))

        out["cache_hit"][c] = (await run_load(c, hits, hit, budget)).__dict__
        out["cache_miss"][c] = (await run_load(c, misses, miss, budget)).__dict__
        out["first_sentence"][c] = (await run_load(c, streams, stream, budget)).__dict__
        print(
            f"c={c}: hit {out['cache_hit'][c]}\n      miss {out['cache_miss'][c]}\n      ttfs {out['first_sentence'][c]}",
            file=sys.stderr,
            flush=True,
        )
    return out


async def misbehaving(target: Target, hits: int) -> dict[str, Any]:
    """Cache-hit latency at concurrency 8 alone, then while bad clients misbehave next to it."""
    warm = QUESTIONS[1]

    async def hit(_: int) -> float:
        elapsed, body = await target.ask(warm, repeat=True)
        if body["cache"] != "hit":
            raise RuntimeError("expected a cache hit")
        return elapsed

    result: dict[str, Any] = {"baseline": (await run_load(8, hits, hit, 60)).__dict__}

    # Slow readers: streams whose body is never read past the headers while the hits run.
    slow = [
        await target.client.send(
            target.client.build_request(
                "POST", f"{target.url}/v1/query/stream", json={"question": unique(q)}, headers=target.headers
            ),
            stream=True,
        )
        for q in QUESTIONS[:4]
    ]
    result["slow_readers"] = (await run_load(8, hits, hit, 60)).__dict__
    for response in slow:
        await response.aclose()

    # Disconnects mid-stream: 16 streams that hang up after the first event, alongside the hits.
    async def hang_up(i: int) -> float:
        return await target.first_sentence(unique(QUESTIONS[i % len(QUESTIONS)]), hang_up=True)

    hits_task = asyncio.create_task(run_load(8, hits, hit, 60))
    dropped = await run_load(4, 16, hang_up, 60)
    result["disconnects"] = {**(await hits_task).__dict__, "dropped_streams": dropped.requests - dropped.errors}

    # Oversized uploads: 20 MB bodies to the voice route (limit 10 MB), alongside the hits.
    big = b"\0" * 20_000_000

    closed_early = 0

    async def upload(_: int) -> float:
        nonlocal closed_early
        started = time.perf_counter()
        try:
            response = await target.client.post(
                f"{target.url}/v1/voice/transcribe",
                headers=target.headers,
                files={"audio": ("big.wav", big, "audio/wav")},
            )
        except httpx.TransportError:
            # The server answered 413 from the Content-Length and closed the connection while the
            # client was still sending: the upload was refused without being read.
            closed_early += 1
            return time.perf_counter() - started
        if response.status_code != 413:
            raise RuntimeError(f"expected 413, got {response.status_code}")
        return time.perf_counter() - started

    hits_task = asyncio.create_task(run_load(8, hits, hit, 60))
    uploads = await run_load(2, 6, upload, 60)
    result["oversized_uploads"] = {
        **(await hits_task).__dict__,
        "uploads_refused": uploads.requests - uploads.errors,
        "of_which_closed_while_sending": closed_early,
        "upload_p50_ms": uploads.p50_ms,
    }
    return result


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports nothing listens on: each socket stays bound until all are chosen, so two calls
    in a row cannot hand out the same port (a server and the Redis beside it once got one port, and the second to
    bind failed with "Address already in use")."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def spawn_server(source: str | None) -> tuple[subprocess.Popen[str], str, str, tempfile.TemporaryDirectory[str]]:
    home = tempfile.TemporaryDirectory(prefix="ragline-load-")
    port = free_port()
    env = {
        **os.environ,
        "RAGLINE_HOME": home.name,
        "RAGLINE_PORT": str(port),
        "RAGLINE_RATE_LIMIT_PER_SECOND": "0",
        "RAGLINE_LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("RAGLINE_TOKEN", None)
    if source:
        env["RAGLINE_SOURCE"] = source
    server = subprocess.Popen([sys.executable, "-m", "ragline", "serve"], env=env, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    deadline, token = time.monotonic() + 900, None
    while token is None and time.monotonic() < deadline:
        line = server.stderr.readline()
        if not line and server.poll() is not None:
            raise RuntimeError("ragline serve exited before serving")
        match = re.search(r"access token (\S+)", line)
        token = match.group(1) if match else None
    url = f"http://127.0.0.1:{port}"
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    assert token is not None
    return server, url, token, home


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    server = home = None
    url, token = args.url, args.token
    if not url:
        server, url, token, home = spawn_server(args.source)
    target = Target(url, token)
    # The load generator must not stall the requests it times: a full collection of its own ~40k
    # objects (asyncio, httpx) held every request in flight for ~40 ms, about once a run. Frozen
    # before the first request, collections only scan what the run allocates (~1 ms).
    gc.collect()
    gc.freeze()
    try:
        levels = [int(c) for c in args.concurrency.split(",")]
        report = {
            "command": " ".join([Path(sys.executable).name, "-m", "evals.bench.load_http", *_masked(sys.argv[1:])]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
            # Other work on the machine inflates every figure: record how busy it was.
            "load_average_before": os.getloadavg()[0],
            "load": await measure(target, levels, args.hits, args.misses, args.streams, args.budget),
            "misbehaving_clients": await misbehaving(target, args.hits),
        }
        report["load_average_after"] = os.getloadavg()[0]
    finally:
        await target.aclose()
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
            assert home is not None
            home.cleanup()
    return report


def _masked(argv: list[str]) -> list[str]:
    """The arguments as recorded in the report: a --token value is a secret, so it is left out."""
    out, hide = [], False
    for arg in argv:
        out.append("<token>" if hide else ("--token=<token>" if arg.startswith("--token=") else arg))
        hide = arg == "--token"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running server (default: start `ragline serve` on a fresh data dir)")
    parser.add_argument("--token", help="token with the query scope (with --url)")
    parser.add_argument("--source", help="corpus of the spawned server (default: the project's docs/)")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--hits", type=int, default=400, help="cache-hit requests per level")
    parser.add_argument("--misses", type=int, default=48, help="cache-miss requests per level")
    parser.add_argument("--streams", type=int, default=24, help="streamed requests per level")
    parser.add_argument("--budget", type=float, default=120, help="seconds at most per measurement")
    parser.add_argument("--out", type=Path, help="write the JSON report here too")
    args = parser.parse_args()
    if args.url and not args.token:
        parser.error("--url needs --token")
    report = asyncio.run(main_async(args))
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
