"""The XQuAD site for the language-route check: translated pages at the original's path, same anchors."""

from __future__ import annotations

import re
from pathlib import Path

from evals.xquad_lanes import write_site

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
