"""`ragline eval answers` counts what became of a language model's replies: sentences withheld, replies the
extractive answer replaced, and the time to the first validated sentence (p50/p95), from the replies' own
fields (query_graph/nodes/reply.py)."""

from __future__ import annotations

from typing import Any

from evals.answers import AnswerRun, score_reply
from pipelines.golden_sets import GoldenQuestion


def _reply(status: str, first_ms: float | None, withheld: int = 0, fallback: str | None = None) -> dict[str, Any]:
    timings = {"total": 9000.0, **({"first_sentence": first_ms} if first_ms is not None else {})}
    return {
        "status": status,
        "answer": "Harbor keeps build logs for 14 days." if status == "answered" else "",
        "citations": [],
        "retrieved": [],  # nothing for the scorer to read from an index
        "verification": {"mode": "strict", "withheld_sentences": withheld},
        "fallback": {"generator": "extractive", "reason": fallback} if fallback else None,
        "timings_ms": timings,
    }


def test_withheld_fallbacks_and_time_to_first_sentence_are_reported() -> None:
    question = GoldenQuestion("q-1", "How long are build logs kept?", facts=["14 days"])
    replies = [
        _reply("answered", 1000.0),
        _reply("answered", 3000.0, withheld=2),
        _reply("answered", 5000.0, fallback="the model's reply is not the JSON asked for"),
        _reply("no_answer", None),
    ]
    run = AnswerRun([score_reply(question, r, None) for r in replies])  # type: ignore[arg-type]
    overall = run.overall()
    assert overall["withheld_sentences"] == 2 and overall["replies_with_withheld"] == 1
    assert overall["fallbacks"] == 1
    assert overall["first_sentence_ms"] == {"n": 3, "p50": 3000.0, "p95": 4800.0}
    rows = run.per_question()
    assert rows[2]["fallback"].startswith("the model's reply") and rows[1]["withheld_sentences"] == 2
    assert rows[3]["first_sentence_ms"] is None


def test_each_answer_says_why_it_took_its_kind() -> None:
    """A `no_answer` says whether the coverage rule or CRAG decided it; a covered reply records no finding."""
    question = GoldenQuestion("q-2", "How do I restart the Zorblax worker?", expected="abstain")
    declined = {
        **_reply("no_answer", None),
        "crag": {"action": "generate"},
        "coverage": {"covered": False, "rule": "names", "uncovered_names": ["Zorblax"], "absent_terms": ["zorblax"]},
    }
    answered = {**_reply("answered", 800.0), "crag": {"action": "refine"}, "coverage": {"covered": True}}
    rows = AnswerRun([score_reply(question, r, None) for r in (declined, answered)]).per_question()  # type: ignore[arg-type]
    assert rows[0]["crag_action"] == "generate"
    assert rows[0]["uncovered"] == {"rule": "names", "uncovered_names": ["Zorblax"], "absent_terms": ["zorblax"]}
    assert rows[1]["crag_action"] == "refine" and rows[1]["uncovered"] is None
