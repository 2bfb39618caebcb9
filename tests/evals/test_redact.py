from __future__ import annotations

from evals.redact import MARK, redact


def test_answers_are_replaced_by_their_length_and_scores_kept() -> None:
    data = {"overall": {"citation_validity": 1.0}, "questions": [{"id": "q1", "answer": "Copied text [C:a-1]."}]}
    assert redact(data) == 1
    assert data["questions"][0]["answer"] == f"<20 characters, {MARK}>"
    assert data["overall"] == {"citation_validity": 1.0}
    assert redact(data) == 0  # idempotent


def test_a_judged_answers_claims_and_quotes_go_too_and_the_verdicts_stay() -> None:
    claim = {"statement": 1, "claim": "Port 7420.", "chunk_id": "a-1", "quote": "port 7420", "supported": True}
    fact = {"fact": "7420", "stated": True, "quote": "7420", "verified": True}
    data = {"questions": [{"id": "q1", "answer": "Port 7420 [C:a-1].", "judge": {"claims": [claim], "facts": [fact]}}]}
    redact(data)
    judged = data["questions"][0]["judge"]
    assert judged["claims"][0] == {**claim, "claim": f"<10 characters, {MARK}>", "quote": f"<9 characters, {MARK}>"}
    assert judged["facts"][0]["quote"] == f"<4 characters, {MARK}>" and judged["facts"][0]["verified"] is True
