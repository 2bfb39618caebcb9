"""Load and faults against several server processes (`ragline serve --workers N`, issue 30), on loopback only.

It starts a Redis of its own (`redis-server` on a free port, so that it can stop and restart it), then `ragline
serve --workers N` on a fresh data dir (the embedded PostgreSQL, the index in it with pgvector, the semantic cache
and rate limits shared) over a copy of the source (the project's docs/ by default), and:

1. **load**: clients at each concurrency (1, 8, 32) for a fixed time, asking a mix of a few repeated questions
   (exact-cache hits after the first), questions made unique (answered from the index) and off-topic questions
   made unique (no_answer): requests per second, p50 / p95 per outcome, errors;
2. **faults**, under load at one concurrency: one server process killed (SIGKILL), Redis stopped and started
   again, a new index version built and activated through the admin API of whichever process takes the request
   (a page added to the source), and a build that fails its checks in another process. Judged: only requests in
   flight on the killed process fail, every other request succeeds, the caches bypass while Redis is away,
   replies name the new version within the registry's poll, and the failed build leaves the active one serving.

    .venv/bin/python -m evals.bench.scaleout --workers 4 --out scaleout.json

`tests/server/test_scaleout.py` runs the faults on the test corpus and asserts the judgement.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from evals.bench.load_http import free_ports

PROJECT = Path(__file__).resolve().parents[2]
REPEATED = ["How do I build the index?", "Which port does the server listen on?", "How are access tokens stored?"]
ANSWERABLE = [
    "How do I roll back to a previous index version?",
    "What happens when Redis is down?",
    "What does the readiness probe check?",
    "How do I start the Dagster UI?",
]
OFF_TOPIC = ["What is the boiling point of mercury in kelvin?", "Who painted the ceiling of the Sistine Chapel?"]
TRANSPORT_ERRORS = {"RemoteProtocolError", "ReadError", "ConnectError", "WriteError", "ReadTimeout"}


@dataclass(frozen=True)
class Questions:
    repeated: list[str]
    answerable: list[str]
    off_topic: list[str]

    def pick(self, i: int) -> str:
        """Half repeated (cache hits once asked), a third answerable and a sixth off-topic, each made unique."""
        slot = i % 6
        if slot in (0, 2, 4):
            return self.repeated[(i // 6) % len(self.repeated)]
        pool = self.off_topic if slot == 5 else self.answerable
        return f"{pool[i % len(pool)]} (load {uuid.uuid4().hex[:8]})"


DOCS_QUESTIONS = Questions(REPEATED, ANSWERABLE, OFF_TOPIC)


@dataclass(frozen=True)
class Outcome:
    at: float  # monotonic time the request ended
    ms: float
    status: int  # HTTP status; 0: no response
    kind: str  # hit, answered, no_answer, clarify, or the error (HTTP status or exception name)
    version: str = ""


def outcome_of(response: httpx.Response, started: float) -> Outcome:
    now = time.monotonic()
    ms = (now - started) * 1000
    if response.status_code != 200:
        return Outcome(now, ms, response.status_code, str(response.status_code))
    body = response.json()
    kind = "hit" if body.get("cache") in ("hit", "semantic_hit") else str(body.get("status"))
    return Outcome(now, ms, 200, kind, body.get("index", {}).get("content_version", ""))


async def load(url: str, token: str, questions: Questions, clients: int, stop: asyncio.Event) -> list[Outcome]:
    """`clients` clients asking in turn until `stop` is set."""
    outcomes: list[Outcome] = []
    counter = iter(range(10**9))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:

        async def client() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            while not stop.is_set():
                question = questions.pick(next(counter))
                started = time.monotonic()
                try:
                    response = await http.post("/v1/query", json={"question": question}, headers=headers)
                    outcomes.append(outcome_of(response, started))
                except httpx.HTTPError as exc:
                    now = time.monotonic()
                    outcomes.append(Outcome(now, (now - started) * 1000, 0, type(exc).__name__))

        await asyncio.gather(*(client() for _ in range(clients)))
    return outcomes


def summary(outcomes: list[Outcome], seconds: float) -> dict[str, Any]:
    """Requests per second, errors, and count / p50 / p95 (ms) per outcome."""

    def pct(values: list[float], p: float) -> float:
        ordered = sorted(values)
        return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 1)

    kinds: dict[str, Any] = {}
    for kind in sorted({o.kind for o in outcomes}):
        ms = [o.ms for o in outcomes if o.kind == kind]
        kinds[kind] = {"count": len(ms), "p50_ms": pct(ms, 50), "p95_ms": pct(ms, 95)}
    errors = [o for o in outcomes if o.status != 200]
    return {
        "requests": len(outcomes),
        "seconds": round(seconds, 1),
        "requests_per_second": round(len(outcomes) / seconds, 1),
        "errors": len(errors),
        "by_outcome": kinds,
    }


@dataclass
class Deployment:
    """`ragline serve --workers N` over a copy of `source`, with a Redis of its own; stopped by `close`."""

    source: Path
    workers: int
    root: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    redis_port: int = 0
    url: str = ""
    token: str = ""
    server: subprocess.Popen[bytes] | None = None
    redis: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.corpus = self.root / "corpus"
        shutil.copytree(self.source, self.corpus)
        self.redis_port, self.port = free_ports(2)
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAGLINE_HOME": str(self.root / "home"),
            "RAGLINE_SOURCE": str(self.corpus),
            "RAGLINE_PORT": str(self.port),
            "RAGLINE_HOST": "127.0.0.1",
            "RAGLINE_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "RAGLINE_RATE_LIMIT_PER_SECOND": "0",
            "RAGLINE_RATE_LIMIT_PER_ADDRESS_PER_SECOND": "0",
            "RAGLINE_LOG_LEVEL": "WARNING",
            "HF_HUB_OFFLINE": "1",
            **self.env_extra,
        }
        self.env.pop("RAGLINE_TOKEN", None)

    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no", "--dir", str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        ping = ["redis-cli", "-p", str(self.redis_port), "ping"]
        while subprocess.run(ping, capture_output=True).stdout.strip() != b"PONG":
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop_redis(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.redis_port), "shutdown", "nosave"], capture_output=True)
        if self.redis is not None:
            self.redis.wait(timeout=10)

    def start(self, timeout: float = 900.0) -> None:
        self.start_redis()
        log = (self.root / "serve.log").open("wb")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "ragline", "serve", "--workers", str(self.workers)],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while len(self.worker_pids()) < self.workers or not self.ready():
            if self.server.poll() is not None:
                raise RuntimeError(f"ragline serve exited: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"ragline serve was not ready in {timeout:.0f} s: {self.log_tail()}")
            time.sleep(0.5)
        found = re.search(r"access token (\S+)", self.log_tail(100_000))
        if found is None:
            raise RuntimeError(f"ragline serve printed no access token: {self.log_tail()}")
        self.token = found.group(1)

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def log_tail(self, chars: int = 3000) -> str:
        return (self.root / "serve.log").read_text(errors="replace")[-chars:]

    def worker_pids(self) -> list[int]:
        """The server processes (uvicorn's workers), not the resource tracker or the embedded services."""
        if self.server is None:
            return []
        if self.workers == 1:
            return [self.server.pid]  # `ragline serve` serves in its own process
        found = subprocess.run(["pgrep", "-P", str(self.server.pid)], capture_output=True, text=True).stdout
        pids = []
        for pid in found.split():
            with contextlib.suppress(OSError):
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    pids.append(int(pid))
        return pids

    def cpu_seconds(self, pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def build_via_api(self, timeout: float = 600.0) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"}
        started = httpx.post(f"{self.url}/v1/admin/index/builds", json={}, headers=headers, timeout=60).json()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            build = httpx.get(f"{self.url}/v1/admin/index/builds/{started['id']}", headers=headers, timeout=30).json()
            if build["state"] in ("succeeded", "failed", "cancelled"):
                return dict(build)
            time.sleep(0.5)
        raise RuntimeError(f"build {started['id']} did not finish in {timeout:.0f} s")

    def failing_build(self, page: str, text: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """`ragline index build` in another process, with settings (`env`) under which the source fails a check."""
        (self.corpus / page).write_text(text)
        try:
            return subprocess.run(
                [sys.executable, "-m", "ragline", "index", "build"],
                env={**self.env, **env}, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
        finally:
            (self.corpus / page).unlink()

    def close(self) -> None:
        if self.server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.server.pid, signal.SIGTERM)
            try:
                self.server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait()


@contextlib.contextmanager
def deployment(source: Path, workers: int, env: dict[str, str] | None = None) -> Iterator[Deployment]:
    with tempfile.TemporaryDirectory(prefix="ragline-scaleout-") as root:
        running = Deployment(source, workers, Path(root), env or {})
        try:
            running.start()
            yield running
        finally:
            running.close()


def versions_seen(outcomes: list[Outcome]) -> set[str]:
    return {o.version for o in outcomes if o.version}


async def faults(
    dep: Deployment,
    questions: Questions,
    clients: int,
    new_page: tuple[str, str],
    failing: tuple[str, str, dict[str, str]],
    pause: float = 4.0,
) -> dict[str, Any]:
    """Load at `clients` while one process is killed, Redis restarts, a new version is activated through the API,
    and a build fails its checks in another process; every step is timed and the outcomes judged."""
    stop = asyncio.Event()
    running = asyncio.create_task(load(dep.url, dep.token, questions, clients, stop))
    events: dict[str, float] = {}
    await asyncio.sleep(pause)
    before = dep.worker_pids()
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    events["killed"] = time.monotonic()
    await asyncio.sleep(pause)
    dep.stop_redis()
    events["redis_stopped"] = time.monotonic()
    await asyncio.sleep(pause)
    dep.start_redis()
    events["redis_started"] = time.monotonic()
    await asyncio.sleep(pause)
    (dep.corpus / new_page[0]).write_text(new_page[1])
    events["build_started"] = time.monotonic()
    build = await asyncio.to_thread(dep.build_via_api)
    events["activated"] = time.monotonic()
    await asyncio.sleep(pause)
    failed = await asyncio.to_thread(dep.failing_build, *failing)
    events["failed_build_done"] = time.monotonic()
    await asyncio.sleep(pause)
    stop.set()
    outcomes = await running
    events["end"] = time.monotonic()
    # uvicorn replaces a dead worker within its supervisor's next rounds; a loaded machine may take longer to
    # show the replacement, so it is given up to a minute before it counts as missing.
    restarted, deadline = dep.worker_pids(), time.monotonic() + 60
    while (victim in restarted or len(restarted) != len(before)) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        restarted = dep.worker_pids()
    return judge(outcomes, events, clients, build, failed, victim, before, restarted)


def judge(
    outcomes: list[Outcome],
    events: dict[str, float],
    clients: int,
    build: dict[str, Any],
    failed: subprocess.CompletedProcess[str],
    victim: int,
    before: list[int],
    after: list[int],
) -> dict[str, Any]:
    """What each fault did to the requests: errors by window, and whether each expectation held."""
    kill_window = (events["killed"], events["killed"] + 3.0)  # requests in flight then end within their latency
    in_kill = [o for o in outcomes if kill_window[0] <= o.at < kill_window[1] and o.status != 200]
    elsewhere = [o for o in outcomes if o.status != 200 and o not in in_kill]
    redis_down = [o for o in outcomes if events["redis_stopped"] <= o.at < events["redis_started"]]
    new_version = str((build.get("result") or {}).get("version", ""))
    poll_grace = 4.0
    after_swap = [o for o in outcomes if o.at >= events["activated"] + poll_grace and o.status == 200]
    after_failed = [o for o in outcomes if events["failed_build_done"] <= o.at and o.status == 200]
    checks = {
        "killed_process_only_in_flight_requests_failed": len(in_kill) <= clients
        and all(o.kind in TRANSPORT_ERRORS for o in in_kill),
        "no_other_request_failed": not elsewhere,
        "killed_process_replaced": victim not in after and len(after) == len(before),
        "caches_failed_open_while_redis_down": bool(redis_down) and all(o.status == 200 for o in redis_down),
        "new_version_built_through_the_api": build.get("state") == "succeeded" and bool(new_version),
        "every_reply_after_the_swap_names_the_new_version": bool(after_swap)
        and versions_seen(after_swap) == {new_version},
        "failed_build_failed": failed.returncode != 0,
        "failed_build_left_the_active_version_serving": bool(after_failed)
        and versions_seen(after_failed) == {new_version},
    }
    start = min(o.at - o.ms / 1000 for o in outcomes)
    return {
        "checks": checks,
        "held": all(checks.values()),
        "worker_pids": {"before": before, "after": after, "killed": victim},
        "errors_in_kill_window": dict(Counter(o.kind for o in in_kill)),
        "errors_elsewhere": dict(Counter(o.kind for o in elsewhere)),
        "requests_while_redis_down": len(redis_down),
        "events_s": {name: round(at - start, 2) for name, at in events.items()},
        "summary": summary(outcomes, events["end"] - start),
        "build": {"state": build.get("state"), "version": new_version, "error": build.get("error")},
        "failed_build_output": failed.stderr[-500:],
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {
        "workers": args.workers,
        "source": str(args.source),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load": {},
    }
    # One process on the stores N processes share, so that only the number of processes differs.
    same_stores = {"RAGLINE_VECTOR_STORE": "postgres", "RAGLINE_SEMANTIC_CACHE_STORE": "postgres"}
    with deployment(args.source, args.workers, same_stores) as dep:
        for clients in args.concurrency:
            print(f"scaleout: {clients} clients for {args.seconds:.0f} s ...", file=sys.stderr, flush=True)
            stop = asyncio.Event()
            task = asyncio.create_task(load(dep.url, dep.token, DOCS_QUESTIONS, clients, stop))
            started = time.monotonic()
            await asyncio.sleep(args.seconds)
            stop.set()
            outcomes = await task
            report["load"][str(clients)] = summary(outcomes, time.monotonic() - started)
            print(json.dumps(report["load"][str(clients)]), file=sys.stderr, flush=True)
        if args.workers < 2:  # one process: nothing to kill and keep serving
            report["cpu_seconds_per_process"] = [round(dep.cpu_seconds(p), 1) for p in dep.worker_pids()]
            return report
        print(f"scaleout: faults under {args.fault_clients} clients ...", file=sys.stderr, flush=True)
        report["faults"] = await faults(
            dep,
            DOCS_QUESTIONS,
            args.fault_clients,
            ("scaleout-added.md", "# Added during the load test\n\nThis page exists to make a new index version.\n"),
            (
                "scaleout-german.md",
                "# Weitere Hinweise\n\nDiese Seite ist auf Deutsch geschrieben.\n",
                {"RAGLINE_LANGUAGES": '["de"]'},
            ),
        )
        report["cpu_seconds_per_process"] = [round(dep.cpu_seconds(p), 1) for p in dep.worker_pids()]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--source", type=Path, default=PROJECT / "docs")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each load step")
    parser.add_argument("--fault-clients", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = asyncio.run(run(args))
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    sys.exit(0 if report.get("faults", {"held": True})["held"] else 1)


if __name__ == "__main__":
    main()
