"""Bounded cost per client: the rate limit by address (before the token is checked), the caps on open streams
(in all and per token), and the request timeout that ends the work, not only the response."""

from __future__ import annotations

import time

import httpx

from server.tokens import RateLimiter, StreamSlots, token_digest
from tests.llm_loopback import loopback_llm
from tests.server.conftest import ROOT, AppFactory, ServerEnv, fresh_question, live_server

QUESTION = "Which port does the harbor dashboard listen on?"


def test_the_address_limit_counts_requests_before_their_token_is_checked(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    with make_client(rate_limit_per_second=0.0, rate_limit_per_address_per_second=0.5, rate_limit_address_burst=3) as c:
        guesses = [
            c.post("/v1/query", json={"question": QUESTION}, headers={"Authorization": f"Bearer guess-{i}"})
            for i in range(3)
        ]
        assert [g.status_code for g in guesses] == [401, 401, 401]
        # Three bad tokens spent the address's burst: a good token from the same address now waits too.
        limited = c.post("/v1/query", json={"question": QUESTION}, headers=ROOT)
        assert limited.status_code == 429, limited.text
        assert limited.json()["error"]["code"] == "rate_limited" and "address" in limited.json()["error"]["message"]
        assert 1 <= int(limited.headers["retry-after"]) <= 2
        # The unauthenticated routes stay open (health checks come from one address).
        assert c.get("/healthz").status_code == 200


def test_rate_limit_buckets_are_bounded() -> None:
    limiter = RateLimiter(rate=1.0, burst=1, max_keys=100)
    for i in range(10_000):
        assert limiter.take(f"10.0.{i // 256}.{i % 256}", now=0.0) == 0.0
    assert len(limiter) == 100
    assert limiter.take("10.0.39.15", now=0.0) > 0  # among the most recent: still limited


def test_stream_slots_cap_streams_in_all_and_per_token() -> None:
    slots = StreamSlots(total=3, per_token=2)
    assert slots.open("a") is None and slots.open("a") is None
    assert "max_streams_per_token" in (slots.open("a") or "")
    assert slots.open("b") is None
    assert "max_streams" in (slots.open("c") or "")
    slots.close("a")
    assert slots.open("c") is None and slots.held() == 3 and slots.held("a") == 1


def test_a_token_past_its_stream_cap_gets_429_and_a_finished_stream_frees_its_slot(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    body = {"question": QUESTION}
    reader = server_env.headers(server_env.query_token)
    with make_client(rate_limit_per_second=0.0, max_streams_per_token=1, max_streams=2) as client:
        slots: StreamSlots = client.app.state.stream_slots  # type: ignore[attr-defined]
        for _ in range(3):  # each stream ends and gives its slot back
            assert client.post("/v1/query/stream", json=body, headers=ROOT).status_code == 200
        assert slots.held() == 0
        slots.open(token_digest("test-token"))  # a stream of the root token still open
        refused = client.post("/v1/query/stream", json=body, headers=ROOT)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_streams"
        chat = {"model": "ragline", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
        assert client.post("/v1/chat/completions", json=chat, headers=ROOT).status_code == 429
        assert client.post("/v1/query", json=body, headers=ROOT).status_code == 200  # not a stream: not capped
        assert client.post("/v1/query/stream", json=body, headers=reader).status_code == 200  # another token
        slots.open("someone-else")  # the process's two slots are now taken
        assert client.post("/v1/query/stream", json=body, headers=reader).status_code == 429
        # A stream refused before its first event (a bad variant) holds no slot either.
        slots.close("someone-else")
        bad = client.post("/v1/query/stream", json={**body, "variants": {"rerank": "psychic"}}, headers=reader)
        assert bad.status_code == 400 and slots.held(token_digest(server_env.query_token)) == 0


def test_a_request_past_its_timeout_stops_its_model_call_and_stores_nothing(server_env: ServerEnv) -> None:
    """The model hangs for 5 s; the request's 1 s timeout ends it with a 504, the harness does not retry, and
    nothing is cached: the same question asked again still runs the graph."""
    import litellm  # loads in seconds: loaded before any clock starts

    assert litellm.completion is not None
    with loopback_llm() as llm:
        settings = server_env.settings.model_copy(
            update={
                "llm_model": "openai/loopback",
                "llm_api_base": llm.api_base,
                "llm_deadline_seconds": 30.0,
                "llm_retries": 3,
                "request_timeout_seconds": 1.0,
                "rate_limit_per_second": 0.0,
            }
        )
        question = fresh_question(QUESTION)
        body = {"question": question, "variants": {"generator": "litellm"}}
        with live_server(settings, server_env.stores) as url:
            warm = {"question": fresh_question(QUESTION), "variants": {"generator": "litellm"}}
            assert httpx.post(f"{url}/v1/query", json=warm, headers=ROOT, timeout=30).status_code == 200
            llm.script, llm.requests = ["hang"] * 4, 0  # litellm is loaded: the timeout is all the model's
            started = time.monotonic()
            timed_out = httpx.post(f"{url}/v1/query", json=body, headers=ROOT, timeout=30)
            elapsed = time.monotonic() - started
            assert timed_out.status_code == 504, timed_out.text
            assert timed_out.json()["error"]["code"] == "request_timeout"
            assert elapsed < 3.0, f"the response waited {elapsed:.1f} s"
            assert llm.requests == 1, "no retry after the request's time ran out"
            assert llm.disconnected.wait(10), "the model call kept going after the timeout"
            llm.script = []
            again = httpx.post(f"{url}/v1/query", json=body, headers=ROOT, timeout=30)
            assert again.status_code == 200 and again.json()["cache"] == "miss", again.text
            streamed = httpx.post(
                f"{url}/v1/query/stream", json={"question": fresh_question(QUESTION)}, headers=ROOT, timeout=30
            )
            assert streamed.status_code == 200


def test_a_timeout_of_zero_turns_it_off_and_an_expired_one_runs_no_node(make_client: AppFactory) -> None:
    with make_client(rate_limit_per_second=0.0, request_timeout_seconds=1e-9) as client:
        expired = client.post("/v1/query", json={"question": fresh_question(QUESTION)}, headers=ROOT)
        assert expired.status_code == 504 and "before" in expired.json()["error"]["message"]
    with make_client(rate_limit_per_second=0.0, request_timeout_seconds=0.0) as client:
        assert client.post("/v1/query", json={"question": fresh_question(QUESTION)}, headers=ROOT).status_code == 200


def test_a_redis_rate_limit_is_one_bucket_for_every_server_process(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    """Two server apps (as two processes would) with `rate_limit_store=redis`: a token's requests spend from one
    bucket whichever app takes them, and so do an address's."""
    limits = {"rate_limit_store": "redis", "rate_limit_per_second": 0.2, "rate_limit_burst": 2}
    limits |= {"rate_limit_per_address_per_second": 100.0, "cache_prefix": f"shared-{time.time_ns()}"}
    reader = server_env.headers(server_env.query_token)
    with make_client(**limits) as first, make_client(**limits) as second:
        codes = [app.get("/v1/models", headers=reader).status_code for app in (first, second, first, second)]
        assert codes == [200, 200, 429, 429]
        assert second.get("/v1/models", headers=ROOT).status_code == 200  # another token, another bucket
    per_address = {**limits, "rate_limit_per_second": 0.0, "rate_limit_per_address_per_second": 0.2}
    per_address["rate_limit_address_burst"] = 2
    per_address["cache_prefix"] = f"shared-{time.time_ns()}"
    with make_client(**per_address) as first, make_client(**per_address) as second:
        codes = [app.get("/v1/models", headers=ROOT).status_code for app in (first, second, first)]
    assert codes == [200, 200, 429]


def test_a_rate_limit_whose_redis_is_down_limits_in_process() -> None:
    from pipelines.adapters.redis_rate_limit import RedisTokenBuckets

    limiter = RateLimiter(rate=0.5, burst=2)
    limiter.share(RedisTokenBuckets("redis://127.0.0.1:1/0", "down"))
    now = time.monotonic()
    assert [limiter.take("token", now) > 0 for _ in range(3)] == [False, False, True]
