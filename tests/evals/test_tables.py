"""`python -m evals.tables paired-retrieval`: two `eval retrieval` reports compared question by question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.tables import main, paired_retrieval_rows


def _report(path: Path, ranks: dict[str, int | None], held_out: list[str]) -> Path:
    def block(ids: list[str]) -> dict[str, object]:
        return {"hybrid": {"evidence_ranks": {q: ranks[q] for q in ids}}}

    tuning = [q for q in ranks if q not in held_out]
    report = {"half": "all", "modes": block(list(ranks)), "halves": {"tuning": {"modes": block(tuning)}}}
    report["halves"]["held_out"] = {"modes": block(held_out)}  # type: ignore[index]
    path.write_text(json.dumps(report))
    return path


def test_paired_retrieval_counts_evidence_at_5_per_half(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", {"q1": 1, "q2": 6, "q3": None, "q4": 2}, ["q3", "q4"])
    b = _report(tmp_path / "b.json", {"q1": 1, "q2": 5, "q3": 3, "q4": 9}, ["q3", "q4"])
    rows = {r.split(" | ")[0].strip("| "): r for r in paired_retrieval_rows(a, b)}
    assert set(rows) == {"all", "tuning", "held_out"}
    assert "| 4 | 0.5000 | 0.7500 | +0.2500 |" in rows["all"]
    assert "| 2 | 0.5000 | 1.0000 | +0.5000 |" in rows["tuning"]
    assert "| 2 | 0.5000 | 0.5000 | +0.0000 |" in rows["held_out"]


def test_an_unknown_kind_or_no_report_is_a_usage_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["--help"], ["retrieval"], ["ndcg", "a.json"]):
        assert main(argv) == 2
        assert "give one of beir, paired" in capsys.readouterr().err
