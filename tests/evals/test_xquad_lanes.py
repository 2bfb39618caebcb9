"""The XQuAD site for the language-route check: translated pages at the original's path, same anchors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evals.studies.xquad_lanes import write_site

XQUAD = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "xquad"


def test_xquad_pages_are_translations_at_the_same_path_with_the_same_anchors(tmp_path: Path) -> None:
    questions = write_site(XQUAD, ["en", "es", "zh"], tmp_path)
    pages = {lang: sorted(p.name for p in (tmp_path / lang).glob("*.md")) for lang in ("en", "es", "zh")}
    assert len(pages["en"]) == 48 and pages["es"] == pages["en"] == pages["zh"]
    for name in pages["en"]:
        found = {lang: re.findall(r"\{ #(p-\d+) \}", (tmp_path / lang / name).read_text()) for lang in pages}
        assert found["es"] == found["en"] == found["zh"] and found["en"]
    assert {lang: len(rows) for lang, rows in questions.items()} == {"en": 240, "es": 240, "zh": 240}
    first = questions["es"][0]
    text = (tmp_path / "es" / first["page"]).read_text()
    assert first["answer"] in text and f"{{ #{first['anchor']} }}" in text
    english = (tmp_path / "en" / first["page"]).read_text()
    assert first["source_answer"] in english


def test_questions_keep_their_xquad_id_in_every_language(tmp_path: Path) -> None:
    questions = write_site(XQUAD, ["en", "es", "zh"], tmp_path)
    ids = {lang: [q["id"] for q in rows] for lang, rows in questions.items()}
    assert ids["es"] == ids["zh"] == ids["en"] and len(set(ids["en"])) == 240


def test_two_lane_runs_compare_question_by_question(tmp_path: Path) -> None:
    from evals.tables import paired_lane_rows

    def run(own: list[int]) -> Path:
        per = {f"q{i}": {"own@5": o, "original@5": 1} for i, o in enumerate(own)}
        report = {"routes": {"question_and_source": {"zh": {"n": len(own), "per_question": per}}}}
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(report))
        return path

    before, after = run([1] * 20), run([1] * 14 + [0] * 6)
    own, original = paired_lane_rows(before, after)
    cells = [c.strip() for c in own.strip("|").split("|")]
    assert cells[:6] == ["zh", "own@5", "20", "1.0000", "0.7000", "-0.3000"]
    assert float(cells[7]) == pytest.approx(2 / 2**6, rel=0.01)  # six losses, no wins: exact two-sided sign test
    assert original.split("|")[6].strip() == "+0.0000"
    with pytest.raises(ValueError, match="per-question"):
        legacy = tmp_path / "legacy.json"
        legacy.write_text(json.dumps({"routes": {"question_and_source": {"zh": {"n": 1}}}}))
        paired_lane_rows(legacy, after)
