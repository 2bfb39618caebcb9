"""Content gaps: the questions the docs fail, grouped by meaning, from the replies the server really gave."""

from __future__ import annotations

import uuid

import numpy as np

from server.gaps import group_by_meaning
from tests.server.conftest import ROOT, AppFactory, ServerEnv


def test_grouping_joins_near_rows_and_keeps_far_ones_apart() -> None:
    rows = np.array([[1.0, 0.0, 0.0], [0.96, 0.28, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.28, 0.96, 0.0]])
    assert group_by_meaning(rows, 0.9) == [[0, 1], [2, 4], [3]]
    assert group_by_meaning(rows, 0.99) == [[0], [1], [2], [3], [4]]


def test_gaps_group_unanswered_and_down_rated_questions(make_client: AppFactory, server_env: ServerEnv) -> None:
    tag = uuid.uuid4().hex[:6]
    unanswered = [
        f"How do I configure the harbor garbage collector schedule? ({tag})",
        f"How can I configure the harbor garbage collector schedule? ({tag})",
        f"What is the airspeed velocity of an unladen swallow? ({tag})",
    ]
    with make_client(rate_limit_per_second=0.0, rate_limit_per_address_per_second=0.0) as client:
        statuses = [client.post("/v1/query", json={"question": q}, headers=ROOT).json()["status"] for q in unanswered]
        assert statuses == ["no_answer", "no_answer", "no_answer"], statuses
        answered = client.post(
            "/v1/query", json={"question": f"Which port does the harbor dashboard listen on? ({tag})"}, headers=ROOT
        ).json()
        assert answered["status"] == "answered"
        rated = client.post("/v1/feedback", json={"reply_id": answered["reply_id"], "rating": "down"}, headers=ROOT)
        assert rated.status_code == 201
        assert client.app.state.reply_log.flush(5.0)  # type: ignore[attr-defined]

        report = client.get("/v1/admin/gaps?hours=1", headers=ROOT)
        assert report.status_code == 200, report.text
        # Other tests' questions in the same window may join these groups: a group is ours if a wording is.
        groups = [g for g in report.json()["groups"] if any(tag in q for q in [g["question"], *g["other_wordings"]])]
        garbage = [g for g in groups if "garbage collector" in g["question"]]
        assert len(garbage) == 1 and garbage[0]["count"] == 2 and garbage[0]["reasons"] == {"no_answer": 2}, garbage
        assert garbage[0]["other_wordings"] and tag in garbage[0]["other_wordings"][0]
        port = [g for g in groups if "dashboard" in g["question"]]
        assert len(port) == 1 and port[0]["reasons"]["rated_down"] == 1 and port[0]["pages"]
        assert any("swallow" in g["question"] for g in groups)
        counts = [g["count"] for g in report.json()["groups"]]
        assert counts == sorted(counts, reverse=True)  # largest first

        reader = server_env.headers(server_env.query_token)
        assert client.get("/v1/admin/gaps", headers=reader).status_code == 403
        assert client.get("/v1/admin/gaps?hours=0", headers=ROOT).status_code == 422
        metrics = client.get("/metrics").text
        assert 'ragline_feedback_total{rating="down"}' in metrics
