"""Every reply has an id and a row in PostgreSQL; `POST /v1/feedback` keeps one rating per reply per token, and
`ragline feedback export` turns the down-rated and unanswered questions into golden-set candidates."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from ragline.cli.feedback import candidate
from tests.server.conftest import ROOT, ServerEnv, fresh_question

ANSWERABLE = "How long does harbor keep build logs?"
UNANSWERABLE = "What is the airspeed velocity of an unladen swallow?"


def stream_final(client: TestClient, question: str) -> dict[str, object]:
    with client.stream("POST", "/v1/query/stream", json={"question": question}, headers=ROOT) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return json.loads(lines[-1][len("data: ") :])


def test_replies_carry_an_id_and_feedback_is_kept_once_per_token(client: TestClient, server_env: ServerEnv) -> None:
    question = fresh_question(ANSWERABLE)
    reply = client.post("/v1/query", json={"question": question}, headers=ROOT).json()
    reply_id = reply["reply_id"]
    assert len(reply_id) == 32
    again = client.post("/v1/query", json={"question": question}, headers=ROOT).json()
    assert again["cache"] != "miss"
    assert again["reply_id"] != reply_id  # every reply its own id, cache hits too
    final = stream_final(client, fresh_question(ANSWERABLE))
    assert final["type"] == "final" and len(str(final["reply_id"])) == 32

    down = {"reply_id": reply_id, "rating": "down", "comment": "  It should say how to keep them longer.  "}
    kept = client.post("/v1/feedback", json=down, headers=ROOT)
    assert kept.status_code == 201 and kept.json() == {"reply_id": reply_id, "rating": "down", "kept": True}
    twice = client.post("/v1/feedback", json={**down, "rating": "up"}, headers=ROOT)
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "already_rated"
    reader = server_env.headers(server_env.query_token)  # the `query` scope alone may not rate
    assert client.post("/v1/feedback", json={**down, "rating": "up"}, headers=reader).status_code == 403
    rater = client.post(
        "/v1/admin/tokens", json={"name": f"rater-{reply_id[:6]}", "scopes": ["feedback"]}, headers=ROOT
    )
    rated = client.post(
        "/v1/feedback", json={**down, "rating": "up"}, headers=server_env.headers(rater.json()["token"])
    )
    assert rated.status_code == 201

    with psycopg.connect(str(server_env.settings.postgres_dsn)) as conn:
        schema = server_env.settings.postgres_schema
        row = conn.execute(
            f"SELECT r.question, r.status, r.index_version, r.citations, f.rating, f.comment, f.token_name "
            f"FROM {schema}.replies r JOIN {schema}.feedback f USING (reply_id) WHERE reply_id = %s "
            "ORDER BY f.created_at",
            (reply_id,),
        ).fetchall()
    assert [r[4] for r in row] == ["down", "up"] and row[0][5] == "It should say how to keep them longer."
    assert row[0][1] == "answered" and row[0][2] == server_env.version and row[0][3]
    assert row[1][6] == f"rater-{reply_id[:6]}"


def test_feedback_for_a_reply_that_does_not_exist_or_malformed_is_refused(client: TestClient) -> None:
    missing = client.post("/v1/feedback", json={"reply_id": uuid.uuid4().hex, "rating": "up"}, headers=ROOT)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_reply"
    for bad in (
        {"reply_id": "../../etc", "rating": "up"},
        {"reply_id": uuid.uuid4().hex, "rating": "meh"},
        {"reply_id": uuid.uuid4().hex, "rating": "up", "comment": "x" * 2001},
        {"reply_id": uuid.uuid4().hex, "rating": "up", "extra": 1},
    ):
        response = client.post("/v1/feedback", json=bad, headers=ROOT)
        assert response.status_code == 422 and "error" in response.json(), bad
    assert client.post("/v1/feedback", json={"reply_id": uuid.uuid4().hex, "rating": "up"}).status_code == 401


def test_export_writes_down_rated_and_unanswered_questions_as_golden_candidates(
    client: TestClient, server_env: ServerEnv, tmp_path: Path
) -> None:
    from pipelines.adapters.reply_log import ReplyLog

    unanswered = client.post("/v1/query", json={"question": fresh_question(UNANSWERABLE)}, headers=ROOT).json()
    assert unanswered["status"] == "no_answer"
    rated = client.post("/v1/query", json={"question": fresh_question(ANSWERABLE)}, headers=ROOT).json()
    liked = client.post("/v1/query", json={"question": fresh_question(ANSWERABLE)}, headers=ROOT).json()
    for reply, rating in ((rated, "down"), (liked, "up")):
        body = {"reply_id": reply["reply_id"], "rating": rating, "comment": "missing the retention setting"}
        assert client.post("/v1/feedback", json=body, headers=ROOT).status_code == 201
    replies: ReplyLog = client.app.state.reply_log  # type: ignore[attr-defined]
    assert replies.flush(5.0)
    rows = {row["reply_id"]: candidate(row) for row in replies.candidates(since_days=1)}
    assert unanswered["reply_id"] in rows and rated["reply_id"] in rows and liked["reply_id"] not in rows
    line = rows[rated["reply_id"]]
    assert line["question"].startswith(ANSWERABLE) and line["expected"] == "" and line["evidence"] == []
    assert line["pages"] and line["feedback"]["ratings"] == ["down"]
    assert line["feedback"]["comments"] == ["missing the retention setting"]
    assert rows[unanswered["reply_id"]]["feedback"]["reply_status"] == "no_answer"
    assert set(line) >= {"id", "question", "lang", "type", "expected", "pages", "evidence", "facts"}


def test_the_export_command_writes_the_candidates_file(
    client: TestClient, server_env: ServerEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragline.cli import main

    unanswered = client.post("/v1/query", json={"question": fresh_question(UNANSWERABLE)}, headers=ROOT).json()
    assert client.app.state.reply_log.flush(5.0)  # type: ignore[attr-defined]
    s = server_env.settings
    for name, value in {
        "RAGLINE_PROFILE": "services",
        "RAGLINE_HOME": str(s.home),
        "RAGLINE_POSTGRES_DSN": str(s.postgres_dsn),
        "RAGLINE_REDIS_URL": str(s.redis_url),
        "RAGLINE_POSTGRES_SCHEMA": s.postgres_schema,
    }.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "candidates.jsonl"
    assert main(["feedback", "export", "--out", str(out), "--days", "1"]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    mine = [line for line in lines if line["id"] == f"fb-{unanswered['reply_id'][:12]}"]
    assert len(mine) == 1 and mine[0]["question"] == unanswered["standalone_question"]
    assert mine[0]["feedback"]["reply_status"] == "no_answer"
