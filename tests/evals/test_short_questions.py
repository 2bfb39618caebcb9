"""The short-question sets (evals/data/short_questions*.jsonl): search-box questions on the held-out corpora, each
answer question's evidence on the page it names as a reader sees it (roles as Sphinx shows them, built HTML as its
visible text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.golden_sets import normalise
from pipelines.settings import PROJECT_ROOT
from tests.evals.test_heldout_golden import ROLE, page_text

SETS = sorted((PROJECT_ROOT / "evals" / "data").glob("short_questions*.jsonl"))
CORPORA = PROJECT_ROOT / "evals" / "corpora"
FIELDS = {"id", "question", "lang", "type", "expected", "corpus", "pages", "evidence", "facts"}


def test_there_are_short_question_sets() -> None:
    assert len(SETS) >= 3, SETS


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_each_question_is_well_formed_and_its_evidence_is_on_its_page(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert set(row) == FIELDS, row["id"]
        assert row["expected"] in {"answer", "clarify", "abstain"}, row["id"]
        docs = CORPORA / row["corpus"] / "docs"
        assert docs.is_dir(), row["id"]
        if row["expected"] != "answer":
            assert row["pages"] == [] and row["evidence"] == [], row["id"]
            continue
        assert row["pages"] and row["evidence"], row["id"]
        shown = [normalise(page_text(docs / page)) for page in row["pages"]]
        for evidence in row["evidence"]:
            assert not ROLE.search(evidence), (row["id"], evidence)
            wanted = normalise(evidence)
            assert any(wanted in text for text in shown), (row["id"], evidence)
