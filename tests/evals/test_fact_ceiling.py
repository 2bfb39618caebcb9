"""The fact ceiling: a fact counts only when its page has it as written; pages outside the source count nothing."""

from __future__ import annotations

from pathlib import Path

from evals.golden import GoldenQuestion
from evals.studies.fact_ceiling import ceiling, facts_on_pages


def test_only_facts_written_on_the_page_count(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("The limit is **500** bytes by default.\n\nIt uses `minimum_size`.\n")
    (tmp_path.parent / "secret.md").write_text("declare it before the other one\n")
    q = GoldenQuestion(
        "x-1", "?", pages=["docs/a.md"], facts=["minimum_size", "500 bytes", "declare it before the other one"]
    )
    assert facts_on_pages(q, tmp_path) == 2 / 3  # markup is normalised away; a paraphrase is not on the page
    escaping = GoldenQuestion("x-2", "?", pages=["../secret.md"], facts=["declare it before the other one"])
    assert facts_on_pages(escaping, tmp_path) == 0.0
    assert facts_on_pages(GoldenQuestion("x-3", "?", expected="abstain"), tmp_path) is None
    report = ceiling([q, escaping], tmp_path)
    assert report["all"] == {"n": 2, "ceiling": round((2 / 3) / 2, 4)} and report["below_one"] == ["x-1", "x-2"]
