from __future__ import annotations

from pathlib import Path

from evals.golden import evidence_at, evidence_rank, load_golden, normalise, page_at, reciprocal_rank

SHARED = Path(__file__).resolve().parents[3] / "shared" / "golden"


def test_normalise_follows_the_readme_rule() -> None:
    assert normalise("Use `Depends`  and\n**yield**") == "use depends and yield"


def test_last_evidence_string_decides_the_rank() -> None:
    texts = ["nothing here", "first PART is here", "x", "and the Second part"]
    assert evidence_rank(["first part", "second part"], texts) == 4
    assert evidence_at(["first part", "second part"], texts, 5)
    assert not evidence_at(["first part", "second part"], texts, 3)
    assert reciprocal_rank(["first part"], texts) == 0.5
    assert page_at(["b.md"], ["a.md", "b.md"], 2) and not page_at(["b.md"], ["a.md", "b.md"], 1)


def test_shared_golden_sets_load() -> None:
    questions = load_golden(SHARED / "fastapi_en.jsonl")
    assert len(questions) == 43
    assert {q.expected for q in questions} == {"answer", "abstain", "clarify"}
    assert all(q.evidence for q in questions if q.expected == "answer")
