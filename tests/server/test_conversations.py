"""Conversations: a follow-up is answered as the standalone question it asks, its turns are kept per token, and
the caches key on the standalone question; the OpenAI route reads earlier messages as the conversation."""

from __future__ import annotations

import json
import uuid

import psycopg
from fastapi.testclient import TestClient

from pipelines.text.followups import Turn, is_follow_up, standalone_by_rules
from tests.llm_loopback import loopback_llm
from tests.server.conftest import ROOT, AppFactory, ServerEnv, fresh_question

LOGS = "How long does harbor keep build logs?"


def test_follow_ups_are_detected_and_carry_the_previous_subject() -> None:
    for question in ("How do I undo that?", "And on Windows?", "Is it kept longer?", "What about the port?"):
        assert is_follow_up(question), question
    for question in ("How long does harbor keep build logs?", "Which setting makes sure that logs are kept?"):
        assert not is_follow_up(question), question
    history = [Turn("How long does harbor keep build logs?", "How long does harbor keep build logs?")]
    assert (
        standalone_by_rules("Can I change it?", history) == "Can I change it? (How long does harbor keep build logs?)"
    )
    assert standalone_by_rules("Which port does the dashboard use?", history) == "Which port does the dashboard use?"
    assert standalone_by_rules("Can I change it?", []) == "Can I change it?"


def test_a_follow_up_is_answered_in_its_conversation(client: TestClient, server_env: ServerEnv) -> None:
    first = client.post(
        "/v1/query", json={"question": fresh_question("How long does harbor keep build logs?")}, headers=ROOT
    ).json()
    conversation = first["conversation_id"]
    assert len(conversation) == 32 and first["standalone_question"].startswith("How long does harbor keep")

    alone = client.post("/v1/query", json={"question": "Which key changes that?"}, headers=ROOT).json()
    follow = client.post(
        "/v1/query", json={"question": "Which key changes that?", "conversation_id": conversation}, headers=ROOT
    ).json()
    assert follow["conversation_id"] == conversation and alone["conversation_id"] != conversation
    assert "build logs" in follow["standalone_question"] and alone["standalone_question"] == "Which key changes that?"
    assert follow["status"] == "answered" and "retention_days" in follow["answer"], follow["answer"]
    assert follow["cache"] == "miss"  # the cache keys on the standalone question: not the lone question's entry
    assert follow["timings_ms"]["standalone_question"] >= 0

    # The stream continues the same conversation, and a third turn reads the second's standalone question.
    with client.stream(
        "POST",
        "/v1/query/stream",
        json={"question": "What is its default?", "conversation_id": conversation},
        headers=ROOT,
    ) as response:
        final = json.loads([line for line in response.iter_lines() if line.startswith("data: ")][-1][6:])
    assert final["conversation_id"] == conversation and "build logs" in final["standalone_question"]
    schema = server_env.settings.postgres_schema
    with psycopg.connect(str(server_env.settings.postgres_dsn)) as conn:
        turns = conn.execute(
            f"SELECT turn, question, standalone_question FROM {schema}.conversation_turns "
            "WHERE conversation_id = %s ORDER BY turn",
            (conversation,),
        ).fetchall()
    assert [t[0] for t in turns] == [1, 2, 3] and turns[1][1] == "Which key changes that?"


def test_unknown_or_foreign_conversations_are_404(client: TestClient, server_env: ServerEnv) -> None:
    mine = client.post(
        "/v1/query", json={"question": fresh_question("Which port does the dashboard listen on?")}, headers=ROOT
    ).json()["conversation_id"]
    reader = server_env.headers(server_env.query_token)
    for headers, conversation in ((ROOT, uuid.uuid4().hex), (reader, mine)):
        body = {"question": "And the default?", "conversation_id": conversation}
        for path in ("/v1/query", "/v1/query/stream"):
            response = client.post(path, json=body, headers=headers)
            assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_conversation"
    bad = client.post("/v1/query", json={"question": "x?", "conversation_id": "../etc"}, headers=ROOT)
    assert bad.status_code == 422


def test_the_openai_route_reads_earlier_messages_as_the_conversation(client: TestClient) -> None:
    messages = [
        {"role": "user", "content": "How long does harbor keep build logs?"},
        {"role": "assistant", "content": "Harbor keeps build logs for 14 days."},
        {"role": "user", "content": "Which key changes that?"},
    ]
    reply = client.post("/v1/chat/completions", json={"model": "ragline", "messages": messages}, headers=ROOT)
    assert reply.status_code == 200, reply.text
    assert "retention_days" in reply.json()["choices"][0]["message"]["content"]


def test_the_llm_rewrite_reads_the_turns_and_falls_back_to_the_rules(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    with loopback_llm() as llm:
        overrides = {"llm_model": "openai/loopback", "llm_api_base": llm.api_base, "llm_retries": 0}
        with make_client(rate_limit_per_second=0.0, **overrides) as client:
            first = client.post("/v1/query", json={"question": fresh_question(LOGS)}, headers=ROOT).json()
            body = {
                "question": "Which key changes that?",
                "conversation_id": first["conversation_id"],
                "variants": {"follow_up_rewrite": "llm"},
            }
            rewritten = client.post("/v1/query", json=body, headers=ROOT).json()
            assert (
                rewritten["standalone_question"]
                == f"Which key changes that, asked after: {first['standalone_question'].rstrip('?')}?"
            )
            sent = llm.bodies[-1]["messages"]
            assert sent[0]["role"] == "system" and f"Q: {first['standalone_question']}\nA: " in sent[1]["content"]
            assert "14 days" in sent[1]["content"] and "Last question: Which key changes that?" in sent[1]["content"]
            assert rewritten["variants"]["follow_up_rewrite"] == "llm"
            llm.script = ["fail"]
            fallback = client.post("/v1/query", json=body, headers=ROOT).json()
            assert fallback["standalone_question"].startswith("Which key changes that? (")  # the rules' form
