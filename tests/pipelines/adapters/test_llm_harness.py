"""The provider harness against a real OpenAI-compatible HTTP server on loopback (tests/llm_loopback.py:
a real server speaking chat completions with SSE streaming; its completions come from a deterministic
procedure, not a model). Retries, breaker, deadline and fallback run through litellm for real."""

from __future__ import annotations

import json
import time

import pytest

from pipelines.adapters.llm_harness import CircuitBreaker, GenerationUnavailable, LLMHarness, Provider
from tests.llm_loopback import closed_port, loopback_llm

MESSAGES = [
    {
        "role": "user",
        "content": "Passages:\n\n[1] Ports\nThe dashboard listens on port 7420 by default.\n\n"
        "Question: Which port does the dashboard listen on?",
    }
]


def harness(*providers: Provider, **kwargs: float) -> LLMHarness:
    options = {"retries": 2, "backoff_seconds": 0.01, "deadline_seconds": 10.0, "breaker_failures": 3}
    options.update(kwargs)
    return LLMHarness(list(providers), seed=7, **options)  # type: ignore[arg-type]


def test_streams_tokens_from_a_real_server() -> None:
    with loopback_llm() as llm:
        stream = harness(Provider("openai/loopback", llm.api_base)).stream(MESSAGES)
        tokens = list(stream)
    assert len(tokens) > 3, "the answer arrives as several SSE deltas"
    assert json.loads("".join(tokens)) == {
        "kind": "answer",
        "sentences": [{"text": "The dashboard listens on port 7420 by default.", "sources": [1]}],
    }
    assert stream.provider is not None and stream.provider.role == "primary"


def test_the_response_format_reaches_the_provider_as_given() -> None:
    schema = {"type": "json_object", "schema": {"type": "object", "properties": {"kind": {"enum": ["answer"]}}}}
    with loopback_llm() as llm:
        list(harness(Provider("openai/loopback", llm.api_base)).stream(MESSAGES, response_format=schema))
        list(harness(Provider("openai/loopback", llm.api_base)).stream(MESSAGES))
    assert llm.bodies[0]["response_format"] == schema and "response_format" not in llm.bodies[1]


def test_a_provider_without_a_key_of_ours_uses_its_own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with loopback_llm() as llm:
        list(harness(Provider("openai/loopback", llm.api_base)).stream(MESSAGES))  # a local server: no key
        # A hosted provider: litellm finds both its address and its key in the provider's own variables.
        monkeypatch.setenv("OPENAI_BASE_URL", llm.api_base)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
        list(harness(Provider("openai/loopback")).stream(MESSAGES))
    assert llm.authorizations == ["Bearer none", "Bearer sk-from-the-environment"]


def test_retries_a_failing_provider_then_succeeds() -> None:
    with loopback_llm() as llm:
        llm.script = ["fail", "fail"]
        done = harness(Provider("openai/loopback", llm.api_base)).complete(MESSAGES)
    assert "7420" in done.text and llm.requests == 3
    assert [a["outcome"] for a in done.attempts][-1] == "ok" and len(done.attempts) == 3


def test_fallback_is_used_and_reported_when_the_primary_is_down() -> None:
    with loopback_llm() as fallback:
        primary = Provider("openai/loopback", f"http://127.0.0.1:{closed_port()}/v1")
        done = harness(primary, Provider("openai/backup", fallback.api_base, role="fallback")).complete(MESSAGES)
    assert done.provider.role == "fallback" and "7420" in done.text
    assert sum(a["provider"] == primary.name for a in done.attempts) == 3  # 1 try + 2 retries


def test_every_provider_down_is_a_clear_failure() -> None:
    dead = Provider("openai/loopback", f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(GenerationUnavailable, match="every provider failed"):
        harness(dead, retries=1).complete(MESSAGES)


def test_breaker_opens_and_skips_the_provider() -> None:
    with loopback_llm() as llm:
        llm.script = ["fail"] * 3
        h = harness(Provider("openai/loopback", llm.api_base), retries=5, breaker_failures=3)
        with pytest.raises(GenerationUnavailable, match="circuit open"):
            h.complete(MESSAGES)
        assert llm.requests == 3, "after 3 failures the open circuit stops further calls"
        with pytest.raises(GenerationUnavailable, match="circuit open"):
            h.complete(MESSAGES)
        assert llm.requests == 3


def test_breaker_half_opens_after_the_reset_time() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=2, reset_seconds=10, clock=lambda: now[0])
    breaker.failure()
    assert breaker.state == "closed"
    breaker.failure()
    assert breaker.state == "open" and not breaker.allow()
    now[0] = 10.0
    assert breaker.state == "half_open" and breaker.allow()
    breaker.success()
    assert breaker.state == "closed"


def test_one_deadline_covers_every_attempt() -> None:
    with loopback_llm() as llm:
        llm.script = ["hang"] * 5  # each call would take 5 s
        started = time.monotonic()
        with pytest.raises(GenerationUnavailable):
            harness(Provider("openai/loopback", llm.api_base), deadline_seconds=1.5, retries=4).complete(MESSAGES)
        elapsed = time.monotonic() - started
    assert elapsed < 4.0, f"the shared deadline stops retrying, took {elapsed:.1f}s"


def test_a_stream_broken_mid_answer_is_not_retried() -> None:
    with loopback_llm() as llm:
        llm.script = ["break"]
        with pytest.raises(GenerationUnavailable, match="mid-answer"):
            harness(Provider("openai/loopback", llm.api_base)).complete(MESSAGES)
        assert llm.requests == 1, "text already sent cannot be taken back, so no retry"


def test_closing_the_stream_stops_the_provider() -> None:
    with loopback_llm(token_delay=0.05) as llm:
        stream = harness(Provider("openai/loopback", llm.api_base)).stream(MESSAGES)
        iterator = iter(stream)
        next(iterator)
        stream.close()
        assert llm.disconnected.wait(5), "the server saw the client go away"
        assert llm.tokens_sent < 8


def test_the_requests_deadline_cuts_the_harness_short_and_is_not_retried() -> None:
    """The harness would wait 10 s and retry; a request with 1 s left stops it within about that second."""
    from pipelines.deadline import DeadlinePassed, deadline_in

    with loopback_llm() as llm:
        llm.script = ["hang"] * 5
        started = time.monotonic()
        with deadline_in(1.0), pytest.raises(DeadlinePassed, match="language model"):
            harness(Provider("openai/loopback", llm.api_base), deadline_seconds=10.0, retries=4).complete(MESSAGES)
        elapsed = time.monotonic() - started
        assert elapsed < 2.5, f"took {elapsed:.1f} s"
        assert llm.requests == 1
