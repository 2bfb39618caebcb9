"""The provider harness every litellm call goes through: retries with jittered backoff, a circuit
breaker per provider, one deadline shared by all attempts, and a fallback provider.

A stream is retried only until its first token: once text has reached the caller it cannot be
taken back, so a stream that breaks later fails the request (`GenerationUnavailable`). Closing the
iterator (a client that disconnected) closes the provider's response: no tokens are paid for after.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import structlog

from pipelines.deadline import DeadlinePassed, check_deadline, remaining_seconds

if TYPE_CHECKING:
    from pipelines.settings import Settings

log = structlog.get_logger(__name__)


# How a provider is told the JSON schema a reply must follow (`RAGLINE_LLM_STRUCTURED_OUTPUT`).
StructuredOutput = Literal["json_schema", "json_object"]


def structured_output(setting: str) -> StructuredOutput:
    """The form of `RAGLINE_LLM_STRUCTURED_OUTPUT` (`json_schema` unless it says `json_object`)."""
    return "json_object" if setting == "json_object" else "json_schema"


def response_format(schema: dict[str, Any], form: StructuredOutput, name: str = "cited_answer") -> dict[str, Any]:
    """The request's `response_format`: OpenAI's `json_schema` (OpenAI, vLLM, llama.cpp's llama-server, and
    the providers litellm translates it for), or `json_object` with a `schema`, the form llama-cpp-python's
    server reads (it refuses `json_schema`)."""
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


class GenerationUnavailable(RuntimeError):
    """Every provider failed (after retries, the breaker and the fallback): a 503 `generation_unavailable`."""


def request_key(api_key: str | None, api_base: str | None) -> str | None:
    """The key to send: a server at an `api_base` that wants none gets the placeholder `none` (litellm's
    OpenAI client sends no request without a key); a hosted provider without one reads its own variable
    (`OPENAI_API_KEY`), so it is sent none."""
    return api_key or ("none" if api_base else None)


@dataclass(frozen=True)
class Provider:
    model: str  # litellm id, e.g. "openai/qwen2.5-coder" for an OpenAI-compatible server
    api_base: str | None = None
    api_key: str | None = None
    role: str = "primary"  # or "fallback"

    @property
    def name(self) -> str:
        return f"{self.model}@{self.api_base}" if self.api_base else self.model


class CircuitBreaker:
    """Opens after `failures` consecutive failures; after `reset_seconds` lets one trial call through."""

    def __init__(self, failures: int, reset_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.failures, self.reset_seconds, self._clock = failures, reset_seconds, clock
        self._count, self._opened_at = 0, None  # type: int, float | None
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            return "half_open" if self._clock() - self._opened_at >= self.reset_seconds else "open"

    def allow(self) -> bool:
        return self.state != "open"

    def success(self) -> None:
        with self._lock:
            self._count, self._opened_at = 0, None

    def failure(self) -> None:
        with self._lock:
            self._count += 1
            if self._count >= self.failures:
                self._opened_at = self._clock()


@dataclass
class Completion:
    text: str
    provider: Provider
    attempts: list[dict[str, Any]]


@dataclass
class TokenStream:
    """Iterate for text deltas; `provider` and `attempts` are known once the first token arrived."""

    _tokens: Iterator[str]
    provider: Provider | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def __iter__(self) -> Iterator[str]:
        return self._tokens

    def close(self) -> None:
        close = getattr(self._tokens, "close", None)
        if close is not None:
            close()


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else importing waits on the network
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LLMHarness:
    def __init__(
        self,
        providers: list[Provider],
        retries: int = 2,
        backoff_seconds: float = 0.25,
        deadline_seconds: float = 30.0,
        breaker_failures: int = 3,
        breaker_reset_seconds: float = 30.0,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
    ) -> None:
        if not providers:
            raise ValueError("the LLM harness needs at least one provider")
        self.providers, self.retries, self.backoff = providers, retries, backoff_seconds
        self.deadline_seconds, self.temperature, self.max_tokens = deadline_seconds, temperature, max_tokens
        self.breakers = {p.name: CircuitBreaker(breaker_failures, breaker_reset_seconds) for p in providers}
        self._random = random.Random(seed)

    @classmethod
    def from_settings(cls, s: Settings) -> LLMHarness:
        """The generator's model (`RAGLINE_LLM_*`), then the fallback's when one is set."""
        providers = [Provider(s.llm_model, s.llm_api_base, s.llm_api_key, "primary")]
        if s.llm_fallback_model:
            providers.append(
                Provider(s.llm_fallback_model, s.llm_fallback_api_base, s.llm_fallback_api_key, "fallback")
            )
        return cls(
            providers,
            retries=s.llm_retries,
            backoff_seconds=s.llm_backoff_seconds,
            deadline_seconds=s.llm_deadline_seconds,
            breaker_failures=s.llm_breaker_failures,
            breaker_reset_seconds=s.llm_breaker_reset_seconds,
            max_tokens=s.answer_max_tokens,
        )

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with full-range jitter (0.5x..1.5x), so retries of many requests spread out."""
        return self.backoff * (2**attempt) * self._random.uniform(0.5, 1.5)

    def stream(
        self,
        messages: list[dict[str, str]],
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> TokenStream:
        """`response_format`: passed to the provider as is (a JSON schema that constrains the reply)."""
        out = TokenStream(iter(()))
        out._tokens = self._tokens(messages, max_tokens or self.max_tokens, out, response_format)
        return out

    def complete(self, messages: list[dict[str, str]], max_tokens: int | None = None) -> Completion:
        stream = self.stream(messages, max_tokens)
        text = "".join(stream)
        assert stream.provider is not None
        return Completion(text, stream.provider, stream.attempts)

    def _tokens(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        out: TokenStream,
        response_format: dict[str, Any] | None = None,
    ) -> Iterator[str]:
        litellm = _litellm()
        extra = {"response_format": response_format} if response_format is not None else {}
        # The harness's own deadline, cut to what is left of the request's (pipelines/deadline.py): a request
        # that times out stops its model call too.
        budget = self.deadline_seconds
        request_left = remaining_seconds()
        if request_left is not None and request_left < budget:
            budget = request_left
        deadline = time.monotonic() + budget
        errors: list[str] = []
        for provider in self.providers:
            breaker = self.breakers[provider.name]
            for attempt in range(self.retries + 1):
                if not breaker.allow():
                    out.attempts.append({"provider": provider.name, "role": provider.role, "outcome": "circuit_open"})
                    errors.append(f"{provider.name}: circuit open")
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    check_deadline("the language model's answer")
                    raise GenerationUnavailable(f"deadline of {self.deadline_seconds}s passed; " + "; ".join(errors))
                started = False
                response = None
                try:
                    response = litellm.completion(
                        model=provider.model,
                        messages=messages,
                        api_base=provider.api_base,
                        api_key=request_key(provider.api_key, provider.api_base),
                        stream=True,
                        timeout=remaining,
                        max_tokens=max_tokens,
                        temperature=self.temperature,
                        num_retries=0,
                        **extra,
                    )
                    for chunk in response:
                        if time.monotonic() > deadline:
                            check_deadline("the rest of the language model's answer")
                            raise TimeoutError(f"deadline of {self.deadline_seconds}s passed mid-stream")
                        delta = chunk.choices[0].delta.content if chunk.choices else None
                        if delta:
                            if not started:
                                started, out.provider = True, provider
                                out.attempts.append({"provider": provider.name, "role": provider.role, "outcome": "ok"})
                            yield delta
                    if not started:
                        raise RuntimeError("the provider returned no text")
                    breaker.success()
                    return
                except (GeneratorExit, DeadlinePassed):  # the caller closed the stream, or the request's time is
                    _close(response)  # up: stop the provider's response too, and retry nothing
                    raise
                except Exception as exc:
                    _close(response)
                    breaker.failure()
                    reason = f"{type(exc).__name__}: {str(exc)[:200]}"
                    errors.append(f"{provider.name}: {reason}")
                    log.warning("llm_attempt_failed", provider=provider.name, attempt=attempt, error=reason)
                    if started:
                        out.attempts[-1]["outcome"] = "broke_mid_stream"
                        raise GenerationUnavailable(f"{provider.name} failed mid-answer: {reason}") from exc
                    out.attempts.append({"provider": provider.name, "role": provider.role, "outcome": reason})
                    if attempt < self.retries:
                        time.sleep(max(0.0, min(self._delay(attempt), deadline - time.monotonic())))
        raise GenerationUnavailable("every provider failed: " + "; ".join(errors))


def _close(response: Any) -> None:
    """Close a provider response (its HTTP connection), if it has one."""
    close = getattr(response, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # closing a broken response may fail again; nothing more to do
            log.debug("llm_response_close_failed", error=str(exc))
