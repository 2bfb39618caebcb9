"""The OpenAI-compatible API through the real `openai` client, against the real server on a loopback port
(the server suite's index of the harbor fixture corpus): a completion, the same one streamed, the model
list, and errors in OpenAI's shape."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.server.conftest import ROOT, ServerEnv, fresh_question, live_server

QUESTION = "Which port does the harbor dashboard listen on?"


@pytest.fixture(scope="module")
def url(server_env: ServerEnv) -> Iterator[str]:
    settings = server_env.settings.model_copy(update={"rate_limit_per_second": 0.0})
    with live_server(settings, server_env.stores) as base:
        yield base


def client(url: str, key: str = "test-token") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=120)


def test_a_completion_is_the_cited_answer_with_numbered_references(url: str) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Tell me about harbor."},
        {"role": "assistant", "content": "Harbor is a build tool."},
        {"role": "user", "content": fresh_question(QUESTION)},
    ]
    completion = client(url).chat.completions.create(model="ragline", messages=messages)  # type: ignore[arg-type]
    assert completion.object == "chat.completion" and completion.model == "ragline"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    content = choice.message.content or ""
    assert "7420" in content and "[C:" not in content
    answer, listed = content.split("\n\nSources:\n")
    assert "[1]" in answer
    extra = completion.model_extra or {}
    citations = extra["citations"]
    assert citations and citations[0]["number"] == 1
    assert citations[0]["document_id"] == "guide/config.md" and citations[0]["source_uri"].endswith("#ports")
    assert listed.splitlines()[0] == f"[1] {citations[0]['title']}: {citations[0]['source_uri']}"
    assert len(listed.splitlines()) == len(citations)
    assert extra["ragline"]["status"] == "answered" and extra["ragline"]["index"]["content_version"]


def test_the_stream_sends_the_same_text_in_chunks(url: str) -> None:
    # An answer of several sentences (a list): the chunks join them as the whole answer does.
    question = fresh_question("What does harbor sync check before it uploads anything?")
    whole = client(url).chat.completions.create(model="ragline", messages=[{"role": "user", "content": question}])
    stream = client(url).chat.completions.create(
        model="ragline", messages=[{"role": "user", "content": question}], stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert sum(1 for c in chunks if c.choices[0].delta.content) > 2
    assert text == whole.choices[0].message.content
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and all(c.choices[0].finish_reason is None for c in chunks[:-1])
    extra = last.model_extra or {}
    assert extra["citations"] == (whole.model_extra or {})["citations"]
    assert extra["ragline"]["status"] == "answered"


def test_a_no_answer_is_an_ordinary_message(url: str) -> None:
    messages = [{"role": "user", "content": fresh_question("What does the harbor billing page charge per seat?")}]
    completion = client(url).chat.completions.create(model="ragline", messages=messages)  # type: ignore[arg-type]
    extra = completion.model_extra or {}
    assert extra["ragline"]["status"] in {"no_answer", "clarify"}
    content = completion.choices[0].message.content or ""
    assert content and "Sources:" not in content and extra["citations"] == []
    streamed = client(url).chat.completions.create(model="ragline", messages=messages, stream=True)  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == content


def test_the_model_list(url: str) -> None:
    models = client(url).models.list()
    assert [m.id for m in models] == ["ragline"] and models.data[0].owned_by == "ragline"
    assert client(url).models.retrieve("ragline").id == "ragline"
    with pytest.raises(openai.NotFoundError) as missing:
        client(url).models.retrieve("gpt-4o")
    assert missing.value.code == "model_not_found"


def test_auth_errors_in_openais_shape(url: str, server_env: ServerEnv) -> None:
    with pytest.raises(openai.AuthenticationError) as wrong:
        client(url, key="not-a-token").chat.completions.create(
            model="ragline", messages=[{"role": "user", "content": QUESTION}]
        )
    body = wrong.value.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "code", "param"}
    assert body["type"] == "authentication_error" and body["code"] == "unauthorized"
    assert "not valid" in body["message"] and body["param"] is None
    with pytest.raises(openai.PermissionDeniedError):
        client(url, key=server_env.admin_token).models.list()
    assert client(url, key=server_env.query_token).models.list().data[0].id == "ragline"


def test_bad_requests_in_openais_shape(url: str, server_env: ServerEnv) -> None:
    ai = client(url)
    with pytest.raises(openai.BadRequestError) as no_user:
        ai.chat.completions.create(model="ragline", messages=[{"role": "system", "content": "Be brief."}])
    assert no_user.value.code == "invalid_request" and no_user.value.param == "messages"
    with pytest.raises(openai.BadRequestError) as empty:
        ai.chat.completions.create(model="ragline", messages=[{"role": "user", "content": "  "}], stream=True)
    assert empty.value.param == "messages.0.content"
    with pytest.raises(openai.BadRequestError) as image:
        ai.chat.completions.create(
            model="ragline",
            messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}],
        )
    assert "text" in image.value.message
    with pytest.raises(openai.NotFoundError) as model:
        ai.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert model.value.code == "model_not_found" and model.value.param == "model"
    with pytest.raises(openai.BadRequestError) as too_long:
        content = "x" * (server_env.settings.max_question_chars + 1)
        ai.chat.completions.create(model="ragline", messages=[{"role": "user", "content": content}])
    assert too_long.value.code == "question_too_long"
    # Malformed JSON bodies the SDK would not send: a missing field, a wrong role.
    missing = httpx.post(f"{url}/v1/chat/completions", json={"model": "ragline"}, headers=ROOT)
    assert missing.status_code == 400
    assert missing.json()["error"]["type"] == "invalid_request_error" and missing.json()["error"]["param"] == "messages"
    role = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "ragline", "messages": [{"role": "robot", "content": "hi"}]},
        headers=ROOT,
    )
    assert role.status_code == 400 and role.json()["error"]["param"] == "messages.0.role"
    # ragline's own routes keep ragline's shape.
    assert set(httpx.post(f"{url}/v1/query", json={}, headers=ROOT).json()["error"]) == {"code", "message"}


def test_rate_limit_is_a_rate_limit_error(server_env: ServerEnv) -> None:
    settings = server_env.settings.model_copy(update={"rate_limit_per_second": 0.5, "rate_limit_burst": 1})
    with live_server(settings, server_env.stores) as base:
        ai = client(base, key=server_env.query_token)
        ai.models.list()
        with pytest.raises(openai.RateLimitError) as limited:
            ai.models.list()
    assert limited.value.code == "rate_limited" and limited.value.response.headers["retry-after"]
