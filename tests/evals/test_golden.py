from __future__ import annotations

from pathlib import Path

import pytest

from evals.golden import (
    HALVES,
    evidence_at,
    evidence_rank,
    half_of,
    halves_run,
    load_golden,
    normalise,
    page_at,
    reciprocal_rank,
    restrict_to_half,
    split_halves,
)

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


def test_the_halves_partition_every_shared_set() -> None:
    """Every question is in exactly one half, the halves keep the file's order, and the split is the
    committed hash rule (the fixture's ids fall where they always have)."""
    for path in sorted(SHARED.glob("*.jsonl")):
        questions = load_golden(path)
        halves = split_halves(questions)
        assert set(halves) == set(HALVES) == {"tuning", "held_out"}
        ids = [q.id for q in questions]
        assert sorted(q.id for h in HALVES for q in halves[h]) == sorted(ids), path.name
        assert not {q.id for q in halves["tuning"]} & {q.id for q in halves["held_out"]}, path.name
        for half in HALVES:
            assert [q.id for q in restrict_to_half(questions, half)] == [q.id for q in halves[half]]
            assert [q.id for q in halves[half]] == [i for i in ids if half_of(i) == half]  # the file's order
        assert restrict_to_half(questions, "all") == questions
        if len(questions) >= 20:  # a hash split of tens of questions leaves neither half nearly empty
            assert min(len(halves[h]) for h in HALVES) >= len(questions) // 4, path.name
    fixture = load_golden(Path(__file__).parent / "fixtures" / "harbor.jsonl")
    assert {h: [q.id for q in qs] for h, qs in split_halves(fixture).items()} == {
        "tuning": ["h-001", "h-002", "h-005"],
        "held_out": ["h-003", "h-004"],
    }
    assert halves_run("all") == HALVES and halves_run("held_out") == ("held_out",)
    with pytest.raises(ValueError, match="unknown half 'dev'"):
        restrict_to_half(fixture, "dev")
