"""`eval sentences`: the extractive sentence rankers on XQuAD, run on the real data and the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.studies.sentence_ranking import answerers, evaluate_sentence_rankers, load_questions, paired
from pipelines.retrieval.rerank import CrossEncoderReranker

XQUAD = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "xquad"


def test_questions_carry_their_articles_paragraphs_as_passages() -> None:
    questions = load_questions(XQUAD, "en")
    assert len(questions) == 1190
    first = questions[0]
    assert len(first.passages) == 5 and any(first.answers[0] in p.text for p in first.passages)
    with pytest.raises(ValueError, match=r"xquad\.xx\.json"):
        load_questions(XQUAD, "xx")


def test_report_compares_each_ranker_with_lexical_on_the_same_questions() -> None:
    questions = load_questions(XQUAD, "en", limit=40)
    reranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8")
    report = evaluate_sentence_rankers(questions, answerers({"lexical": None, "cross_encoder": reranker.scores}))
    assert report["n"] == 40 and set(report["rankers"]) == {"lexical", "cross_encoder"}
    lexical, ranked = report["rankers"]["lexical"], report["rankers"]["cross_encoder"]
    # Coverage decides what qualifies, so both rankers leave the same questions unanswered.
    assert lexical["empty"] == ranked["empty"] < 0.1
    assert 0.5 < lexical["contains_answer"] <= 1 and 0.5 < ranked["contains_answer"] <= 1
    compared = {c["metric"]: c for c in report["comparisons"]}
    assert set(compared) == {"contains_answer", "sentences"}
    c = compared["contains_answer"]
    assert c["diff"] == pytest.approx(ranked["contains_answer"] - lexical["contains_answer"], abs=1e-3)
    assert c["ci95"][0] <= c["diff"] <= c["ci95"][1] and 0 < c["p_value"] <= 1


def test_paired_questions_ask_two_things_and_need_both_answers() -> None:
    assert paired("What is X?", "Who did Y?") == "What is X, and who did Y?"
    assert paired("What is X?", "In which year did Y happen?") is None  # not a wh-start: one ask to the splitter
    questions = load_questions(XQUAD, "en", pairs=True)
    assert 350 < len(questions) < 595 and all(len(q.answers) == 2 for q in questions)
    report = evaluate_sentence_rankers(questions[:60], answerers({"lexical": None}, one_ask=True))
    assert set(report["rankers"]) == {"lexical", "lexical_one_ask"}
    # Scored as one, a two-ask question's answer holds both spans less often than with a sentence per ask.
    assert report["rankers"]["lexical"]["contains_answer"] > report["rankers"]["lexical_one_ask"]["contains_answer"]
