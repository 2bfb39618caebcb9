from __future__ import annotations

from evals.redact import MARK, redact


def test_answers_are_replaced_by_their_length_and_scores_kept() -> None:
    data = {"overall": {"citation_validity": 1.0}, "questions": [{"id": "q1", "answer": "Copied text [C:a-1]."}]}
    assert redact(data) == 1
    assert data["questions"][0]["answer"] == f"<20 characters, {MARK}>"
    assert data["overall"] == {"citation_validity": 1.0}
    assert redact(data) == 0  # idempotent
