"""The off-topic study on a small corpus, with the packaged embedder: what it counts and how it splits short queries."""

from __future__ import annotations

import json
from pathlib import Path

from evals.studies.topic_reference import main, pairs_from_short

PAGES = {
    "install.md": "# Installing harbor\n\nRun `pip install harbor` to install the harbor build cache. It needs Python "
    "3.11 and a writable cache folder.\n",
    "config.md": "# Configuration\n\nThe `retention_days` setting decides how long harbor keeps build logs. The "
    "default is 30 days; set it to 0 to keep logs forever.\n",
    "upload.md": "# Uploads\n\nharbor retries a failed upload three times before it gives up and reports the error "
    "with the artifact's name.\n",
}
QUESTIONS = [
    {"id": "h-1", "question": "How long does harbor keep build logs by default?", "type": "single-fact",
     "expected": "answer", "pages": ["config.md"], "evidence": ["The default is 30 days"]},
    {"id": "h-2", "question": "How long should I roast a whole chicken in the oven?", "type": "off-topic",
     "expected": "abstain"},
]  # fmt: skip


def test_the_study_calls_a_cooking_question_off_topic_and_keeps_the_docs_question(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    golden = tmp_path / "harbor.jsonl"
    golden.write_text("".join(json.dumps({"lang": "en", **q}) + "\n" for q in QUESTIONS))
    out = tmp_path / "topic.json"
    assert main(["--set", str(docs), str(golden), "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    rows = {r["id"]: r for r in record["sets"][0]["questions"]}
    assert rows["h-1"]["off_topic"] is False and rows["h-1"]["margin"] > 0
    assert rows["h-2"]["off_topic"] is True and rows["h-2"]["to_reference"] > rows["h-2"]["to_docs"]
    assert rows["h-2"]["coverage_declines"] is True  # "roast", "chicken", "oven" are in no chunk
    assert record["summary"]["off-topic/abstain"] == {"flagged": 1, "coverage": 1, "either": 1, "of": 1}
    assert record["summary"]["single-fact/answer"] == {"flagged": 0, "coverage": 0, "either": 0, "of": 1}


def test_short_queries_are_split_by_their_corpus(tmp_path: Path) -> None:
    short = tmp_path / "short.jsonl"
    lines = [{"id": f"s-{i}", "question": "q", "corpus": corpus} for i, corpus in enumerate(["b", "a", "b"])]
    short.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pairs = pairs_from_short([short], Path("corpora"), tmp_path / "sets")
    assert [(source, golden.name) for source, golden in pairs] == [
        ("corpora/a/docs", "a.jsonl"),
        ("corpora/b/docs", "b.jsonl"),
    ]
    assert [json.loads(line)["id"] for line in pairs[1][1].read_text().splitlines()] == ["s-0", "s-2"]
